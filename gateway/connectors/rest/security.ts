/**
 * Security schemes of a REST source (OpenAPI §4.8.27): the credentials in the source's `security`
 * option, keyed by scheme name, applied to each call as its operation's `security` requires
 * (§4.8.30: the first alternative whose schemes all have credentials; an empty alternative `{}` or
 * `security: []` means none).
 *
 * | Scheme | Credential | Sent as |
 * |---|---|---|
 * | `apiKey` (`in: header/query/cookie`) | `{ apiKey }` | the named header, query parameter or cookie |
 * | `http` `bearer` | `{ token }` | `Authorization: Bearer <token>` |
 * | `http` `basic` | `{ username, password }` | `Authorization: Basic <base64>` (RFC 7617) |
 * | `oauth2` client credentials | `{ clientId, clientSecret, scopes?, tokenUrl?, clientAuth? }` | `Authorization: Bearer <token>`, the token fetched by the gateway (RFC 6749 §4.4) |
 * | `oauth2` (authorizationCode, implicit, any flow) or `http` bearer | `{ fromCaller: true }` | the caller's own token: the client request's `Authorization: Bearer <token>` as it came, else the OIDC session's provider access token (`auth.oidc` provider `keepAccessToken`); without either, the requirement is not met and the next alternative (or none) applies |
 *
 * OAuth2 tokens are fetched from the flow's `tokenUrl` (or the credential's, resolved against the
 * document URL), cached until 30 s before `expires_in` ends (1 hour when absent), fetched once for
 * concurrent calls, and dropped when the upstream answers 401. Credentials and tokens are never
 * logged and never put in error messages or generated files.
 */
import { undici } from '../../undici.js'
import type { Logger } from 'pino'
import { UpstreamError } from '../../errors.js'
import { deref, isObject, type OpenApiDocument, type SecurityRequirement, type SecuritySchemeObject } from './openapi.js'

/** The credentials of one security scheme (which fields apply depends on the scheme's type). */
export interface SecurityCredentials {
  /** apiKey schemes: the key. */
  apiKey?: string
  /** http bearer: the token. */
  token?: string
  /** http basic: user name. */
  username?: string
  /** http basic: password. */
  password?: string
  /** oauth2 client credentials: client id. */
  clientId?: string
  /** oauth2 client credentials: client secret. */
  clientSecret?: string
  /** oauth2: scopes requested; default: the scopes the operation's requirement lists. */
  scopes?: string[]
  /** oauth2: token endpoint; default: the scheme's `flows.clientCredentials.tokenUrl`. */
  tokenUrl?: string
  /** oauth2: how the client authenticates to the token endpoint: HTTP Basic (default, RFC 6749 §2.3.1) or body parameters. */
  clientAuth?: 'basic' | 'body'
  /**
   * oauth2 (any flow: authorizationCode and implicit are the user's own token) or http bearer: send
   * the caller's token instead of one of the gateway's (see the file header). Excludes the other fields.
   */
  fromCaller?: boolean
}

/** What one call must carry. */
export interface AppliedAuth {
  headers: Record<string, string>
  query: Array<[string, string]>
  cookies: string[]
  /** Drops the OAuth2 tokens used, when the upstream answered 401 (undefined when none was used). */
  invalidate?: () => void
}

/** Options of {@link createAuthenticator}. */
export interface AuthenticatorOptions {
  /** The document's URL, against which a relative `tokenUrl` is resolved. */
  documentUrl: string
  sourceName: string
  /** Headers and body timeout of a token request, in milliseconds. */
  timeoutMs: number
  logger?: Logger
}

/** Applies credentials to calls; see the file header. */
export interface Authenticator {
  /**
   * Credentials for a call whose operation requires `requirements`; undefined when none apply.
   * `context` is the GraphQL context (the client request's headers, `auth`), for `fromCaller` schemes.
   * Rejects with `TRB_ERR_UPSTREAM` (502) when a token cannot be fetched.
   */
  authenticate(requirements: SecurityRequirement[], context?: unknown): Promise<AppliedAuth | undefined>
}

/** Thrown at load time for credentials that do not fit the document. */
export class SecurityConfigError extends Error {
  override name = 'SecurityConfigError'
}

/** Adds one scheme's credentials to `out`; `false` when it has none for this call (a `fromCaller` scheme without a caller token). */
type Applier = (scopes: string[], out: AppliedAuth, context: unknown) => void | false | Promise<void>

const EARLY_REFRESH_MS = 30_000
const DEFAULT_TOKEN_LIFETIME_MS = 3_600_000

/**
 * Builds the authenticator of a source, or undefined when no credentials are configured.
 * Schemes the document declares without credentials are logged once (by name) at load.
 * @throws SecurityConfigError when a credential names a scheme the document does not declare, or
 *   lacks the fields its scheme needs, or the scheme type is not supported.
 */
