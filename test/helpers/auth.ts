/**
 * Test helper for authentication: a JSON Web Key Set served over real HTTP on 127.0.0.1 (keys made
 * by jose in the test, rotatable), token minting, and a gateway with `auth.jwt` over a local schema
 * whose resolvers echo `context.auth`, with stored operations written to a temp folder.
 */
import { createServer, type Server } from 'node:http'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK, type JWTPayload } from 'jose'
import { resolveConfig, schema, type TributaryConfigInput } from '../../gateway/config/index.js'
import { serveGateway, type ServedGateway } from './serve.js'

interface Teardown {
  teardown(fn: () => unknown): void
}

/** One signing key: its private key, its public JWK (with `kid` and `alg`) and its algorithm. */
export interface SigningKey {
  kid: string
  alg: string
  privateKey: CryptoKey
  jwk: JWK
}

/** Generates a key pair for `alg` (RS256, ES256, EdDSA…) with a `kid`. */
export async function signingKey(alg: string, kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { crv: alg === 'EdDSA' ? 'Ed25519' : undefined, extractable: true })
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } }
}

/** A JWKS endpoint on 127.0.0.1: `keys` is served as it is at each request; `fetches` counts them. */
export interface JwksServer {
  url: string
  keys: SigningKey[]
  fetches: number
  close(): Promise<void>
}

/** Starts a JWKS server (closed on teardown). */
export async function startJwks(t: Teardown, keys: SigningKey[]): Promise<JwksServer> {
  const state: JwksServer = { url: '', keys, fetches: 0, close: async () => undefined }
  const server: Server = createServer((_req, res) => {
    state.fetches++
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: state.keys.map((k) => k.jwk) }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  state.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/.well-known/jwks.json`
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()))
  t.teardown(() => state.close())
  return state
}

/** Signs a token. `expiresIn` is a jose time span (`'1h'`) or an absolute `exp` in seconds. */
export async function mint(key: SigningKey | Uint8Array, claims: JWTPayload & Record<string, unknown>, options: { issuer?: string; audience?: string; expiresIn?: string | number; header?: Record<string, unknown> } = {}): Promise<string> {
  const isSecret = key instanceof Uint8Array
  let jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: isSecret ? 'HS256' : key.alg, ...(isSecret ? {} : { kid: key.kid }), ...options.header })
    .setIssuedAt()
  if (options.issuer) jwt = jwt.setIssuer(options.issuer)
  if (options.audience) jwt = jwt.setAudience(options.audience)
  if (options.expiresIn !== undefined) jwt = jwt.setExpirationTime(options.expiresIn)
  return jwt.sign(isSecret ? key : key.privateKey)
}

/** The local schema of the auth tests: every field shows what the resolvers saw in `context.auth`. */
export const AUTH_TEST_TYPEDEFS = /* GraphQL */ `
  type Query {
    me: Me
    echo(id: String!): String
  }
  type Me {
    sub: String
    roles: [String!]!
  }
  type Subscription {
    ticks: Int
  }
`

const resolvers = {
  Query: {
    me: (_: unknown, __: unknown, ctx: { auth: { claims: { sub?: string }; roles: string[] } | null }) => (ctx.auth ? { sub: ctx.auth.claims.sub, roles: ctx.auth.roles } : null),
    echo: (_: unknown, args: { id: string }) => args.id,
  },
  Subscription: {
    ticks: {
      subscribe: async function* () {
        for (let i = 1; ; i++) {
          yield { ticks: i }
          await new Promise((r) => setTimeout(r, 100))
        }
      },
    },
  },
}

/** What {@link startAuthGateway} returns. */
export type AuthGateway = ServedGateway

/**
 * A listening gateway over {@link AUTH_TEST_TYPEDEFS} with the given `auth` config and stored
 * operations (`{ 'Me': 'query Me @requireAuthentication { me { sub } }' }`).
 */
export async function startAuthGateway(t: Teardown, auth: TributaryConfigInput['auth'], operations: Record<string, string>, override: Partial<TributaryConfigInput> = {}): Promise<AuthGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-auth-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const [name, text] of Object.entries(operations)) {
    const file = join(dir, 'operations', `${name}.graphql`)
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, text)
  }
  const config = resolveConfig({
    datasources: [schema({ typeDefs: AUTH_TEST_TYPEDEFS, resolvers })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    ...(auth ? { auth } : {}),
    ...override,
  })
  const { app, gateway, url } = await serveGateway(t, config)
  return { app, gateway, url }
}
