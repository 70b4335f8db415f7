/**
 * How interlock.toml's schema is compiled: at start-up from source
 * (validate.ts), and ahead of time by the build (scripts/copy-assets.mjs),
 * which must compile it alike.
 */
import type { KeywordDefinition, Options } from 'ajv'

// verbose: the problem wording needs the failing schema (allowed keys, pattern messages).
export const AJV_OPTIONS: Options = { allErrors: true, verbose: true, strict: true, strictTypes: false, strictRequired: false }

export const CUSTOM_KEYWORDS: KeywordDefinition[] = [{ keyword: 'patternErrorMessage', schemaType: 'string' }]
