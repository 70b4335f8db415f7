/** The actions each target type knows, from each target's own argument parser; null: any action (http). */
import type { TargetConfig } from '../config/types.js'
import { GITHUB_ACTIONS } from '../targets/github/actions.js'
import { ROW_ACTIONS } from '../targets/postgres-row/args.js'
import { REPO_ACTIONS } from '../targets/repo/actions.js'
import { S3_ACTIONS } from '../targets/s3/actions.js'
import { SEND_ACTION } from '../targets/sendgrid/mail-args.js'
import { DELETE_ACTION, POST_ACTION } from '../targets/slack/message-args.js'
import { REFUND_ACTION } from '../targets/stripe/refund-args.js'

export function actionsOf(type: TargetConfig['type']): readonly string[] | null {
  switch (type) {
    case 'stripe':
      return [REFUND_ACTION]
    case 'sendgrid':
      return [SEND_ACTION]
    case 'slack':
      return [POST_ACTION, DELETE_ACTION]
    case 'github':
      return GITHUB_ACTIONS
    case 's3':
      return S3_ACTIONS
    case 'repo':
      return REPO_ACTIONS
    case 'postgres_row':
      return ROW_ACTIONS
    case 'http':
      // The action is the service's business: it is substituted into the URL and sent in the body.
      return null
    case 'mcp':
      // The actions are the server's tools, known only by asking it (the probe lists them).
      return null
    case 'webhook':
      // The action is the receiver's business: the args are the body.
      return null
    case 'module':
      // Your own code decides which actions it takes (validateArgs refuses the others at submit).
      return null
  }
}
