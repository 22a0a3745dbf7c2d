/**
 * Cookie login with OpenID Connect (issue 25 item 6, README "Cookie login with OpenID Connect"),
 * end to end against a real OpenID provider (`oidc-provider`) on 127.0.0.1: the browser is played
 * by fetch with a cookie jar per origin, following redirects and completing the provider's login and
 * consent forms. Covers the whole flow (authorize → login → callback → /auth/user → an operation
 * with @fromClaim and @rbac → mutation with and without the CSRF token → logout), a bearer token
 * beside the cookie, RP-initiated logout, and the attacks: wrong state, missing state cookie, a
 * forged nonce, a replayed code, tampered and expired session cookies, an unknown provider, an open
 * redirect, oversize parameters and cookies. Each attack is a coded 4xx and writes nothing.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Provider from 'oidc-provider'
import { EncryptJWT, SignJWT, jwtDecrypt } from 'jose'
import { resolveConfig, schema } from '../gateway/config/index.js'
import WebSocket from 'ws'
import { pino } from 'pino'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { serveGateway } from './helpers/serve.js'
import { run } from './helpers/ws.js'
import { browse, cookieOf, loginAtProvider, startProviderServer, type Jar } from './helpers/oidc-browser.js'

const SECRET = 'cookie-secret-of-the-oidc-test-0123456789'
const JWT_SECRET = 'jwt-secret-of-the-oidc-test-0123456789abcdef'
const APP = 'http://app.test/after-login'
const BYE = 'http://app.test/bye'
const PARTNER = 'http://partner.test'
const COOKIE = 'trb_session'
const STATE_COOKIE = 'trb_session_state'

const notes: { author: string; text: string }[] = []


type ErrorBody = { errors: { message: string; extensions: { code: string } }[] }

function codeOf(body: unknown): string | undefined {
  return (body as { errors?: { extensions?: { code?: string } }[] } | undefined)?.errors?.[0]?.extensions?.code
}

async function json(res: Response): Promise<{ status: number; body: unknown; res: Response }> {
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined, res }
}

// ----- the provider -----
const { issuer, server: providerServer, serve } = await startProviderServer(t)

// ----- the gateway -----
const dir = mkdtempSync(join(tmpdir(), 'tributary-oidc-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
mkdirSync(join(dir, 'operations'))
const OPERATIONS: Record<string, string> = {
  WhoAmI: 'query WhoAmI($sub: String! @fromClaim(name: "sub")) @rbac(requireMatchAny: [editor]) { echo(id: $sub) }',
  AdminOnly: 'query AdminOnly @rbac(requireMatchAny: [admin]) { echo(id: "admin") }',
  AddNote: 'mutation AddNote($author: String! @fromClaim(name: "email"), $text: String!) { addNote(author: $author, text: $text) }',
}
for (const [name, text] of Object.entries(OPERATIONS)) writeFileSync(join(dir, 'operations', `${name}.graphql`), text)
const config = resolveConfig({
  datasources: [
    schema({
      typeDefs: 'type Query { echo(id: String!): String }\ntype Mutation { addNote(author: String!, text: String!): Int! }',
      resolvers: {
        Query: { echo: (_: unknown, a: { id: string }) => a.id },
        Mutation: { addNote: (_: unknown, a: { author: string; text: string }) => notes.push(a) },
      },
    }),
  ],
  operations: { dir: join(dir, 'operations') },
  generatedDir: join(dir, 'generated'),
  // A site allowed to open WebSockets (its upgrades carry the user's cookie): a partner, or one an attacker took over.
  server: { allowedOrigins: [PARTNER] },
  auth: {
    jwt: { secret: JWT_SECRET },
    oidc: {
      providers: [
        { id: 'local', issuer, clientId: 'tributary', clientSecret: 'client-secret-0123456789', scopes: ['openid', 'profile', 'email', 'roles'] },
        // Nothing listens on port 1: the provider cannot be reached.
        { id: 'down', issuer: 'http://127.0.0.1:1', clientId: 'x', clientSecret: 'y', redirectUri: 'http://127.0.0.1:1/cb' },
      ],
      cookie: { secrets: [SECRET] },
      redirectUris: [APP, BYE],
    },
  },
})
const { url: gw, app } = await serveGateway(t, config)
const CALLBACK = `${gw}/auth/cookie/callback/local`

// A second gateway with the hook points of the login routes set (OidcHooks).
const hooked = await createGateway(config, { logger: pino({ level: 'silent' }) })
t.teardown(() => hooked.close())
const hookedApp = await buildApp(hooked, {
  logger: false,
  oidcHooks: {
    mutatingPostAuthentication: async (claims, providerId) => ({ ...claims, tenant: `acme-${providerId}` }),
    revalidate: async (user) => (user.claims.sub === 'grace' ? null : { ...user.claims, name: 'Ada King' }),
  },
})
t.teardown(async () => {
  hookedApp.server.closeAllConnections()
  await hookedApp.close()
})
await hookedApp.listen({ host: '127.0.0.1', port: 0 })
const gwHooked = `http://127.0.0.1:${(hookedApp.server.address() as { port: number }).port}`

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'tributary',
    client_secret: 'client-secret-0123456789',
    redirect_uris: [CALLBACK, `${gwHooked}/auth/cookie/callback/local`],
    post_logout_redirect_uris: [BYE],
    response_types: ['code'],
    grant_types: ['authorization_code'],
  }],
  async findAccount(_ctx: unknown, sub: string) {
    return { accountId: sub, claims: async () => ({ sub, email: `${sub}@example.test`, name: 'Ada Lovelace', roles: sub === 'mallory' ? [] : ['editor'] }) }
  },
  claims: { openid: ['sub'], email: ['email'], profile: ['name'], roles: ['roles'] },
  scopes: ['openid', 'profile', 'email', 'roles'],
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  cookies: { keys: ['provider-cookie-key-0123456789'] },
})
serve(provider.callback())

/** Starts a login at `gateway` as `user` (redirect_uri APP); see loginAtProvider of helpers/oidc-browser.ts. */
function login(jar: Jar, user = 'ada', beforeProvider?: () => Promise<void>, gateway = gw): Promise<string> {
  return loginAtProvider(jar, { gateway, providerId: 'local', user, redirectUri: APP, beforeProvider })
}

