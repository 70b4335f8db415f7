export { HttpTarget, type HttpTargetOptions, type HttpTargetSettings, type HttpAnswer } from './http-target.js'
export { faultFromError, faultFromStatus, parseRetryAfter } from './faults.js'
export { expandUrl } from './template.js'
export { HttpClient, type HttpClientOptions, type HttpClientSettings } from './client.js'
