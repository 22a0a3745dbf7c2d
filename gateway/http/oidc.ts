/**
 * Cookie login with OpenID Connect (`auth.oidc`, README "Cookie login with OpenID Connect"), with
 * WunderGraph's route names:
 *
 * - `GET /auth/cookie/authorize/<provider>?redirect_uri=…`: starts the authorization code flow
 *   (OpenID Connect Core §3.1) with PKCE (RFC 7636, S256), a `state` and a `nonce`; they are kept in
 *   a short-lived encrypted state cookie, and the browser is sent to the provider (302).
 * - `GET /auth/cookie/callback/<provider>`: checks the `state` against the state cookie, exchanges
 *   the code (with the PKCE verifier), validates the ID token (signature, issuer, audience, expiry,
 *   nonce) through `openid-client`, reads the userinfo endpoint, sets the encrypted http-only session
 *   cookie and sends the browser to the `redirect_uri` of the authorize request (302), or answers the
 *   user as JSON when there was none.
 * - `GET /auth/user`: the current user (session cookie or token) as JSON; 401 `TRB_ERR_AUTH_REQUIRED`
 *   when none. `?revalidate=true` calls the `revalidate` hook when one is given ({@link OidcHooks}).
 * - `GET /auth/cookie/csrf`: the CSRF token of the session (text/plain), to send as `X-CSRF-Token`
 *   with mutations authenticated by the cookie.
 * - `GET|POST /auth/cookie/user/logout[?logout_openid_connect_provider=true][&redirect_uri=…]`: ends
 *   the session (cookie cleared, session id refused from then on by every instance: gateway/auth/revocations.ts) and, when asked,
 *   sends the browser to the provider's `end_session_endpoint` (RP-Initiated Logout 1.0).
 *
 * `openid-client` is an optional peer dependency, loaded when the first OIDC route runs.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type * as OpenIdClient from 'openid-client'
import type { OidcConfig } from '../auth/config.js'
import { cookieValue, type AuthInfo, type SessionAccessToken } from '../auth/jwt.js'
import type { SessionCodec } from '../auth/session.js'
import { AuthInvalidError, AuthRequiredError, OidcCallbackError, OidcProviderUnknownError, OidcRedirectError, UpstreamError, UpstreamUnavailableError, isTributaryError } from '../errors.js'
import { importOptional } from '../optional-package.js'
import { authenticateRequest, revalidateUser } from './auth.js'
import { sendError } from './format-error.js'
import type { GatewayHolder } from './gateway-holder.js'

type Client = typeof OpenIdClient
type Provider = OidcConfig['providers'][number]

/**
 * Hook points of the login routes, for the hooks of issue 25 item 3 (`hooks.authentication`). None
 * is required; without them the routes behave as documented.
 */
export interface OidcHooks {
  /**
   * Called by `GET /auth/user?revalidate=true` with the session's user: returns the user's claims to
   * keep (the session cookie is sealed again with them), or null to end the session (401).
   */
  revalidate?: (user: AuthInfo) => Promise<Record<string, unknown> | null>
  /** Called after a login, before the session cookie is sealed: returns the claims to keep (may change them). */
  mutatingPostAuthentication?: (claims: Record<string, unknown>, provider: string) => Promise<Record<string, unknown>>
}

/** Claims of the ID token that describe the token, not the user: not kept in the session. */
const TOKEN_CLAIMS = ['nonce', 'at_hash', 'c_hash', 's_hash', 'exp', 'iat', 'nbf', 'jti', 'auth_time']

/** True for a failure to reach the provider (network, timeout), as opposed to an answer it gave. */
function unreachable(err: unknown): boolean {
  const name = (err as { name?: string })?.name
  return (err instanceof TypeError && /fetch failed/.test(err.message)) || name === 'TimeoutError' || name === 'AbortError'
}

/**
 * The error of a failed provider call: 503 when it cannot be reached, 502 when it answers something
 * unusable, else (a refused code, an ID token that does not validate) `TRB_ERR_OIDC_CALLBACK`.
 */
