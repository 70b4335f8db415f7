export { reconcileEffects, LATER_WITHIN_MS, type ReconcileOptions, type ReconcileResult, type ReconcileStatus } from './reconcile.js'
export { laterOutcomes, type LaterFailure, type LaterOutcomes } from './later-outcomes.js'
export { tryReconcileLock, type ReconcileLock } from './lock.js'
