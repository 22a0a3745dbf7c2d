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

/** Authentication of callers (README "Authentication"). */
export interface AuthConfigInput {
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
  readonly graphql: 'public' | 'authenticated'
}