/** A browser logged in as `user`: its jar holds the session cookie. */
async function loggedIn(user = 'ada', gateway = gw): Promise<Jar> {
  const jar: Jar = new Map()
  const callback = await login(jar, user, undefined, gateway)
  const res = await browse(jar, callback)
  if (res.status !== 302) throw new Error(`callback answered ${res.status}: ${await res.text()}`)
  return jar
}

const sessionKey = createHash('sha256').update(SECRET).digest()

t.test('the whole flow: authorize, provider login, callback, /auth/user, operations, CSRF, logout', async (t) => {
  const jar: Jar = new Map()
  const callback = await login(jar)
  t.ok(cookieOf(jar, gw, STATE_COOKIE), 'the state cookie is set during the login')
  const cb = await browse(jar, callback)
  t.equal(cb.status, 302)
  t.equal(cb.headers.get('location'), APP, 'back to the allowed redirect_uri')
  const setCookies = cb.headers.getSetCookie()
  const session = setCookies.find((c) => c.startsWith(`${COOKIE}=`))!
  t.match(session, /HttpOnly/)
  t.match(session, /Secure/, 'Secure by default')
  t.match(session, /SameSite=Lax/)
  t.match(session, /Max-Age=28800/)
  t.ok(setCookies.some((c) => c.startsWith(`${STATE_COOKIE}=;`)), 'the state cookie is cleared')
  t.notOk(cookieOf(jar, gw, STATE_COOKIE))
  t.notMatch(cookieOf(jar, gw, COOKIE)!, /ada/, 'the cookie is encrypted, not readable')

  const user = await json(await browse(jar, `${gw}/auth/user`))
  t.equal(user.status, 200)
  t.match(user.body, { sub: 'ada', email: 'ada@example.test', name: 'Ada Lovelace', roles: ['editor'], provider: 'local', iss: issuer })
  t.notOk((user.body as Record<string, unknown>).nonce, 'token claims are not kept')
  t.equal(user.res.headers.get('cache-control'), 'no-store')

  const who = await json(await browse(jar, `${gw}/operations/WhoAmI`))
  t.same(who.body, { echo: 'ada' }, '@fromClaim and @rbac with the cookie user')
  const admin = await json(await browse(jar, `${gw}/operations/AdminOnly`))
  t.equal(admin.status, 403)
  t.equal(codeOf(admin.body), 'TRB_ERR_AUTH_FORBIDDEN')

  const post = (headers: Record<string, string> = {}) =>
    browse(jar, `${gw}/operations/AddNote`, { method: 'POST', body: JSON.stringify({ text: 'hello' }), headers: { 'content-type': 'application/json', ...headers } })
  const before = notes.length
  const noToken = await json(await post())
  t.equal(noToken.status, 403)
  t.equal(codeOf(noToken.body), 'TRB_ERR_CSRF')
  const badToken = await json(await post({ 'x-csrf-token': 'not-the-token' }))
  t.equal(badToken.status, 403)
  t.equal(codeOf(badToken.body), 'TRB_ERR_CSRF')
  t.equal(notes.length, before, 'nothing written without the CSRF token')

  const csrf = await browse(jar, `${gw}/auth/cookie/csrf`)
  t.equal(csrf.status, 200)
  t.match(csrf.headers.get('content-type'), /text\/plain/)
  const token = await csrf.text()
  const ok = await json(await post({ 'x-csrf-token': token }))
  t.same(ok.body, { addNote: before + 1 })
  t.same(notes.at(-1), { author: 'ada@example.test', text: 'hello' }, '@fromClaim on a mutation')

  const gql = (headers: Record<string, string> = {}) =>
    browse(jar, `${gw}/graphql`, { method: 'POST', body: JSON.stringify({ query: 'mutation { addNote(author: "x", text: "gql") }' }), headers: { 'content-type': 'application/json', ...headers } })
  const gqlNo = await json(await gql())
  t.equal(gqlNo.status, 403)
  t.equal(codeOf(gqlNo.body), 'TRB_ERR_CSRF')
  t.equal(notes.length, before + 1, '/graphql mutation without the token writes nothing')
  const gqlOk = await json(await gql({ 'x-csrf-token': token }))
  t.equal(gqlOk.status, 200)
  t.equal(notes.length, before + 2)
  const gqlQuery = await json(await browse(jar, `${gw}/graphql`, { method: 'POST', body: JSON.stringify({ query: '{ echo(id: "q") }' }), headers: { 'content-type': 'application/json' } }))
  t.same(gqlQuery.body, { data: { echo: 'q' } }, 'queries need no CSRF token')

  // The CSRF token of another session does not work for this one.
  const other = await loggedIn('grace')
  const otherToken = await (await browse(other, `${gw}/auth/cookie/csrf`)).text()
  t.not(otherToken, token)
  t.equal((await post({ 'x-csrf-token': otherToken })).status, 403)

  const oldCookie = cookieOf(jar, gw, COOKIE)!
  const out = await json(await browse(jar, `${gw}/auth/cookie/user/logout`, { method: 'POST' }))
  t.same(out.body, { loggedOut: true, redirect: null })
  t.notOk(cookieOf(jar, gw, COOKIE), 'the cookie is cleared')
  const after = await json(await browse(jar, `${gw}/auth/user`))
  t.equal(after.status, 401)
  t.equal(codeOf(after.body), 'TRB_ERR_AUTH_REQUIRED')
  const replay = await json(await fetch(`${gw}/auth/user`, { headers: { cookie: `${COOKIE}=${oldCookie}` } }))
  t.equal(replay.status, 401, 'the logged-out cookie, sent again, is refused')
  t.equal(codeOf(replay.body), 'TRB_ERR_AUTH_INVALID')
})