function providerError(client: Client, provider: string, err: unknown): Error {
  if (isTributaryError(err)) return err as Error
  if (unreachable(err)) return new UpstreamUnavailableError(`OpenID provider ${provider}`, 'it cannot be reached', { cause: err })
  if (err instanceof client.ResponseBodyError) return new OidcCallbackError(`the provider refused the code (${err.error})`)
  if (err instanceof client.AuthorizationResponseError) return new OidcCallbackError(`the provider answered ${err.error}`)
  const code = (err as { code?: string })?.code
  if (code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || code === 'OAUTH_RESPONSE_IS_NOT_JSON') return new UpstreamError(`OpenID provider ${provider}`, 'unexpected answer', { cause: err })
  if (err instanceof client.ClientError) return new OidcCallbackError(`the provider's answer does not validate (${err.message})`)
  return err as Error
}

/** `redirect_uri` checked against `auth.oidc.redirectUris` (exact match after URL normalisation); null when absent. */
function allowedRedirect(oidc: OidcConfig, value: unknown): string | null {
  if (value === undefined || value === '') return null
  if (typeof value !== 'string') throw new OidcRedirectError('redirect_uri must be given once')
  if (value.length > oidc.maxParamLength) throw new OidcRedirectError(`redirect_uri is longer than ${oidc.maxParamLength} characters`)
  const href = URL.canParse(value) ? new URL(value).href : null
  if (href === null || !oidc.redirectUris.includes(href)) throw new OidcRedirectError('redirect_uri is not in auth.oidc.redirectUris')
  return href
}

/** The user as `/auth/user` answers it: the claims, `roles` as read from the roles claim. */
function userBody(auth: AuthInfo): string {
  return JSON.stringify({ ...auth.claims, roles: auth.roles })
}

/**
 * Registers the login routes when `auth.oidc` is configured (nothing otherwise).
 * @param hooks the hook points ({@link OidcHooks}); default none.
 */
