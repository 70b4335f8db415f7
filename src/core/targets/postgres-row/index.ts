export { PostgresRowTarget, type PostgresRowTargetOptions } from './postgres-row-target.js'
export { compileSettings, EFFECT_ID_PARAM, type PostgresRowTargetSettings, type RowPlan } from './settings.js'
export { ROW_ACTIONS, type RowAction } from './args.js'
export { faultOf, sqlStateOf, type Phase } from './faults.js'