t.test('a bearer token works beside the cookie login, and needs no CSRF token', async (t) => {
  const token = await new SignJWT({ sub: 'svc', email: 'svc@example.test', roles: ['editor'] }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('5m').sign(new TextEncoder().encode(JWT_SECRET))
  const headers = { authorization: `Bearer ${token}` }
  t.same((await json(await fetch(`${gw}/operations/WhoAmI`, { headers }))).body, { echo: 'svc' })
  const before = notes.length
  const r = await json(await fetch(`${gw}/operations/AddNote`, { method: 'POST', body: JSON.stringify({ text: 'from a service' }), headers: { ...headers, 'content-type': 'application/json' } }))
  t.equal(r.status, 200)
  t.equal(notes.length, before + 1)
  t.match((await json(await fetch(`${gw}/auth/user`, { headers }))).body, { sub: 'svc', roles: ['editor'] })
  const csrf = await json(await fetch(`${gw}/auth/cookie/csrf`, { headers }))
  t.equal(csrf.status, 401, 'no CSRF token without a login session')
})

t.test('the cookie user over a WebSocket (the cookie of the upgrade request) and in the OpenAPI document', async (t) => {
  const jar = await loggedIn()
  const socket = new WebSocket(gw.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws', { headers: { cookie: `${COOKIE}=${cookieOf(jar, gw, COOKIE)}` } })
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
  t.teardown(() => socket.close())
  const result = await run(socket, 'query Q($s: String! @fromClaim(name: "sub")) @requireAuthentication { echo(id: $s) }')
  t.same(result, { data: { echo: 'ada' } })
  const openapi = (await (await fetch(`${gw}/openapi.json`)).json()) as { components: { securitySchemes: Record<string, unknown> }; paths: Record<string, { get?: { security?: unknown } }> }
  t.match(openapi.components.securitySchemes.sessionCookie, { type: 'apiKey', in: 'cookie', name: COOKIE })
  t.same(openapi.paths['/operations/WhoAmI'].get?.security, [{ bearerAuth: [] }, { sessionCookie: [] }])
})

t.test('WebSocket mutations with the session cookie need the CSRF token in connection_init (a cross-site socket cannot run one)', async (t) => {
  const jar = await loggedIn()
  const cookie = `${COOKIE}=${cookieOf(jar, gw, COOKIE)}`
  const token = await (await browse(jar, `${gw}/auth/cookie/csrf`)).text()
  const open = async (origin: string | undefined, extra: Record<string, string> = {}): Promise<WebSocket> => {
    const socket = new WebSocket(gw.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws', { headers: { cookie, ...extra }, ...(origin ? { origin } : {}) })
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
    t.teardown(() => socket.close())
    return socket
  }
  const mutation = 'mutation { addNote(author: "ws", text: "over a socket") }'
  const before = notes.length

  // The attack: a page of an allowed origin (cross-site) opens a socket; the browser adds the cookie.
  const crossSite = await open(PARTNER)
  const refused = await run(crossSite, mutation)
  t.match(refused, { errors: [{ extensions: { code: 'TRB_ERR_CSRF' } }] }, 'no token: refused')
  t.match(JSON.stringify(refused), /csrfToken/)
  const forged = await run(await open(PARTNER), mutation, undefined, { csrfToken: 'guessed' })
  t.match(forged, { errors: [{ extensions: { code: 'TRB_ERR_CSRF' } }] }, 'a wrong token: refused')
  const notString = await run(await open(PARTNER), mutation, undefined, { csrfToken: { not: 'a string' } })
  t.match(notString, { errors: [{ extensions: { code: 'TRB_ERR_CSRF' } }] }, 'a token that is no string: refused')
  t.equal(notes.length, before, 'nothing written')
  t.same(await run(await open(PARTNER), '{ echo(id: "read") }'), { data: { echo: 'read' } }, 'queries need no token')
  const unlisted = await new Promise<number>((resolve) => {
    const s = new WebSocket(gw.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws', { headers: { cookie }, origin: 'http://evil.test' })
    s.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0))
    s.once('open', () => (s.close(), resolve(101)))
  })
  t.equal(unlisted, 403, 'an origin that is not allowed does not even get the socket')

  // The gateway's own page: it read the token from GET /auth/cookie/csrf.
  const sameSite = await open(gw)
  t.same(await run(sameSite, mutation, undefined, { csrfToken: token }), { data: { addNote: before + 1 } })
  t.same(notes.at(-1), { author: 'ws', text: 'over a socket' })
  // Another session's token does not fit this one.
  const otherToken = await (await browse(await loggedIn('grace'), `${gw}/auth/cookie/csrf`)).text()
  t.match(await run(await open(gw), mutation, undefined, { csrfToken: otherToken }), { errors: [{ extensions: { code: 'TRB_ERR_CSRF' } }] })

  // A token (Authorization) needs no CSRF token, with or without the cookie beside it.
  const jwt = await new SignJWT({ sub: 'svc', roles: ['editor'] }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('5m').sign(new TextEncoder().encode(JWT_SECRET))
  t.same(await run(await open(PARTNER), mutation, undefined, { authorization: `Bearer ${jwt}` }), { data: { addNote: before + 2 } }, 'payload authorization')
  t.same(await run(await open(undefined, { authorization: `Bearer ${jwt}` }), mutation), { data: { addNote: before + 3 } }, 'upgrade Authorization header')
})

t.test('logout takes no body: a form post is refused (415)', async (t) => {
  const r = await json(await fetch(`${gw}/auth/cookie/user/logout`, { method: 'POST', body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } }))
  t.equal(r.status, 415)
  t.equal(codeOf(r.body), 'TRB_ERR_BAD_REQUEST')
})

t.test('hook points: mutatingPostAuthentication after login, revalidate on /auth/user?revalidate=true', async (t) => {
  const jar = await loggedIn('ada', gwHooked)
  t.match((await json(await browse(jar, `${gwHooked}/auth/user`))).body, { sub: 'ada', tenant: 'acme-local', name: 'Ada Lovelace' })
  const before = cookieOf(jar, gwHooked, COOKIE)
  const renewed = await json(await browse(jar, `${gwHooked}/auth/user?revalidate=true`))
  t.match(renewed.body, { sub: 'ada', name: 'Ada King', provider: 'local' })
  t.not(cookieOf(jar, gwHooked, COOKIE), before, 'the session is sealed again')
  t.match((await json(await browse(jar, `${gwHooked}/auth/user`))).body, { name: 'Ada King' })
  t.equal((await fetch(`${gwHooked}/auth/user`, { headers: { cookie: `${COOKIE}=${before}` } })).status, 401, 'the replaced session is ended')
  const grace = await loggedIn('grace', gwHooked)
  const refused = await json(await browse(grace, `${gwHooked}/auth/user?revalidate=true`))
  t.equal(refused.status, 401)
  t.equal(codeOf(refused.body), 'TRB_ERR_AUTH_REQUIRED')
  t.notOk(cookieOf(grace, gwHooked, COOKIE), 'the cookie is cleared')
})

t.test('a user without the role is refused by @rbac', async (t) => {
  const jar = await loggedIn('mallory')
  const r = await json(await browse(jar, `${gw}/operations/WhoAmI`))
  t.equal(r.status, 403)
  t.equal(codeOf(r.body), 'TRB_ERR_AUTH_FORBIDDEN')
})

t.test('RP-initiated logout at the provider', async (t) => {
  const jar = await loggedIn()
  const r = await browse(jar, `${gw}/auth/cookie/user/logout?logout_openid_connect_provider=true&redirect_uri=${encodeURIComponent(BYE)}`)
  t.equal(r.status, 302)
  const location = new URL(r.headers.get('location')!)
  t.equal(location.origin + location.pathname, `${issuer}/session/end`)
  t.equal(location.searchParams.get('client_id'), 'tributary')
  t.equal(location.searchParams.get('post_logout_redirect_uri'), BYE)
  t.notOk(cookieOf(jar, gw, COOKIE))
  const atProvider = await browse(jar, location.href)
  t.equal(atProvider.status, 200, 'the provider shows its logout confirmation')
  const redirectAfter = await browse(jar, `${gw}/auth/cookie/user/logout?redirect_uri=${encodeURIComponent(BYE)}`)
  t.equal(redirectAfter.headers.get('location'), BYE)
})

t.test('attacks: each a coded 4xx, no session and nothing written', async (t) => {
  const before = notes.length
  const noSession = (res: Response) => !res.headers.getSetCookie().some((c) => c.startsWith(`${COOKIE}=`) && !c.startsWith(`${COOKIE}=;`))

  t.test('wrong state', async (t) => {
    const jar: Jar = new Map()
    const callback = new URL(await login(jar))
    callback.searchParams.set('state', 'forged-state')
    const r = await browse(jar, callback.href)
    t.equal(r.status, 400)
    t.equal(codeOf(await r.json()), 'TRB_ERR_OIDC_CALLBACK')
    t.ok(noSession(r))
  })

  t.test('missing state cookie', async (t) => {
    const jar: Jar = new Map()
    const callback = await login(jar)
    jar.get(gw)!.delete(STATE_COOKIE)
    const r = await browse(jar, callback)
    t.equal(r.status, 400)
    const body = (await r.json()) as ErrorBody
    t.equal(codeOf(body), 'TRB_ERR_OIDC_CALLBACK')
    t.match(body.errors[0].message, /state cookie is missing/)
    t.ok(noSession(r))
  })

  t.test('a state cookie of another key (tampered)', async (t) => {
    const jar: Jar = new Map()
    const callback = await login(jar)
    const value = cookieOf(jar, gw, STATE_COOKIE)!
    jar.get(gw)!.set(STATE_COOKIE, value.slice(0, -4) + (value.endsWith('AAAA') ? 'BBBB' : 'AAAA'))
    const r = await browse(jar, callback)
    t.equal(r.status, 400)
    t.equal(codeOf(await r.json()), 'TRB_ERR_OIDC_CALLBACK')
  })

  t.test('a forged nonce: the ID token does not validate', async (t) => {
    const jar: Jar = new Map()
    const callback = await login(jar, 'ada', async () => {
      // The attacker's state cookie: the login's own state and PKCE verifier, another nonce.
      const { payload } = await jwtDecrypt(cookieOf(jar, gw, STATE_COOKIE)!, sessionKey)
      const forged = await new EncryptJWT({ ...payload, nonce: 'forged-nonce' }).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).encrypt(sessionKey)
      jar.get(gw)!.set(STATE_COOKIE, forged)
    })
    const r = await browse(jar, callback)
    t.equal(r.status, 400)
    const body = (await r.json()) as ErrorBody
    t.equal(codeOf(body), 'TRB_ERR_OIDC_CALLBACK')
    t.match(body.errors[0].message, /nonce|does not validate/)
    t.ok(noSession(r))
  })

  t.test('a replayed authorization code', async (t) => {
    const jar: Jar = new Map()
    const callback = await login(jar)
    const stateCookie = cookieOf(jar, gw, STATE_COOKIE)!
    t.equal((await browse(jar, callback)).status, 302, 'the first use logs in')
    const r = await fetch(callback, { headers: { cookie: `${STATE_COOKIE}=${stateCookie}` }, redirect: 'manual' })
    t.equal(r.status, 400)
    const body = (await r.json()) as ErrorBody
    t.equal(codeOf(body), 'TRB_ERR_OIDC_CALLBACK')
    t.match(body.errors[0].message, /invalid_grant/)
    t.ok(noSession(r))
  })

  t.test('an error from the provider (access denied)', async (t) => {
    const jar: Jar = new Map()
    const callback = new URL(await login(jar))
    const denied = new URL(CALLBACK)
    denied.searchParams.set('error', 'access_denied')
    denied.searchParams.set('state', callback.searchParams.get('state')!)
    denied.searchParams.set('iss', issuer)
    const r = await browse(jar, denied.href)
    t.equal(r.status, 400)
    t.match(((await r.json()) as ErrorBody).errors[0], { message: /access_denied/, extensions: { code: 'TRB_ERR_OIDC_CALLBACK' } })
  })

  t.test('tampered and expired session cookies', async (t) => {
    const jar = await loggedIn()
    const value = cookieOf(jar, gw, COOKIE)!
    const parts = value.split('.')
    parts[3] = parts[3].slice(0, -2) + (parts[3].endsWith('AA') ? 'BB' : 'AA')
    for (const [what, cookie] of [
      ['tampered', parts.join('.')],
      ['expired', await new EncryptJWT({ typ: 'session', prv: 'local', usr: { sub: 'ada', roles: ['editor'] }, jti: 'x' }).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).setIssuedAt(1_000_000).setExpirationTime(1_000_060).encrypt(sessionKey)],
      ['a state cookie used as a session', await new EncryptJWT({ typ: 'state', provider: 'local' }).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).setExpirationTime('5m').encrypt(sessionKey)],
      ['oversize', 'A'.repeat(5000)],
      ['garbage', 'not-a-jwe'],
    ] as const) {
      const r = await json(await fetch(`${gw}/auth/user`, { headers: { cookie: `${COOKIE}=${cookie}` } }))
      t.equal(r.status, 401, what)
      t.equal(codeOf(r.body), 'TRB_ERR_AUTH_INVALID', what)
      const m = await json(await fetch(`${gw}/operations/AddNote`, { method: 'POST', body: '{"text":"x"}', headers: { cookie: `${COOKIE}=${cookie}`, 'content-type': 'application/json' } }))
      t.equal(m.status, 401, `${what}: mutation refused`)
    }
  })

  t.test('unknown provider', async (t) => {
    for (const path of ['/auth/cookie/authorize/nobody', '/auth/cookie/callback/nobody?code=x&state=y']) {
      const r = await json(await fetch(`${gw}${path}`, { redirect: 'manual' }))
      t.equal(r.status, 404, path)
      t.equal(codeOf(r.body), 'TRB_ERR_OIDC_PROVIDER_UNKNOWN', path)
    }
  })

  t.test('a provider that cannot be reached: 503, no cookie', async (t) => {
    const r = await fetch(`${gw}/auth/cookie/authorize/down`, { redirect: 'manual' })
    t.equal(r.status, 503)
    t.equal(codeOf(await r.json()), 'TRB_ERR_UPSTREAM_UNAVAILABLE')
    t.same(r.headers.getSetCookie(), [])
  })

  t.test('open redirect attempts', async (t) => {
    for (const target of ['https://evil.test/', 'http://app.test/after-login/../../evil', '//evil.test', 'javascript:alert(1)', `${APP}?x=1`]) {
      const r = await fetch(`${gw}/auth/cookie/authorize/local?redirect_uri=${encodeURIComponent(target)}`, { redirect: 'manual' })
      t.equal(r.status, 400, target)
      t.equal(codeOf(await r.json()), 'TRB_ERR_OIDC_REDIRECT', target)
      t.notOk(r.headers.get('location'), `${target}: no redirect`)
      t.same(r.headers.getSetCookie(), [], `${target}: no cookie`)
    }
    const logout = await fetch(`${gw}/auth/cookie/user/logout?redirect_uri=${encodeURIComponent('https://evil.test/')}`, { redirect: 'manual' })
    t.equal(logout.status, 400)
    t.equal(codeOf(await logout.json()), 'TRB_ERR_OIDC_REDIRECT')
  })

  t.test('oversize parameters are bounded', async (t) => {
    const longRedirect = await json(await fetch(`${gw}/auth/cookie/authorize/local?redirect_uri=${encodeURIComponent(APP + '?' + 'a'.repeat(5000))}`, { redirect: 'manual' }))
    t.equal(longRedirect.status, 400)
    t.equal(codeOf(longRedirect.body), 'TRB_ERR_OIDC_REDIRECT')
    const longCode = await json(await fetch(`${gw}/auth/cookie/callback/local?code=${'c'.repeat(5000)}&state=s`, { redirect: 'manual' }))
    t.equal(longCode.status, 400)
    t.equal(codeOf(longCode.body), 'TRB_ERR_OIDC_CALLBACK')
    const twice = await json(await fetch(`${gw}/auth/cookie/callback/local?code=a&code=b&state=s`, { redirect: 'manual' }))
    t.equal(twice.status, 400)
    t.equal(codeOf(twice.body), 'TRB_ERR_OIDC_CALLBACK')
    const bigState = await json(await fetch(`${gw}/auth/cookie/callback/local?code=a&state=s`, { headers: { cookie: `${STATE_COOKIE}=${'A'.repeat(6000)}` }, redirect: 'manual' }))
    t.equal(bigState.status, 400)
    t.equal(codeOf(bigState.body), 'TRB_ERR_OIDC_CALLBACK')
  })

  t.equal(notes.length, before, 'no attack wrote anything')
})