export function createAuthenticator(document: OpenApiDocument, credentials: Record<string, SecurityCredentials> | undefined, options: AuthenticatorOptions): Authenticator | undefined {
  const schemes = document.components?.securitySchemes ?? {}
  const missing = Object.keys(schemes).filter((name) => !credentials || !(name in credentials))
  if (missing.length > 0) options.logger?.info({ schemes: missing }, 'security schemes without credentials: operations requiring only them are called without')
  if (!credentials || Object.keys(credentials).length === 0) return undefined
  const appliers = new Map<string, Applier>()
  for (const [name, cred] of Object.entries(credentials)) {
    const scheme = deref<SecuritySchemeObject>(document, schemes[name])
    if (!isObject(scheme)) throw new SecurityConfigError(`security.${name}: the document declares no security scheme "${name}"`)
    appliers.set(name, applier(name, scheme, cred, options))
  }

  return {
    async authenticate(requirements, context) {
      alternatives: for (const requirement of requirements) {
        const names = Object.keys(requirement)
        if (names.length === 0) return undefined
        if (!names.every((n) => appliers.has(n))) continue
        const out: AppliedAuth = { headers: {}, query: [], cookies: [] }
        for (const n of names) if (await appliers.get(n)!(requirement[n] ?? [], out, context) === false) continue alternatives
        return out
      }
      return undefined
    },
  }
}

function need(name: string, cred: SecurityCredentials, fields: Array<keyof SecurityCredentials>, what: string): void {
  const absent = fields.filter((f) => typeof cred[f] !== 'string' || cred[f] === '')
  if (absent.length > 0) throw new SecurityConfigError(`security.${name}: ${what} needs ${absent.join(' and ')}`)
}

/**
 * The caller's bearer token of a call: the client request's `Authorization: Bearer <token>` (RFC 6750
 * §2.1, scheme case-insensitive), else the OIDC session's provider access token (`context.auth.accessToken`).
 */
function callerToken(context: unknown): string | undefined {
  if (!isObject(context)) return undefined
  const headers = isObject(context.reply) && isObject(context.reply.request) && isObject(context.reply.request.headers) ? context.reply.request.headers : context.headers
  const header = isObject(headers) ? headers.authorization : undefined
  const match = typeof header === 'string' ? /^Bearer +([\x21-\x7e]+)\s*$/i.exec(header) : null
  if (match) return match[1]
  const auth = context.auth
  const kept = isObject(auth) && isObject(auth.accessToken) ? auth.accessToken.token : undefined
  return typeof kept === 'string' && kept !== '' ? kept : undefined
}

/** `{ fromCaller: true }`: the caller's token as `Authorization: Bearer`, or no credentials for this call. */
const fromCallerApplier: Applier = (_scopes, out, context) => {
  const token = callerToken(context)
  if (token === undefined) return false
  out.headers.authorization = `Bearer ${token}`
  return undefined
}

