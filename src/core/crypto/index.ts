/** Keys, statements and signatures: see keys.ts, statements.ts, sign.ts, digest.ts, record-signature.ts. */
export * from './keys.js'
export * from './statements.js'
export { signStatement, verifyStatement, verifySigned, statementBytes, newNonce } from './sign.js'
export { effectDigest } from './digest.js'
export { toBase64Url, fromBase64Url } from './encoding.js'
export { recordSigner, recordSignatureOf, recordDataDigest, RECORD_SIGNATURE, type RecordSigner, type RecordSignature } from './record-signature.js'
