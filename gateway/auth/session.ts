/**
 * The login session of `auth.oidc` (README "Cookie login with OpenID Connect"): an encrypted,
 * http-only cookie that carries the user's claims, and the short-lived state cookie of a login in
 * progress. Both are JWTs encrypted with JWE (RFC 7516) `dir` + `A256GCM` under a key that is the
 * SHA-256 of a configured secret (`auth.oidc.cookie.secrets`; the first encrypts, all decrypt), so a
 * browser can neither read nor change them, and their `exp` bounds their life. A `typ` claim keeps a
 * state cookie from being used as a session and the reverse.
 *
 * The session is stateless (nothing is stored on the server) except for the list of sessions logged
 * out before their `exp` (gateway/auth/revocations.ts): in this process's memory by default (at most
 * `auth.oidc.maxRevokedSessions`), shared by every instance through Redis once the app gives the codec
 * its deployment's list ({@link SessionCodec.shareRevocations}).
 *
 * This module uses `jose` only; the OpenID Connect client (`openid-client`) is loaded by the routes
 * (gateway/http/oidc.ts) when `auth.oidc` is configured.
 */
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { EncryptJWT, jwtDecrypt, errors as joseErrors, type JWTPayload } from 'jose'
import type { OidcConfig } from './config.js'
import { cookieValue, rolesOf, type AuthInfo, type JwtVerifier, type SessionAccessToken } from './jwt.js'
import { AuthInvalidError, CsrfError, UpstreamUnavailableError } from '../errors.js'
import { createRevocationList, type RevocationList } from './revocations.js'
/** Most opened session cookies remembered (so a repeated cookie is not decrypted again). */
const OPENED_CACHE_SIZE = 10_000
/** Longest an opened session cookie is remembered, in milliseconds. */
const OPENED_CACHE_MS = 60_000

/** What the state cookie of a login in progress holds. */
export interface LoginState {
  /** The provider's id. */
  readonly provider: string
  /** The `state` parameter sent to the provider (RFC 6749 §10.12). */
  readonly state: string
  /** The `nonce` the ID token must carry (OpenID Connect Core §3.1.2.1). */
  readonly nonce: string
  /** The PKCE code verifier (RFC 7636). */
  readonly verifier: string
  /** Where to send the browser after login (an allowed redirect URI), or null. */
  readonly redirect: string | null
  /** The callback URL sent to the provider (`redirect_uri` of the code exchange). */
  readonly callback: string
}

/** A `Set-Cookie` header value's parts. */
interface CookieOptions {
  maxAge: number
  sameSite: 'strict' | 'lax' | 'none'
  secure: boolean
  path: string
}

/** The session codec of one `auth.oidc` config (see the module comment). */
export interface SessionCodec {
  /** The session cookie's name (`auth.oidc.cookie.name`). */
  readonly cookieName: string
  /** The state cookie's name (`<name>_state`). */
  readonly stateCookieName: string
  /**
   * Encrypts a new session for the user's claims.
   * @returns the `Set-Cookie` header value, and the session's id (`jti`) and expiry (seconds since the epoch).
   */
  sealSession(claims: Readonly<Record<string, unknown>>, provider: string, accessToken?: SessionAccessToken): Promise<{ setCookie: string; id: string; exp: number }>
  /**
   * The identity of a session cookie's value.
   * @throws AuthInvalidError (401) when it is too long, does not decrypt (tampered, another key), is
   *   not a session, has expired or was logged out; UpstreamUnavailableError (503) when the shared
   *   revocation list (Redis) cannot tell whether it was logged out.
   */
  openSession(value: string): Promise<AuthInfo>
  /** The cached identity of a session cookie's value; undefined when it must be opened. */
  knownSession(value: string): AuthInfo | undefined
  /** Encrypts a login state. @returns the `Set-Cookie` header value. */
  sealState(state: LoginState): Promise<string>
  /**
   * The login state of a state cookie's value.
   * @throws AuthInvalidError (401) when it is too long, does not decrypt, is not a state or has expired.
   */
  openState(value: string): Promise<LoginState>
  /** The `Set-Cookie` header values that delete both cookies. */
  clearCookies(): string[]
  /**
   * Ends a session before its `exp` (logout): on every instance that shares the revocation list.
   * @throws what the list throws when Redis cannot store it (this process refuses the session anyway).
   */
  revoke(id: string, exp: number): Promise<void>
  /**
   * Makes `list` the revocation list this codec reads and writes (the app's, shared through Redis or
   * IPC; it outlives a development reload). The codec's own in-memory list is used until then.
   */
  shareRevocations(list: RevocationList): void
  /** The CSRF token of a session: HMAC-SHA-256 of its id under the first secret, base64url. */
  csrfToken(id: string): string
  /**
   * Checks the CSRF token of a mutation authenticated by a session cookie: the `X-CSRF-Token` header
   * of an HTTP request, or the `csrfToken` of a WebSocket's `connection_init` payload (`where`).
   * @param where what carries the token, in the error message. Default: `'header'`.
   * @throws CsrfError (403 `TRB_ERR_CSRF`) when it is missing, not a string or not the session's token.
   */
  checkCsrf(auth: AuthInfo, token: unknown, where?: 'header' | 'connection_init'): void
}

