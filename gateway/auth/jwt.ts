/**
 * JWT verification for `auth.jwt` (README "Authentication"), on `jose`: RFC 7519 tokens signed with
 * a shared secret (HS256/384/512) or with keys of a JSON Web Key Set (RFC 7517) fetched from
 * `jwksUrl` (RS*, PS*, ES*, EdDSA). jose's remote key set caches the keys and fetches them again when
 * a token names an unknown `kid` (at most once per `jwksCooldownMs`). `alg: none` is never accepted.
 *
 * The verified identity reaches resolvers as `context.auth` ({@link AuthInfo}, or null for an
 * anonymous request) on `/graphql`, `/operations/*`, Server-Sent Events and WebSocket operations.
 */
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import type { IncomingHttpHeaders } from 'node:http'
import type { AuthConfig } from './config.js'
import { AuthInvalidError, UpstreamUnavailableError } from '../errors.js'

/**
 * A claim's value: `name` as a key, else as a dotted path into nested objects.
 * @returns undefined when missing.
 */
export function claimValue(claims: Readonly<Record<string, unknown>>, name: string): unknown {
  if (Object.hasOwn(claims, name)) return claims[name]
  if (!name.includes('.')) return undefined
  let value: unknown = claims
  for (const part of name.split('.')) {
    value = value && typeof value === 'object' && Object.hasOwn(value, part) ? (value as Record<string, unknown>)[part] : undefined
  }
  return value
}

/**
 * The verified identity of a request: `context.auth` in every resolver, null when no token came.
 * - `claims`: the token's payload (RFC 7519 §4), e.g. `{ sub, iss, aud, exp, roles }`;
 * - `roles`: the roles read from `auth.jwt.rolesClaim` (always a list of strings, maybe empty);
 * - `token`: the raw compact JWT, for connectors that forward it (`''` for a login session);
 * - `via`: `cookie` for the `auth.oidc` session cookie (its mutations need the CSRF token), else
 *   absent (a token);
 * - `session`: the login session's id (`jti`), for the CSRF token and logout.
 */
export interface AuthInfo {
  readonly claims: Readonly<JWTPayload & Record<string, unknown>>
  readonly roles: readonly string[]
  readonly token: string
  readonly via?: 'cookie'
  readonly session?: string
  /**
   * A cookie user's access token from the identity provider, kept in the session when the provider
   * has `keepAccessToken` (absent otherwise, and once it has expired); REST sources send it for OAuth2
   * schemes configured `{ fromCaller: true }`. Never logged, never in `/auth/user`.
   */
  readonly accessToken?: SessionAccessToken
}

/** The identity provider's access token kept in a session (`keepAccessToken`). */
export interface SessionAccessToken {
  /** The token, as the provider issued it. */
  readonly token: string
  /** When it expires, in seconds since the epoch; undefined when the provider gave no `expires_in` (it then lasts as long as the session). */
  readonly exp?: number
}

/** Verifies the tokens of requests for one `auth.jwt` config. */
export interface JwtVerifier {
  /**
   * The token of a request: `Authorization: Bearer <token>` (scheme case-insensitive, RFC 6750 §2.1),
   * else the cookie `auth.jwt.cookie`; undefined when there is none. Another `Authorization` scheme
   * (Basic…) is not a token of ours and is ignored.
   */
  tokenOf(headers: IncomingHttpHeaders): string | undefined
  /**
   * Verifies a compact JWT.
   * @returns the identity (claims, roles, token).
   * @throws AuthInvalidError (401 `TRB_ERR_AUTH_INVALID`) for a malformed, unsigned, badly signed,
   *   expired or not yet valid token, a wrong issuer or audience, or a key the key set does not hold;
   *   UpstreamUnavailableError (503) when the key set cannot be fetched.
   */
  verify(token: string): Promise<AuthInfo>
  /** `verify(tokenOf(headers))`, or null when the request carries no token. Same errors as {@link verify}. */
  authenticate(headers: IncomingHttpHeaders): Promise<AuthInfo | null>
  /**
   * The synchronous answer of {@link authenticate} when there is one without verifying: null when the
   * request carries no token, the identity when its token was verified recently (the cache); undefined
   * when the token must be verified (call `authenticate`). Never throws.
   */
  known(headers: IncomingHttpHeaders): AuthInfo | null | undefined
}

const HMAC = ['HS256', 'HS384', 'HS512']
const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']

/** Most verified tokens remembered (see {@link createJwtVerifier}). */
export const VERIFIED_TOKEN_CACHE_SIZE = 10_000
/** Longest a verified token is remembered, in milliseconds (never past its `exp`). */
export const VERIFIED_TOKEN_CACHE_MS = 60_000

/**
 * Reads the roles from a claim: a list of strings, or a string of roles separated by spaces or
 * commas. `name` is tried as a key first, then as a dotted path (`realm_access.roles`), as {@link claimValue} does.
 * @returns the roles; [] when the claim is missing or of another type.
 */
