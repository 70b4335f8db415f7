/** base64url without padding: the text form of keys and signatures. */
export function toBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64url')
}

/** Undefined when the text is not canonical base64url (so two texts never decode to one value). */
export function fromBase64Url(text: string): Uint8Array | undefined {
  if (typeof text !== 'string' || !/^[A-Za-z0-9_-]*$/.test(text)) return undefined
  const bytes = new Uint8Array(Buffer.from(text, 'base64url'))
  return toBase64Url(bytes) === text ? bytes : undefined
}
