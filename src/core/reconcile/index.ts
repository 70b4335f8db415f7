export { reconcileEffects, type ReconcileOptions, type ReconcileResult, type ReconcileStatus } from './reconcile.js'
export { tryReconcileLock, type ReconcileLock } from './lock.js'
