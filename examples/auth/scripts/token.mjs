#!/usr/bin/env node
/**
 * Mints a test token for examples/auth (RS256, the key the JWKS side service publishes):
 *
 *   node examples/auth/scripts/token.mjs --sub alice --roles admin,editor [--expires 1h] [--name Alice]
 *
 * Prints the compact JWT. `--expires` is a jose time span (`30s`, `15m`, `2h`); default 1h.
 */
import { SignJWT } from 'jose'
import { AUDIENCE, ISSUER, loadKey } from '../keys.mjs'

const args = process.argv.slice(2)
const arg = (name, fallback) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback
}
const { privateKey, kid } = await loadKey()
const roles = arg('roles', '').split(',').filter(Boolean)
const name = arg('name')
const token = await new SignJWT({ roles, ...(name ? { name } : {}) })
  .setProtectedHeader({ alg: 'RS256', kid })
  .setSubject(arg('sub', 'alice'))
  .setIssuer(ISSUER)
  .setAudience(AUDIENCE)
  .setIssuedAt()
  .setExpirationTime(arg('expires', '1h'))
  .sign(privateKey)
console.log(token)
