export { S3Target, type S3TargetOptions, type S3TargetSettings } from './s3-target.js'
export { S3_ACTIONS, EFFECT_METADATA, type S3Action, type S3ActionName } from './actions.js'
export { objectUrl, type S3Location } from './address.js'
