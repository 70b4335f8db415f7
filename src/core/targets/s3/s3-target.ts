/**
 * An S3 bucket (or any S3-compatible store) as a tier-2 effect target.
 *
 * Actions (actions.ts): `put` an object, `delete` one, `restore` an earlier
 * version. Requests are SigV4-signed (aws4fetch) with the configured keys;
 * each write carries the effect id in the object's metadata, which HeadObject
 * reads back after a crash (writes.ts). The premises are the object as the
 * agent saw it (premises.ts), pushed down to S3 as If-Match / If-None-Match,
 * on deletes too. Query (find.ts) says when it cannot know rather than send
 * a write again over another writer's.
 *
 * The compensation of a write puts the object back as the premises recorded
 * it: delete what did not exist, restore the version or the kept bytes of
 * what did. The secret key never leaves this process; the access key id and
 * session token are scrubbed from anything S3 answers.
 */
import type { JsonObject } from '../../canonical-json.js'
import type { Effect, Premises, Receipt } from '../../effect.js'
import { ConfigError, DispatchFault, InputError, isInterlockError } from '../../errors.js'
import type { ApplyContext, Compensation, EffectTarget, ProbeResult } from '../target.js'
import { parseS3Action, type S3Action } from './actions.js'
import { locationProblems } from './address.js'
import { S3Client, type S3ClientOptions } from './client.js'
import { probeS3 } from './probe.js'
import { captureObject, describe, KEEP_PREVIOUS_LIMIT, validateObject } from './premises.js'
import { findEffect } from './find.js'
import { applyDelete, applyPut, applyRestore } from './writes.js'

export interface S3TargetSettings {
  bucket: string
  region: string
  accessKeyId: string
  secretAccessKey: string
  /** For temporary (STS) credentials. */
  sessionToken?: string
  /** An origin for S3-compatible stores and tests; default https://s3.<region>.amazonaws.com. */
  endpoint?: string
  /** Address the bucket in the path instead of the host name (default false). */
  pathStyle?: boolean
  /** Total time for one request (default 10000). */
  timeoutMs?: number
  /** Time to connect (default 3000). */
  connectTimeoutMs?: number
}

export type S3TargetOptions = S3ClientOptions

export class S3Target implements EffectTarget {
  readonly tier = 2 as const
  private readonly client: S3Client
  private readonly now: () => number

  constructor(
    readonly name: string,
    settings: S3TargetSettings,
    options: S3TargetOptions = {},
  ) {
    const s = { pathStyle: false, timeoutMs: 10_000, connectTimeoutMs: 3_000, ...settings }
    checkSettings(name, s)
    this.now = options.now ?? Date.now
    this.client = new S3Client(
      name,
      { bucket: s.bucket, region: s.region, endpoint: s.endpoint, pathStyle: s.pathStyle },
      { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey, sessionToken: s.sessionToken },
      { timeoutMs: s.timeoutMs, connectTimeoutMs: s.connectTimeoutMs },
      options,
    )
  }

  validateArgs(action: string, args: JsonObject): void {
    parseS3Action(action, args)
  }

  async capture(action: string, args: JsonObject): Promise<Premises> {
    return captureObject(this.client, parseS3Action(action, args).key)
  }

  async validatePremises(effect: Effect): Promise<string[]> {
    const a = this.parsed(effect)
    // Bad arguments are not a changed world: apply refuses them by name, before anything is sent.
    if (!a) return []
    return validateObject(this.client, a.key, effect.premises)
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    let a: S3Action
    try {
      a = parseS3Action(effect.action, effect.args)
    } catch (e) {
      throw new DispatchFault('refused', `target ${this.name}: ${(e as Error).message}; nothing was sent`, { cause: e })
    }
    const now = this.now()
    if (a.action === 'put') return applyPut(this.client, effect, a, now, ctx)
    if (a.action === 'restore') return applyRestore(this.client, effect, a, now, ctx)
    return applyDelete(this.client, effect, a.key, now, ctx)
  }

  async query(effect: Effect): Promise<Receipt | null> {
    return findEffect(this.client, effect, parseS3Action(effect.action, effect.args))
  }

  /** Puts the object back as the effect's premises recorded it, conditioned on it still being as the effect left it. */
  compensation(effect: Effect, receipt: Receipt): Compensation {
    const a = parseS3Action(effect.action, effect.args)
    const p = effect.premises
    const where = describe(this.client, a.key)
    const after: Premises = receipt.deleted === true ? { exists: false } : { exists: true, etag: String(receipt.etag) }
    if (p.exists === false) {
      if (a.action === 'delete') throw new InputError(`target ${this.name}: there was no object at ${where} to delete, so there is nothing to undo`)
      return { action: 'delete', args: { key: a.key }, premises: after }
    }
    if (p.exists === true && typeof p.version_id === 'string') return { action: 'restore', args: { key: a.key, version_id: p.version_id }, premises: after }
    const prev = p.previous
    if (p.exists === true && prev !== null && typeof prev === 'object' && !Array.isArray(prev) && typeof prev.body_base64 === 'string') {
      const args: JsonObject = { key: a.key, body: prev.body_base64, encoding: 'base64', metadata: prev.metadata ?? {} }
      if (typeof prev.content_type === 'string') args.content_type = prev.content_type
      return { action: 'put', args, premises: after }
    }
    if (p.exists === true) {
      throw new InputError(`target ${this.name}: the object ${where} replaced cannot be put back: it was not versioned and larger than ${KEEP_PREVIOUS_LIMIT} bytes, so its bytes were not kept`, {
        hint: 'Turn on versioning for the bucket to make every write undoable.',
      })
    }
    throw new InputError(`target ${this.name}: effect ${effect.id} recorded nothing about ${where} before it (no premises), so there is nothing to restore`, {
      hint: 'Capture the premises (gate.capture) before a write that may need undoing.',
    })
  }

  /** `interlock check`: HeadBucket, read-only (probe.ts). */
  probe(signal?: AbortSignal): Promise<ProbeResult> {
    return probeS3(this.client, signal)
  }

  async close(): Promise<void> {
    await this.client.close()
  }

  private parsed(effect: Effect): S3Action | null {
    try {
      return parseS3Action(effect.action, effect.args)
    } catch (e) {
      if (isInterlockError(e)) return null
      throw e
    }
  }
}

function checkSettings(name: string, s: S3TargetSettings & { pathStyle: boolean; timeoutMs: number; connectTimeoutMs: number }): void {
  const key = `targets.${name}`
  const problems = locationProblems(key, s)
  for (const [field, v] of [['access_key_id', s.accessKeyId], ['secret_access_key', s.secretAccessKey]] as const) {
    if (typeof v !== 'string' || v.trim() === '') problems.push(`${key}.${field}: required`)
  }
  for (const [field, v] of [['timeout_ms', s.timeoutMs], ['connect_timeout_ms', s.connectTimeoutMs]] as const) {
    if (!Number.isInteger(v) || v <= 0) problems.push(`${key}.${field}: must be a positive whole number of milliseconds`)
  }
  if (problems.length > 0) {
    throw new ConfigError(`target ${name} is misconfigured: ${problems.join('; ')}`, problems, { hint: 'Fix the [targets] section of interlock.toml.' })
  }
}
