/** Types of keys.mjs (the example's signing key). */
export declare function loadKey(): Promise<{ privateKey: CryptoKey; publicJwk: Record<string, unknown>; kid: string }>
/** Issuer of the example's tokens. */
export declare const ISSUER: string
/** Audience of the example's tokens. */
export declare const AUDIENCE: string