export function registerOidcRoutes(app: FastifyInstance, holder: GatewayHolder, hooks: OidcHooks = {}): void {
  if (!holder.current.config.auth.oidc) return
  let loaded: Promise<Client> | undefined
  const clientLib = (): Promise<Client> => (loaded ??= importOptional<Client>('openid-client', 'auth.oidc').catch((err) => {
    loaded = undefined
    throw err
  }))
  // The discovered configuration of each provider (its config object is frozen, so it is a stable key).
  const discovered = new WeakMap<Provider, Promise<OpenIdClient.Configuration>>()

  function current(): { oidc: OidcConfig; session: SessionCodec } {
    const gateway = holder.current
    if (!gateway.config.auth.oidc || !gateway.session) throw new OidcProviderUnknownError('auth.oidc is no longer configured')
    return { oidc: gateway.config.auth.oidc, session: gateway.session }
  }

  function providerOf(oidc: OidcConfig, id: string): Provider {
    const provider = oidc.providers.find((p) => p.id === id)
    if (!provider) throw new OidcProviderUnknownError(id.length > 64 ? `${id.slice(0, 64)}…` : id)
    return provider
  }

  async function configuration(oidc: OidcConfig, provider: Provider): Promise<{ client: Client; config: OpenIdClient.Configuration }> {
    const client = await clientLib()
    let config = discovered.get(provider)
    if (!config) {
      const issuer = new URL(provider.issuer)
      const insecure = issuer.protocol === 'http:'
      config = client
        .discovery(issuer, provider.clientId, provider.clientSecret, client.ClientSecretBasic(provider.clientSecret), {
          timeout: Math.max(1, Math.ceil(oidc.timeoutMs / 1000)),
          // http only for a loopback issuer (the config schema allows no other): development.
          ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
        })
        .catch((err: unknown) => {
          discovered.delete(provider)
          throw providerError(client, provider.id, err)
        })
      discovered.set(provider, config)
    }
    return { client, config: await config }
  }

  function noStore(reply: FastifyReply): FastifyReply {
    return reply.header('cache-control', 'no-store')
  }

  app.get<{ Params: { provider: string }; Querystring: Record<string, unknown> }>('/auth/cookie/authorize/:provider', async (request, reply) => {
    const { oidc, session } = current()
    const provider = providerOf(oidc, request.params.provider)
    // Checked before anything is sent or set: never an open redirect.
    const redirect = allowedRedirect(oidc, request.query.redirect_uri)
    const { client, config } = await configuration(oidc, provider)
    const verifier = client.randomPKCECodeVerifier()
    const state = client.randomState()
    const nonce = client.randomNonce()
    const callback = provider.redirectUri ?? `${request.protocol}://${request.host}/auth/cookie/callback/${provider.id}`
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: callback,
      scope: provider.scopes.join(' '),
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    })
    reply.header('set-cookie', await session.sealState({ provider: provider.id, state, nonce, verifier, redirect, callback }))
    return noStore(reply).redirect(url.href, 302)
  })

  app.get<{ Params: { provider: string }; Querystring: Record<string, unknown> }>('/auth/cookie/callback/:provider', async (request, reply) => {
    const gateway = holder.current
    const { oidc, session } = current()
    const provider = providerOf(oidc, request.params.provider)
    for (const [key, value] of Object.entries(request.query)) {
      if (typeof value !== 'string') throw new OidcCallbackError(`the parameter ${key.slice(0, 64)} must be given once`)
      if (value.length > oidc.maxParamLength) throw new OidcCallbackError(`the parameter ${key.slice(0, 64)} is longer than ${oidc.maxParamLength} characters`)
    }
    const cookie = cookieValue(request.headers.cookie, session.stateCookieName)
    if (!cookie) throw new OidcCallbackError('no login is in progress (the state cookie is missing)')
    let state
    try {
      state = await session.openState(cookie)
    } catch (err) {
      throw isTributaryError(err) ? new OidcCallbackError((err as Error).message.replace(/^Invalid token: /, '')) : err
    }
    if (state.provider !== provider.id) throw new OidcCallbackError('the login was started with another provider')
    // Checked here, before the code is sent anywhere (openid-client checks it again).
    if (request.query.state !== state.state) throw new OidcCallbackError('the state does not match the login in progress')
    const { client, config } = await configuration(oidc, provider)
    const url = new URL(state.callback)
    url.search = new URLSearchParams(request.query as Record<string, string>).toString()
    let claims: Record<string, unknown>
    let accessToken: SessionAccessToken | undefined
    try {
      const tokens = await client.authorizationCodeGrant(config, url, { pkceCodeVerifier: state.verifier, expectedState: state.state, expectedNonce: state.nonce, idTokenExpected: true })
      const idClaims = tokens.claims()
      if (!idClaims) throw new OidcCallbackError('the provider sent no ID token')
      claims = Object.fromEntries(Object.entries(idClaims).filter(([k]) => !TOKEN_CLAIMS.includes(k)))
      if (provider.fetchUserInfo && config.serverMetadata().userinfo_endpoint && tokens.access_token) {
        const info = await client.fetchUserInfo(config, tokens.access_token, idClaims.sub)
        claims = { ...info, ...claims }
      }
      if (provider.keepAccessToken && tokens.access_token) {
        const expiresIn = typeof tokens.expires_in === 'number' && tokens.expires_in > 0 ? tokens.expires_in : undefined
        accessToken = { token: tokens.access_token, ...(expiresIn !== undefined ? { exp: Math.floor(Date.now() / 1000) + expiresIn } : {}) }
      }
    } catch (err) {
      throw providerError(client, provider.id, err)
    }
    // Hook point (issue 25 item 3): the hooks may change the claims before the session is sealed.
    if (hooks.mutatingPostAuthentication) claims = await hooks.mutatingPostAuthentication(claims, provider.id)
    const sealed = await session.sealSession(claims, provider.id, accessToken)
    if (sealed.setCookie.length - session.cookieName.length > oidc.maxCookieLength + 100) {
      throw new OidcCallbackError(`the user's claims do not fit in a ${oidc.maxCookieLength}-character cookie (auth.oidc.maxCookieLength)`)
    }
    reply.header('set-cookie', [sealed.setCookie, session.clearCookies()[1]])
    noStore(reply)
    if (state.redirect) return reply.redirect(state.redirect, 302)
    const auth = await gateway.session!.openSession(sealed.setCookie.slice(session.cookieName.length + 1).split(';')[0])
    return reply.type('application/json; charset=utf-8').send(userBody(auth))
  })

  app.get<{ Querystring: Record<string, unknown> }>('/auth/user', async (request, reply) => {
    const gateway = holder.current
    const auth = await authenticateRequest(gateway, request)
    if (!auth) throw new AuthRequiredError('no user is logged in')
    noStore(reply)
    // Hook point (issue 25 item 3): `revalidate` decides whether the session's user is still valid.
    // Without an `oidcHooks.revalidate`, config `hooks.authentication.revalidate` decides (README "Hooks").
    const configRevalidate = gateway.hooks?.authentication?.revalidate
      ? async (user: AuthInfo) => {
          try {
            return (await revalidateUser(gateway, user, request.log)).claims
          } catch (err) {
            if (err instanceof AuthInvalidError) return null
            throw err
          }
        }
      : undefined
    const revalidate = hooks.revalidate ?? configRevalidate
    if (request.query.revalidate === 'true' && revalidate && auth.via === 'cookie' && gateway.session) {
      const claims = await revalidate(auth)
      if (!claims) {
        await gateway.session.revoke(auth.session!, Number(auth.claims.exp))
        reply.header('set-cookie', gateway.session.clearCookies())
        throw new AuthRequiredError('the session is no longer valid')
      }
      const sealed = await gateway.session.sealSession(claims, String(auth.claims.provider ?? ''), auth.accessToken)
      await gateway.session.revoke(auth.session!, Number(auth.claims.exp))
      reply.header('set-cookie', sealed.setCookie)
      const renewed = await gateway.session.openSession(sealed.setCookie.slice(gateway.session.cookieName.length + 1).split(';')[0])
      return reply.type('application/json; charset=utf-8').send(userBody(renewed))
    }
    return reply.type('application/json; charset=utf-8').send(userBody(auth))
  })

  app.get('/auth/cookie/csrf', async (request, reply) => {
    const gateway = holder.current
    const auth = await authenticateRequest(gateway, request)
    if (!auth || auth.via !== 'cookie' || !gateway.session) throw new AuthRequiredError('the CSRF token belongs to a login session: log in first')
    return noStore(reply).type('text/plain; charset=utf-8').send(gateway.session.csrfToken(auth.session!))
  })

  async function logout(request: FastifyRequest<{ Querystring: Record<string, unknown> }>, reply: FastifyReply) {
    const { oidc, session } = current()
    const redirect = allowedRedirect(oidc, request.query.redirect_uri)
    const cookie = cookieValue(request.headers.cookie, session.cookieName)
    // A cookie that is invalid or already ended logs nobody out; one that cannot be checked (Redis away) cannot be ended either.
    let unchecked = false
    const auth = cookie ? await session.openSession(cookie).catch((err: unknown) => {
      unchecked = (err as { code?: string })?.code === 'TRB_ERR_UPSTREAM_UNAVAILABLE'
      return null
    }) : null
    let target = redirect
    if (auth && request.query.logout_openid_connect_provider === 'true') {
      const provider = oidc.providers.find((p) => p.id === auth.claims.provider)
      if (provider) {
        const { client, config } = await configuration(oidc, provider)
        if (config.serverMetadata().end_session_endpoint) {
          target = client.buildEndSessionUrl(config, { client_id: provider.clientId, ...(redirect ? { post_logout_redirect_uri: redirect } : {}) }).href
        }
      }
    }
    // Every instance refuses the session from now on (gateway/auth/revocations.ts); the browser forgets the cookie.
    const shared = auth ? await session.revoke(auth.session!, Number(auth.claims.exp)).then(() => true, (err: unknown) => {
      request.log.error({ err }, 'logout: the revocation could not be stored in Redis; other instances may accept the session until its end')
      return false
    }) : true
    reply.header('set-cookie', session.clearCookies())
    noStore(reply)
    if (!shared || unchecked) return sendError(reply, new UpstreamUnavailableError('the session store (Redis)', 'the logout was not shared with the other instances (the cookie is cleared here); log out again'))
    if (request.method === 'GET' && target) return reply.redirect(target, 302)
    return reply.type('application/json; charset=utf-8').send(JSON.stringify({ loggedOut: auth !== null, redirect: target }))
  }
  app.get('/auth/cookie/user/logout', logout)
  app.post('/auth/cookie/user/logout', logout)
}
