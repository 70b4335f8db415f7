export { SendgridMailTarget, SENDGRID_API, type SendgridTargetSettings } from './sendgrid-target.js'
export { parseMail, mailBody, recipients, SEND_ACTION, EFFECT_ARG, type Mail, type Address } from './mail-args.js'
