/**
 * The types of the `auth` section of the config (README "Authentication"). They live on the auth floor
 * so that `auth/jwt.ts` needs nothing from `config/` (which imports the connectors, which import auth/);
 * `config/index.ts` re-exports them, and resolves their defaults.
 */

/**
 * JWT verification (`auth.jwt`): a token comes from `Authorization: Bearer <token>` or from the
 * cookie named `cookie`, and is verified with `jose` (RFC 7519): signature, `exp`/`nbf`, and
 * `iss`/`aud` when set. Give exactly one of `secret` (HS256/384/512) or `jwksUrl`
 * (RS256/384/512, PS256/384/512, ES256/384/512, EdDSA).
 */
export interface JwtConfig {
  /** URL of a JSON Web Key Set (RFC 7517 §5). Keys are cached and re-fetched when a token names an unknown `kid`. */
  jwksUrl?: string
  /** Shared secret for HMAC tokens (HS256/384/512); at least 32 characters (256 bits, RFC 7518 §3.2). */
  secret?: string
  /** Required `iss` claim (one value or any of a list). Default: not checked. */
  issuer?: string | string[]
  /** Required `aud` claim (one value or any of a list). Default: not checked. */
  audience?: string | string[]
  /** Claim holding the caller's roles: a list of strings, or one space- or comma-separated string; a dotted path (`realm_access.roles`) reaches into objects. Default `roles`. */
  rolesClaim?: string
  /** Name of a cookie that carries the token when there is no `Authorization: Bearer` header. Default: none. */
  cookie?: string
  /** Clock skew allowed on `exp`/`nbf`, in seconds. Default 0. */
  clockToleranceSec?: number
  /**
   * Refuse tokens without an `exp` claim (`TRB_ERR_AUTH_INVALID`, 401: such a token never expires,
   * so a leaked one works forever). Default true; false accepts them (an issuer that cannot set `exp`).
   */
  requireExp?: boolean
  /** Longest a fetched key set is used before it is fetched again, in milliseconds. Default 600000 (10 minutes). */
  jwksCacheMaxAgeMs?: number
  /** After a fetch, no new fetch for this many milliseconds, even for an unknown `kid` (bounds what a flood of made-up `kid`s costs the key server). Default 30000. */
  jwksCooldownMs?: number
  /** Time allowed to fetch the key set, in milliseconds. Default 5000. */
  jwksTimeoutMs?: number
  /** Longest token accepted, in characters; a longer one is `TRB_ERR_AUTH_INVALID` without being parsed. Default 8192. */
  maxTokenLength?: number
}

/** One OpenID Connect provider of `auth.oidc.providers` (README "Cookie login with OpenID Connect"). */
export interface OidcProviderConfig {
  /** The provider's name in the routes (`/auth/cookie/authorize/<id>`): letters, digits, `_` and `-`, at most 64. */
  id: string
  /** The issuer URL; its discovery document is `<issuer>/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4). `https://`, or `http://` on a loopback host only (development). */
  issuer: string
  /** The client id registered at the provider. */
  clientId: string
  /** The client secret registered at the provider (sent with `client_secret_basic`). */
  clientSecret: string
  /** Scopes asked for. Default `['openid', 'profile', 'email']` (`openid` is added when missing). */
  scopes?: string[]
  /**
   * The callback URL registered at the provider. Default: `<scheme>://<Host>/auth/cookie/callback/<id>`
   * from the authorize request (behind a proxy set it, or set fastify `trustProxy`).
   */
  redirectUri?: string
  /** Read the user's claims from the provider's userinfo endpoint too (merged over the ID token's). Default true. */
  fetchUserInfo?: boolean
  /**
   * Keep the provider's access token in the (encrypted) session cookie, until its `expires_in`, so that
   * a REST source's OAuth2 scheme with `{ fromCaller: true }` sends it upstream for the cookie user
   * (gateway/connectors/rest/security.ts). It counts toward `maxCookieLength`. Default false.
   */
  keepAccessToken?: boolean
}

