/** The headers that carry an effect's id and attempt number to a notarized service (docs/notary.md, "The attempt"). */
export const EFFECT_HEADER = 'interlock-effect'
export const ATTEMPT_HEADER = 'interlock-attempt'
/** On an answer the service replays from its `performed` record instead of performing again. */
export const REPLAYED_HEADER = 'interlock-replayed'