export function rolesOf(claims: Readonly<Record<string, unknown>>, name: string): string[] {
  const value = claimValue(claims, name)
  if (Array.isArray(value)) return value.filter((r): r is string => typeof r === 'string')
  if (typeof value === 'string') return value.split(/[\s,]+/).filter(Boolean)
  return []
}

/** The value of one cookie in a `Cookie` header (RFC 6265 §5.4), or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue
    let value = part.slice(eq + 1).trim()
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1)
    return value || undefined
  }
  return undefined
}

/** A short, safe reason for a jose failure (no token content). */
function reasonOf(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'the token has expired'
  if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'exp' && err.reason === 'missing') return 'the token has no "exp" claim, so it would never expire (auth.jwt.requireExp)'
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `the "${err.claim}" claim is not accepted`
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'no key of the key set matches the token'
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'the signing algorithm is not accepted'
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'the signature does not verify'
  if (err instanceof joseErrors.JWTInvalid || err instanceof joseErrors.JWSInvalid) return 'the token is malformed'
  return 'the token cannot be verified'
}

/**
 * Creates the verifier of an `auth.jwt` config. Verified tokens are remembered (at most
 * {@link VERIFIED_TOKEN_CACHE_SIZE}, each for at most {@link VERIFIED_TOKEN_CACHE_MS} and never past
 * its `exp`), so a client repeating its token costs one map lookup; the cache is keyed by the whole
 * token text, so a changed byte is a new, unverified token.
 */
export function createJwtVerifier(jwt: NonNullable<AuthConfig['jwt']>): JwtVerifier {
  const key: Uint8Array | JWTVerifyGetKey = jwt.secret !== undefined
    ? new TextEncoder().encode(jwt.secret)
    : createRemoteJWKSet(new URL(jwt.jwksUrl!), {
        cacheMaxAge: jwt.jwksCacheMaxAgeMs,
        cooldownDuration: jwt.jwksCooldownMs,
        timeoutDuration: jwt.jwksTimeoutMs,
      })
  const options = {
    algorithms: jwt.secret !== undefined ? HMAC : ASYMMETRIC,
    ...(jwt.issuer !== undefined ? { issuer: jwt.issuer } : {}),
    ...(jwt.audience !== undefined ? { audience: jwt.audience } : {}),
    clockTolerance: jwt.clockToleranceSec,
    // A token without `exp` would be valid forever: refused unless requireExp is false.
    ...(jwt.requireExp ? { requiredClaims: ['exp'] } : {}),
  }
  const verified = new Map<string, { info: AuthInfo; until: number }>()

  const verifier: JwtVerifier = {
    tokenOf(headers) {
      const header = headers.authorization
      if (header !== undefined && header.length > 7 && header.slice(0, 7).toLowerCase() === 'bearer ') return header.slice(7).trim()
      if (jwt.cookie !== undefined) return cookieValue(headers.cookie, jwt.cookie)
      return undefined
    },

    async verify(token) {
      const now = Date.now()
      const hit = verified.get(token)
      if (hit) {
        if (hit.until > now) return hit.info
        verified.delete(token)
      }
      if (token.length > jwt.maxTokenLength) throw new AuthInvalidError(`the token is longer than ${jwt.maxTokenLength} characters`)
      let payload: JWTPayload
      try {
        ;({ payload } = typeof key === 'function' ? await jwtVerify(token, key, options) : await jwtVerify(token, key, options))
      } catch (err) {
        const keySetFailed = err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid || !(err instanceof joseErrors.JOSEError)
        if (keySetFailed && typeof key === 'function') {
          throw new UpstreamUnavailableError('JWKS', 'the signing keys could not be fetched', { cause: err })
        }
        throw new AuthInvalidError(reasonOf(err))
      }
      const claims = Object.freeze(payload) as AuthInfo['claims']
      const info: AuthInfo = Object.freeze({ claims, roles: Object.freeze(rolesOf(claims, jwt.rolesClaim)), token })
      const until = Math.min(now + VERIFIED_TOKEN_CACHE_MS, typeof payload.exp === 'number' ? payload.exp * 1000 : Infinity)
      if (verified.size >= VERIFIED_TOKEN_CACHE_SIZE) verified.delete(verified.keys().next().value as string)
      verified.set(token, { info, until })
      return info
    },

    known(headers) {
      const token = verifier.tokenOf(headers)
      if (token === undefined || token === '') return null
      const hit = verified.get(token)
      return hit && hit.until > Date.now() ? hit.info : undefined
    },

    async authenticate(headers) {
      const token = verifier.tokenOf(headers)
      if (token === undefined || token === '') return null
      return verifier.verify(token)
    },
  }
  return verifier
}