function applier(name: string, scheme: SecuritySchemeObject, cred: SecurityCredentials, options: AuthenticatorOptions): Applier {
  if (cred.fromCaller === true) {
    const extra = Object.keys(cred).filter((k) => k !== 'fromCaller')
    if (extra.length > 0) throw new SecurityConfigError(`security.${name}: fromCaller takes no other field (${extra.join(', ')})`)
    const bearer = scheme.type === 'http' && String(scheme.scheme ?? '').toLowerCase() === 'bearer'
    if (scheme.type !== 'oauth2' && scheme.type !== 'openIdConnect' && !bearer) throw new SecurityConfigError(`security.${name}: fromCaller applies to oauth2, openIdConnect and http bearer schemes, not ${String(scheme.type)}`)
    return fromCallerApplier
  }
  switch (scheme.type) {
    case 'apiKey': {
      need(name, cred, ['apiKey'], 'an apiKey scheme')
      const key = cred.apiKey!
      const param = scheme.name
      if (typeof param !== 'string' || param === '') throw new SecurityConfigError(`security.${name}: the scheme has no name`)
      if (scheme.in === 'query') return (_s, out) => { out.query.push([param, key]) }
      if (scheme.in === 'cookie') return (_s, out) => { out.cookies.push(`${param}=${encodeURIComponent(key)}`) }
      const header = param.toLowerCase()
      return (_s, out) => { out.headers[header] = key }
    }
    case 'http': {
      const kind = String(scheme.scheme ?? '').toLowerCase()
      if (kind === 'bearer') {
        need(name, cred, ['token'], 'an http bearer scheme')
        const value = `Bearer ${cred.token!}`
        return (_s, out) => { out.headers.authorization = value }
      }
      if (kind === 'basic') {
        need(name, cred, ['username', 'password'], 'an http basic scheme')
        const value = `Basic ${Buffer.from(`${cred.username!}:${cred.password!}`, 'utf8').toString('base64')}`
        return (_s, out) => { out.headers.authorization = value }
      }
      throw new SecurityConfigError(`security.${name}: http scheme "${kind}" is not supported (bearer and basic are)`)
    }
    case 'oauth2': {
      need(name, cred, ['clientId', 'clientSecret'], 'an oauth2 scheme (client credentials; { fromCaller: true } sends the caller\'s token)')
      const tokenUrl = cred.tokenUrl ?? scheme.flows?.clientCredentials?.tokenUrl
      if (typeof tokenUrl !== 'string') throw new SecurityConfigError(`security.${name}: the scheme has no clientCredentials flow; set tokenUrl, or { fromCaller: true } to send the caller's own token (authorizationCode, implicit)`)
      let url: URL
      try {
        url = new URL(tokenUrl, options.documentUrl)
      } catch {
        throw new SecurityConfigError(`security.${name}: invalid tokenUrl`)
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new SecurityConfigError(`security.${name}: tokenUrl must be http(s)`)
      const tokens = tokenCache(name, url.href, cred, options)
      return async (scopes, out) => {
        const token = await tokens.get(cred.scopes ?? scopes)
        out.headers.authorization = `Bearer ${token}`
        const previous = out.invalidate
        out.invalidate = () => { previous?.(); tokens.drop(cred.scopes ?? scopes) }
      }
    }
    default:
      throw new SecurityConfigError(`security.${name}: ${String(scheme.type)} schemes are not supported (apiKey, http bearer/basic, oauth2 client credentials, and { fromCaller: true } for oauth2, openIdConnect and bearer are)`)
  }
}

interface CachedToken { value: string; expiresAt: number }

/** OAuth2 client-credentials tokens of one scheme, per scope set. */
function tokenCache(name: string, tokenUrl: string, cred: SecurityCredentials, options: AuthenticatorOptions) {
  const cache = new Map<string, CachedToken>()
  const inflight = new Map<string, Promise<string>>()
  const fail = (reason: string) => Object.assign(new UpstreamError(options.sourceName, `OAuth2 token request for ${name} failed: ${reason}`), { extensions: { code: 'TRB_ERR_UPSTREAM', http: { status: 502 } } })

  const fetchToken = async (key: string, scopes: string[]): Promise<string> => {
    const body = new URLSearchParams({ grant_type: 'client_credentials' })
    if (scopes.length > 0) body.set('scope', scopes.join(' '))
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }
    if (cred.clientAuth === 'body') {
      body.set('client_id', cred.clientId!)
      body.set('client_secret', cred.clientSecret!)
    } else {
      // RFC 6749 §2.3.1: id and secret form-encoded, then Basic.
      const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+')
      headers.authorization = `Basic ${Buffer.from(`${enc(cred.clientId!)}:${enc(cred.clientSecret!)}`).toString('base64')}`
    }
    let status: number
    let text: string
    try {
      const res = await undici().request(tokenUrl, { method: 'POST', headers, body: body.toString(), headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs })
      status = res.statusCode
      text = await res.body.text()
    } catch (err) {
      const code = isObject(err) && typeof err.code === 'string' ? err.code : 'network error'
      throw fail(code)
    }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    if (status < 200 || status >= 300) {
      // RFC 6749 §5.2: `error` is a registered code such as invalid_client; nothing else is shown.
      const code = isObject(json) && typeof json.error === 'string' && /^[\x20-\x7e]{1,64}$/.test(json.error) ? ` (${json.error})` : ''
      throw fail(`the token endpoint answered ${status}${code}`)
    }
    if (!isObject(json) || typeof json.access_token !== 'string' || json.access_token === '') throw fail('the token endpoint answered no access_token')
    const lifetime = typeof json.expires_in === 'number' && json.expires_in > 0 ? json.expires_in * 1000 : DEFAULT_TOKEN_LIFETIME_MS
    cache.set(key, { value: json.access_token, expiresAt: Date.now() + Math.max(lifetime - EARLY_REFRESH_MS, lifetime / 2) })
    options.logger?.debug({ scheme: name, expiresInMs: lifetime }, 'OAuth2 token fetched')
    return json.access_token
  }

  return {
    get(scopes: string[]): Promise<string> {
      const key = [...scopes].sort().join(' ')
      const cached = cache.get(key)
      if (cached && cached.expiresAt > Date.now()) return Promise.resolve(cached.value)
      let pending = inflight.get(key)
      if (!pending) {
        pending = fetchToken(key, scopes).finally(() => inflight.delete(key))
        inflight.set(key, pending)
      }
      return pending
    },
    drop(scopes: string[]): void {
      cache.delete([...scopes].sort().join(' '))
    },
  }
}