/** `name=value; Path; Max-Age; HttpOnly; SameSite; Secure` (RFC 6265 §4.1). The values here are base64url and dots only. */
function setCookie(name: string, value: string, o: CookieOptions): string {
  return `${name}=${value}; Path=${o.path}; Max-Age=${o.maxAge}; HttpOnly; SameSite=${o.sameSite[0].toUpperCase()}${o.sameSite.slice(1)}${o.secure ? '; Secure' : ''}`
}

/**
 * Creates the session codec of an `auth.oidc` config.
 */
export function createSessionCodec(oidc: OidcConfig): SessionCodec {
  const keys = oidc.cookie.secrets.map((s) => createHash('sha256').update(s, 'utf8').digest())
  const csrfKey = createHash('sha256').update('csrf\0', 'utf8').update(oidc.cookie.secrets[0], 'utf8').digest()
  const { name, secure, sameSite, maxAgeSeconds, stateMaxAgeSeconds } = oidc.cookie
  const stateName = `${name}_state`
  const opened = new Map<string, { info: AuthInfo; until: number }>()
  // A session revoked anywhere leaves the cache of opened cookies at once.
  const forget = (id: string): void => {
    for (const [value, hit] of opened) if (hit.info.session === id) opened.delete(value)
  }
  let revocations: RevocationList = createRevocationList({ max: oidc.maxRevokedSessions, relay: false })
  let stopForgetting = revocations.onRevoked(forget)

  async function seal(payload: JWTPayload, maxAge: number): Promise<string> {
    return new EncryptJWT(payload).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).setIssuedAt().setExpirationTime(`${maxAge}s`).encrypt(keys[0])
  }

  /** Decrypts with each key in turn; the claims, or a reason. */
  async function unseal(value: string, typ: string): Promise<JWTPayload> {
    if (value.length > oidc.maxCookieLength) throw new AuthInvalidError(`the ${typ} cookie is longer than ${oidc.maxCookieLength} characters`)
    for (const key of keys) {
      try {
        const { payload } = await jwtDecrypt(value, key, { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'], requiredClaims: ['exp'] })
        if (payload.typ !== typ) throw new AuthInvalidError(`the ${typ} cookie is not a ${typ}`)
        return payload
      } catch (err) {
        if (err instanceof AuthInvalidError) throw err
        if (err instanceof joseErrors.JWTExpired) throw new AuthInvalidError(`the ${typ} cookie has expired`)
        // Another key may decrypt it (rotation); a malformed value fails the same way with every key.
      }
    }
    throw new AuthInvalidError(`the ${typ} cookie does not decrypt`)
  }

  /** True when session `id` was logged out: this process's list, else the shared one (Redis). */
  async function isRevoked(id: string): Promise<boolean> {
    try {
      return await revocations.check(id)
    } catch (err) {
      // Not knowing is not a pass: a logged-out cookie must not come back while Redis is away.
      throw new UpstreamUnavailableError('the session store (Redis)', 'whether the session was logged out cannot be checked', { cause: err })
    }
  }

  const codec: SessionCodec = {
    cookieName: name,
    stateCookieName: stateName,

    async sealSession(claims, provider, accessToken) {
      const id = randomUUID()
      const kept = accessToken ? { uat: accessToken.token, ...(accessToken.exp !== undefined ? { uex: accessToken.exp } : {}) } : {}
      const value = await seal({ typ: 'session', prv: provider, usr: claims, jti: id, ...kept }, maxAgeSeconds)
      return { setCookie: setCookie(name, value, { maxAge: maxAgeSeconds, sameSite, secure, path: '/' }), id, exp: Math.floor(Date.now() / 1000) + maxAgeSeconds }
    },

    knownSession(value) {
      const hit = opened.get(value)
      if (!hit || hit.until <= Date.now() || revocations.has(hit.info.session!)) return undefined
      return hit.info
    },

    async openSession(value) {
      const known = codec.knownSession(value)
      if (known) return known
      const payload = await unseal(value, 'session')
      const id = typeof payload.jti === 'string' ? payload.jti : ''
      if (!id || (await isRevoked(id))) throw new AuthInvalidError('the session has ended (logged out)')
      const usr = payload.usr && typeof payload.usr === 'object' && !Array.isArray(payload.usr) ? (payload.usr as Record<string, unknown>) : {}
      // The session's own `exp` is the identity's (an ID token's is shorter than the session).
      const claims = Object.freeze({ ...usr, exp: payload.exp, iat: payload.iat, provider: payload.prv }) as AuthInfo['claims']
      // The provider's access token (keepAccessToken) until its own expiry: an expired one is not sent upstream.
      const uex = typeof payload.uex === 'number' ? payload.uex : undefined
      const accessToken = typeof payload.uat === 'string' && payload.uat !== '' && (uex === undefined || uex * 1000 > Date.now()) ? payload.uat : undefined
      const info: AuthInfo = Object.freeze({ claims, roles: Object.freeze(rolesOf(claims, oidc.rolesClaim)), token: '', via: 'cookie' as const, session: id, ...(accessToken ? { accessToken: Object.freeze({ token: accessToken, ...(uex !== undefined ? { exp: uex } : {}) }) } : {}) })
      if (opened.size >= OPENED_CACHE_SIZE) opened.delete(opened.keys().next().value as string)
      opened.set(value, { info, until: Math.min(Date.now() + OPENED_CACHE_MS, payload.exp! * 1000, uex !== undefined && accessToken ? uex * 1000 : Infinity) })
      return info
    },

    async sealState(state) {
      const value = await seal({ typ: 'state', ...state }, stateMaxAgeSeconds)
      // Lax whatever the session's SameSite: the provider's redirect back is a cross-site top-level GET.
      return setCookie(stateName, value, { maxAge: stateMaxAgeSeconds, sameSite: 'lax', secure, path: '/auth/cookie/callback/' })
    },

    async openState(value) {
      const p = await unseal(value, 'state')
      const str = (k: string): string => {
        const v = p[k]
        if (typeof v !== 'string' || v === '') throw new AuthInvalidError('the state cookie is incomplete')
        return v
      }
      return { provider: str('provider'), state: str('state'), nonce: str('nonce'), verifier: str('verifier'), callback: str('callback'), redirect: typeof p.redirect === 'string' ? p.redirect : null }
    },

    clearCookies() {
      return [
        setCookie(name, '', { maxAge: 0, sameSite, secure, path: '/' }),
        setCookie(stateName, '', { maxAge: 0, sameSite: 'lax', secure, path: '/auth/cookie/callback/' }),
      ]
    },

    async revoke(id, exp) {
      forget(id)
      await revocations.revoke(id, exp)
    },

    shareRevocations(list) {
      if (list === revocations) return
      stopForgetting()
      revocations.close()
      revocations = list
      stopForgetting = list.onRevoked(forget)
      opened.clear()
    },

    csrfToken(id) {
      return createHmac('sha256', csrfKey).update(id, 'utf8').digest('base64url')
    },

    checkCsrf(auth, token, where = 'header') {
      const sent = Array.isArray(token) ? token[0] : token
      if (typeof sent !== 'string' || sent === '') {
        throw new CsrfError(where === 'header'
          ? 'a request authenticated by the session cookie must send the X-CSRF-Token header (GET /auth/cookie/csrf)'
          : 'a mutation over a WebSocket authenticated by the session cookie needs the CSRF token as "csrfToken" in the connection_init payload (GET /auth/cookie/csrf)')
      }
      const expected = Buffer.from(codec.csrfToken(auth.session ?? ''), 'utf8')
      const got = Buffer.from(sent, 'utf8')
      if (got.length !== expected.length || !timingSafeEqual(got, expected)) {
        throw new CsrfError(where === 'header' ? 'the X-CSRF-Token header is not the token of this session' : 'the connection_init "csrfToken" is not the token of this session')
      }
    },
  }
  return codec
}

/**
 * The identity verifier of a gateway: `Authorization: Bearer` tokens (and `auth.jwt.cookie`) through
 * `jwt`, else the `auth.oidc` session cookie through `session`. A bearer token wins over the session
 * cookie; a request with both is authenticated by the token (and needs no CSRF token).
 * @returns a verifier with {@link JwtVerifier}'s contract; `verify(token)` needs `auth.jwt` (a token
 *   sent where only cookie login is configured is `TRB_ERR_AUTH_INVALID`).
 */
export function createIdentityVerifier(jwt: JwtVerifier | null, session: SessionCodec | null): JwtVerifier | null {
  if (!session) return jwt
  const sessionCookie = (headers: IncomingHttpHeaders): string | undefined => cookieValue(headers.cookie, session.cookieName)
  const bearer = (headers: IncomingHttpHeaders): string | undefined => {
    const header = headers.authorization
    return header !== undefined && header.length > 7 && header.slice(0, 7).toLowerCase() === 'bearer ' ? header.slice(7).trim() || undefined : undefined
  }
  const verifier: JwtVerifier = {
    tokenOf: (headers) => (jwt ? jwt.tokenOf(headers) : bearer(headers)),
    verify: (token) => (jwt ? jwt.verify(token) : Promise.reject(new AuthInvalidError('bearer tokens are not accepted (auth.jwt is not configured)'))),
    known(headers) {
      if (bearer(headers) !== undefined || !sessionCookie(headers)) return jwt ? jwt.known(headers) : bearer(headers) ? undefined : null
      return session.knownSession(sessionCookie(headers)!)
    },
    async authenticate(headers) {
      if (bearer(headers) !== undefined) return verifier.verify(bearer(headers)!)
      const cookie = sessionCookie(headers)
      if (cookie) return session.openSession(cookie)
      return jwt ? jwt.authenticate(headers) : null
    },
  }
  return verifier
}
