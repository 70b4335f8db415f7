/**
 * Targets from config: one constructor per `type`, each result checked by
 * assertTarget (a tier the target cannot honour is refused here, at start-up,
 * not at the first crash). Repository paths arrive absolute from the loader.
 *
 * Settings that came from interlock.toml carry their file's secrets and
 * policy rules (config/origin.ts); each target made from them is marked with
 * both (targets/origin.ts), so a Gate built around it scrubs those secrets
 * from the journal and refuses to run without those rules.
 */
import { originOf } from '../config/origin.js'
import type { TargetConfig } from '../config/types.js'
import { unsetVariablesError, type UnsetReference } from '../config/unset-variables.js'
import { ConfigError, InputError } from '../errors.js'
import { GithubTarget } from './github/github-target.js'
import { HttpTarget, type HttpTargetOptions } from './http/http-target.js'
import { PostgresRowTarget } from './postgres-row/postgres-row-target.js'
import { RepoTarget, type RepoTargetOptions } from './repo/repo-target.js'
import { S3Target } from './s3/s3-target.js'
import { SendgridMailTarget } from './sendgrid/sendgrid-target.js'
import { SlackMessageTarget } from './slack/slack-target.js'
import { StripeRefundTarget } from './stripe/stripe-target.js'
import { McpTarget } from './mcp/mcp-target.js'
import { notarizeFromConfig, type NotaryTargetOptions } from '../notary/config-target.js'
import { createModuleTarget } from './module/module-target.js'
import { WebhookTarget } from './webhook/webhook-target.js'
import { markTarget } from './origin.js'
import { assertTarget, type EffectTarget } from './target.js'

export interface TargetOptions {
  http?: HttpTargetOptions
  repo?: RepoTargetOptions
  /** Resolved `${ENV}` values (config `secrets`), kept out of errors and receipts. */
  secrets?: readonly string[]
  /** For targets with `notary = "..."`: the agent's key and the file's [notary.services]. */
  notary?: NotaryTargetOptions
}

/** Every `type` a [targets.<name>] table may have. */
export const TARGET_TYPES = ['repo', 'http', 'postgres_row', 'stripe', 'sendgrid', 'slack', 'github', 's3', 'mcp'] as const

export function createTarget(name: string, config: TargetConfig, given: TargetOptions = {}): EffectTarget {
  assertResolved({ [name]: config })
  // Settings read from interlock.toml bring their file's secrets along: a caller cannot forget them.
  const origin = originOf(config)
  const secrets = [...new Set([...(origin?.secrets ?? []), ...(given.secrets ?? [])])]
  const opts: TargetOptions = { ...given, secrets }
  let target: EffectTarget
  switch (config.type) {
    case 'repo':
      target = new RepoTarget(name, { path: config.path, branch: config.branch, author: config.author }, opts.repo)
      break
    case 'http':
      target = new HttpTarget(name, config, { ...opts.http, secrets: [...(opts.http?.secrets ?? []), ...(opts.secrets ?? [])] })
      if (config.notary) target = notarizeFromConfig(name, config, target, { ...opts.notary, secrets: opts.secrets })
      break
    case 'postgres_row':
      // Synchronous on purpose: the table is checked at first use (postgres-row/readiness.ts), not here.
      target = new PostgresRowTarget(name, config, { secrets: opts.secrets })
      break
    case 'stripe':
      target = new StripeRefundTarget(name, config, { secrets: opts.secrets })
      break
    case 'sendgrid':
      target = new SendgridMailTarget(name, config, { secrets: opts.secrets })
      break
    case 'slack':
      target = new SlackMessageTarget(name, config, { secrets: opts.secrets })
      break
    case 'github':
      target = new GithubTarget(name, config, { secrets: opts.secrets })
      break
    case 's3':
      target = new S3Target(name, config, { secrets: opts.secrets })
      break
    case 'mcp':
      // No session is opened here: the first call, probe or proxy opens one.
      target = new McpTarget(name, config, { secrets: opts.secrets })
      break
    case 'webhook':
      target = new WebhookTarget(name, config, { secrets: opts.secrets })
      break
    case 'module':
      target = createModuleTarget(name, config, secrets)
      break
    default:
      throw new InputError(`target ${name}: unknown type ${JSON.stringify((config as { type?: unknown }).type)}; expected one of ${[...TARGET_TYPES, 'webhook', 'module'].join(', ')}`)
  }
  assertTarget(target)
  markTarget(target, { file: origin?.file, secrets, rules: origin?.rules ?? [] })
  return target
}

/** All targets, by name; if one is refused, those already made are closed before the error is thrown. */
export function createTargets(configs: Record<string, TargetConfig>, opts: TargetOptions = {}): Map<string, EffectTarget> {
  assertResolved(configs)
  const targets = new Map<string, EffectTarget>()
  try {
    for (const [name, config] of Object.entries(configs)) targets.set(name, createTarget(name, config, opts))
  } catch (e) {
    for (const t of targets.values()) void t.close?.()
    throw e
  }
  return targets
}

/**
 * A target whose `${VAR}` is not set is not made (config/load.ts leaves it
 * as written so that commands reading only the store run without it): one
 * error naming every such reference, before any target is made.
 */
function assertResolved(configs: Record<string, TargetConfig>): void {
  const unset: UnsetReference[] = []
  for (const [name, config] of Object.entries(configs)) {
    for (const problem of originOf(config)?.unresolved ?? []) {
      const variable = /environment variable (\S+) is not set/.exec(problem)?.[1] ?? '?'
      unset.push({ name: variable, problem, target: name, section: 'targets' })
    }
  }
  if (unset.length > 0) throw unsetVariablesError(unset)
}
