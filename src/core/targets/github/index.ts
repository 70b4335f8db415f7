export { GithubTarget, type GithubTargetOptions, type GithubTargetSettings } from './github-target.js'
export { GITHUB_ACTIONS, MERGE_METHODS, TRAILER_KEY, type GithubAction, type GithubActionName, type MergeMethod } from './actions.js'
