/**
 * The example's signing key: an RS256 key pair kept in `examples/auth/.keys/` (git-ignored), made on
 * first use. The JWKS side service publishes its public half; `scripts/token.mjs` signs with it.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { exportJWK, generateKeyPair, importJWK } from 'jose'

const dir = new URL('./.keys/', import.meta.url)
const file = new URL('./private.jwk.json', dir)

/** @returns {Promise<{ privateKey: CryptoKey, publicJwk: Record<string, unknown>, kid: string }>} */
export async function loadKey() {
  let jwk
  try {
    jwk = JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true })
    jwk = { ...(await exportJWK(privateKey)), kid: `example-${Date.now().toString(36)}`, alg: 'RS256' }
    mkdirSync(dir, { recursive: true })
    try {
      writeFileSync(file, JSON.stringify(jwk), { flag: 'wx', mode: 0o600 })
    } catch {
      jwk = JSON.parse(readFileSync(file, 'utf8')) // another process made it first
    }
  }
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = jwk
  return { privateKey: await importJWK(jwk, 'RS256'), publicJwk: { ...publicJwk, use: 'sig' }, kid: jwk.kid }
}

/** Issuer and audience of the example's tokens (examples/auth/config.ts checks them). */
export const ISSUER = 'http://127.0.0.1:4002'
export const AUDIENCE = 'tributary-example'