t.test('config: bad oidc sections are refused with TRB_ERR_CONFIG_INVALID', async (t) => {
  const base = { datasources: [schema({ typeDefs: 'type Query { a: Int }' })] }
  const oidc = (o: Record<string, unknown>) => () => resolveConfig({ ...base, auth: { oidc: { providers: [{ id: 'p', issuer: 'https://id.example', clientId: 'c', clientSecret: 's' }], cookie: { secrets: [SECRET] }, ...o } } } as never)
  t.doesNotThrow(oidc({}))
  t.throws(oidc({ cookie: { secrets: ['short'] } }), { code: 'TRB_ERR_CONFIG_INVALID' })
  t.throws(oidc({ providers: [{ id: 'p', issuer: 'http://id.example', clientId: 'c', clientSecret: 's' }] }), { code: 'TRB_ERR_CONFIG_INVALID' }, 'http only on loopback')
  t.throws(oidc({ providers: [{ id: 'p', issuer: 'https://a.example', clientId: 'c', clientSecret: 's' }, { id: 'p', issuer: 'https://b.example', clientId: 'c', clientSecret: 's' }] }), { code: 'TRB_ERR_CONFIG_INVALID' }, 'one id twice')
  t.throws(oidc({ providers: [{ id: 'a/b', issuer: 'https://a.example', clientId: 'c', clientSecret: 's' }] }), { code: 'TRB_ERR_CONFIG_INVALID' })
  t.throws(oidc({ redirectUris: ['/relative'] }), { code: 'TRB_ERR_CONFIG_INVALID' })
  t.throws(oidc({ cookie: { secrets: [SECRET], sameSite: 'none', secure: false } }), { code: 'TRB_ERR_CONFIG_INVALID' })
  const resolved = resolveConfig({ ...base, auth: { oidc: { providers: [{ id: 'p', issuer: 'https://id.example', clientId: 'c', clientSecret: 's' }], cookie: { secrets: [SECRET] } } } })
  t.match(resolved.auth.oidc, { cookie: { name: 'trb_session', secure: true, sameSite: 'lax', maxAgeSeconds: 28800, stateMaxAgeSeconds: 600 }, rolesClaim: 'roles', maxParamLength: 2048, maxCookieLength: 4096, timeoutMs: 5000, providers: [{ scopes: ['openid', 'profile', 'email'], fetchUserInfo: true }] })
})

// The root teardown runs once the event loop is idle: the keep-alive sockets of fetch would hold it
// for the servers' keep-alive timeouts, so they are cut when the tests are done.
t.test('the keep-alive sockets are closed', async () => {
  app.server.closeAllConnections()
  hookedApp.server.closeAllConnections()
  providerServer.closeAllConnections()
})
