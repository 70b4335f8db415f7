export { StripeRefundTarget, STRIPE_API, type StripeTargetSettings } from './stripe-target.js'
export { toMinorUnits, fromMinorUnits, currencyRule, ZERO_DECIMAL, THREE_DECIMAL } from './money.js'
export { parseRefund, REFUND_ACTION, type Refund } from './refund-args.js'
export { CHARGE_FIELDS, type Charge } from './charge-premises.js'
