export { SlackMessageTarget, SLACK_API, type SlackTargetSettings } from './slack-target.js'
export { parseSlack, postBody, POST_ACTION, DELETE_ACTION, METADATA_EVENT, type SlackCall } from './message-args.js'
export { slackAnswer } from './answers.js'