/** The cookies of `auth.oidc` (README "Cookie login with OpenID Connect"). */
export interface OidcCookieConfig {
  /** Name of the session cookie. Default `trb_session`; the state cookie is `<name>_state`. */
  name?: string
  /**
   * Secrets the cookies are encrypted with (JWE `dir` + `A256GCM`, key = SHA-256 of the secret), each
   * at least 32 characters. The first encrypts; all decrypt (rotation: put the new one first).
   */
  secrets: string[]
  /** The `Secure` attribute (cookies only over HTTPS). Default true; false for development over http on loopback. */
  secure?: boolean
  /** The session cookie's `SameSite` attribute. Default `lax` (the state cookie is always `lax`: it must come back with the provider's redirect). */
  sameSite?: 'strict' | 'lax' | 'none'
  /** Lifetime of a session, in seconds (the cookie's `Max-Age` and the session's `exp`). Default 28800 (8 hours). */
  maxAgeSeconds?: number
  /** Lifetime of a login in progress (the state cookie), in seconds. Default 600. */
  stateMaxAgeSeconds?: number
}

/** Cookie login with OpenID Connect (`auth.oidc`, README "Cookie login with OpenID Connect"). */
export interface OidcConfigInput {
  /** The providers users may log in with. */
  providers: OidcProviderConfig[]
  /** The cookies. */
  cookie: OidcCookieConfig
  /**
   * Where the browser may be sent after login and logout (`redirect_uri` of the authorize and logout
   * routes): absolute URLs compared exactly (scheme, host, port, path and query). Anything else is
   * `TRB_ERR_OIDC_REDIRECT` (400). Default none: without `redirect_uri` the callback answers with the user.
   */
  redirectUris?: string[]
  /** Claim holding the user's roles (as `auth.jwt.rolesClaim`). Default: `auth.jwt.rolesClaim`, else `roles`. */
  rolesClaim?: string
  /** Longest query parameter accepted by the OIDC routes (`code`, `state`, `redirect_uri`), in characters. Default 2048. */
  maxParamLength?: number
  /** Longest cookie value read (session or state), in characters; a longer one is ignored as invalid. Default 4096. */
  maxCookieLength?: number
  /** Time allowed for each call to a provider (discovery, token, userinfo), in milliseconds. Default 5000. */
  timeoutMs?: number
  /**
   * Most logged-out sessions each process remembers until their end (the oldest is forgotten first;
   * with Redis every instance also finds them there, where each expires with its session). Default 100000.
   */
  maxRevokedSessions?: number
}

/** The resolved `auth.oidc`. */
export interface OidcConfig {
  readonly providers: readonly Readonly<Required<Omit<OidcProviderConfig, 'redirectUri'>> & Pick<OidcProviderConfig, 'redirectUri'>>[]
  readonly cookie: Readonly<Required<OidcCookieConfig>>
  readonly redirectUris: readonly string[]
  readonly rolesClaim: string
  readonly maxParamLength: number
  readonly maxCookieLength: number
  readonly timeoutMs: number
  readonly maxRevokedSessions: number
}

/** Authentication of callers (README "Authentication"). */
export interface AuthConfigInput {
  /** Cookie login with OpenID Connect. Default: off. */
  oidc?: OidcConfigInput
  /** How tokens are verified. Without it, no token is ever read and operations may not use the auth directives. */
  jwt?: JwtConfig
  /**
   * Who may send documents to `/graphql` and the WebSocket: `public` (anyone; the operations' own
   * directives and `permissions` still apply) or `authenticated` (a valid token is needed:
   * `TRB_ERR_AUTH_REQUIRED` otherwise). Default: `public` in development, `authenticated` in
   * production when `jwt` is set, `public` when it is not.
   */
  graphql?: 'public' | 'authenticated'
}

/** The resolved `auth` section. */
export interface AuthConfig {
  /** The JWT settings with their defaults, or null when tokens are not read. */
  readonly jwt: Readonly<Required<Omit<JwtConfig, 'jwksUrl' | 'secret' | 'issuer' | 'audience' | 'cookie'>> & Pick<JwtConfig, 'jwksUrl' | 'secret' | 'issuer' | 'audience' | 'cookie'>> | null
  /** The OIDC cookie login settings with their defaults, or null when off. */
  readonly oidc: OidcConfig | null
  readonly graphql: 'public' | 'authenticated'
}
