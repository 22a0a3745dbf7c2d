/**
 * Authentication (issue 12, README "Authentication"): tokens signed by keys this test generates with
 * jose, verified by the gateway through a real JWKS endpoint or a shared secret, over real HTTP.
 * Covers expired, wrong issuer, wrong audience, `alg: none`, a tampered payload, an unknown key, key
 * rotation (unknown `kid` → the key set is fetched again), the operation directives
 * (`@requireAuthentication`, `@rbac`, `@fromClaim` and a claim-injection attempt), `auth.graphql`,
 * the cookie, and `context.auth` on `/graphql`, `/operations/*`, SSE and WebSocket.
 */
import t from 'tap'
import { createClient } from 'graphql-ws'
import WebSocket from 'ws'
import { mint, signingKey, startAuthGateway, startJwks } from './helpers/auth.js'

const ISS = 'https://issuer.test'
const AUD = 'tributary-test'

const OPERATIONS = {
  Me: 'query Me @requireAuthentication { me { sub roles } }',
  Open: 'query Open { echo(id: "open") }',
  Editors: 'query Editors @rbac(requireMatchAny: [admin, editor]) { echo(id: "editors") }',
  AdminAndAudit: 'query AdminAndAudit @rbac(requireMatchAll: [admin, "auditor"]) { echo(id: "both") }',
  MyId: 'query MyId($id: String! @fromClaim(name: "sub")) { echo(id: $id) }',
  Ticks: 'subscription Ticks @requireAuthentication { ticks }',
}

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined }
}

function codeOf(body: unknown): string | undefined {
  return (body as { errors?: { extensions?: { code?: string } }[] } | undefined)?.errors?.[0]?.extensions?.code
}

/** A token whose header says `alg: none` and that carries no signature. */
function unsigned(claims: Record<string, unknown>): string {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')
  return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`
}

t.test('RS256 through a JWKS endpoint', async (t) => {
  const key1 = await signingKey('RS256', 'key-1')
  const jwks = await startJwks(t, [key1])
  const { url } = await startAuthGateway(t, { jwt: { jwksUrl: jwks.url, issuer: ISS, audience: AUD, jwksCooldownMs: 0 } }, OPERATIONS)
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const good = await mint(key1, { sub: 'alice', roles: ['editor'] }, { issuer: ISS, audience: AUD, expiresIn: '1h' })

  t.test('a valid token reaches context.auth', async (t) => {
    const r = await get(`${url}/operations/Me`, bearer(good))
    t.equal(r.status, 200)
    t.same(r.body, { me: { sub: 'alice', roles: ['editor'] } })
    t.match(r.headers.get('cache-control'), /private/)
  })

  t.test('no token where one is required: 401 TRB_ERR_AUTH_REQUIRED', async (t) => {
    const r = await get(`${url}/operations/Me`)
    t.equal(r.status, 401)
    t.equal(codeOf(r.body), 'TRB_ERR_AUTH_REQUIRED')
    t.equal(r.headers.get('www-authenticate'), 'Bearer')
    const open = await get(`${url}/operations/Open`)
    t.equal(open.status, 200, 'an operation without directives stays open')
  })

  const invalid: [string, () => Promise<string>][] = [
    ['expired', () => mint(key1, { sub: 'alice' }, { issuer: ISS, audience: AUD, expiresIn: Math.floor(Date.now() / 1000) - 60 })],
    ['wrong issuer', () => mint(key1, { sub: 'alice' }, { issuer: 'https://evil.test', audience: AUD, expiresIn: '1h' })],
    ['wrong audience', () => mint(key1, { sub: 'alice' }, { issuer: ISS, audience: 'someone-else', expiresIn: '1h' })],
    ['no issuer', () => mint(key1, { sub: 'alice' }, { audience: AUD, expiresIn: '1h' })],
    ['no exp (auth.jwt.requireExp defaults to true)', () => mint(key1, { sub: 'alice' }, { issuer: ISS, audience: AUD })],
    ['alg none', async () => unsigned({ sub: 'alice', iss: ISS, aud: AUD, exp: Math.floor(Date.now() / 1000) + 3600 })],
    ['tampered payload', async () => {
      const [h, , s] = good.split('.')
      const payload = Buffer.from(JSON.stringify({ sub: 'mallory', roles: ['admin'], iss: ISS, aud: AUD, exp: Math.floor(Date.now() / 1000) + 3600 })).toString('base64url')
      return `${h}.${payload}.${s}`
    }],
    ['signed by a key outside the set', async () => mint(await signingKey('RS256', 'key-1'), { sub: 'alice' }, { issuer: ISS, audience: AUD, expiresIn: '1h' })],
    ['HS256 signed with the public key as secret', async () => {
      const secret = new TextEncoder().encode(JSON.stringify(key1.jwk))
      return mint(secret, { sub: 'alice' }, { issuer: ISS, audience: AUD, expiresIn: '1h', header: { kid: 'key-1' } })
    }],
    ['garbage', async () => 'not.a.jwt'],
    ['too long', async () => 'a'.repeat(9000)],
  ]
  for (const [name, make] of invalid) {
    t.test(`${name}: 401 TRB_ERR_AUTH_INVALID with WWW-Authenticate`, async (t) => {
      const token = await make()
      for (const op of ['Me', 'Open']) {
        const r = await get(`${url}/operations/${op}`, bearer(token))
        t.equal(r.status, 401, `${op}: status`)
        t.equal(codeOf(r.body), 'TRB_ERR_AUTH_INVALID', `${op}: code`)
        t.equal(r.headers.get('www-authenticate'), 'Bearer error="invalid_token"')
        t.notMatch(JSON.stringify(r.body), /mallory|stack|\n\s+at /)
      }
      const g = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(token) }, body: JSON.stringify({ query: '{ me { sub } }' }) })
      t.equal(g.status, 401, '/graphql refuses it too')
    })
  }

  t.test('key rotation: a token with an unknown kid makes the gateway fetch the key set again', async (t) => {
    const before = jwks.fetches
    const key2 = await signingKey('RS256', 'key-2')
    const rotated = await mint(key2, { sub: 'bob' }, { issuer: ISS, audience: AUD, expiresIn: '1h' })
    t.equal((await get(`${url}/operations/Me`, bearer(rotated))).status, 401, 'not yet published: refused')
    jwks.keys = [key2] // key-1 retired, key-2 published
    const r = await get(`${url}/operations/Me`, bearer(rotated))
    t.equal(r.status, 200)
    t.same(r.body, { me: { sub: 'bob', roles: [] } })
    t.ok(jwks.fetches > before, 'the key set was fetched again')
    const fetches = jwks.fetches
    await get(`${url}/operations/Me`, bearer(await mint(key2, { sub: 'carol' }, { issuer: ISS, audience: AUD, expiresIn: '1h' })))
    t.equal(jwks.fetches, fetches, 'a known kid uses the cached keys')
  })

  t.test('@rbac', async (t) => {
    const k = jwks.keys[0]
    const token = (roles: string[]) => mint(k, { sub: 'x', roles }, { issuer: ISS, audience: AUD, expiresIn: '1h' })
    t.equal((await get(`${url}/operations/Editors`, bearer(await token(['editor'])))).status, 200)
    const forbidden = await get(`${url}/operations/Editors`, bearer(await token(['viewer'])))
    t.equal(forbidden.status, 403)
    t.equal(codeOf(forbidden.body), 'TRB_ERR_AUTH_FORBIDDEN')
    t.equal((await get(`${url}/operations/Editors`)).status, 401)
    t.equal((await get(`${url}/operations/AdminAndAudit`, bearer(await token(['admin'])))).status, 403, 'requireMatchAll: one role is not enough')
    const both = await get(`${url}/operations/AdminAndAudit`, bearer(await token(['admin', 'auditor'])))
    t.equal(both.status, 200)
    t.same(both.body, { echo: 'both' })
  })

  t.test('@fromClaim: the variable comes from the token; a client that sends it gets 400', async (t) => {
    const token = await mint(jwks.keys[0], { sub: 'alice-id' }, { issuer: ISS, audience: AUD, expiresIn: '1h' })
    const r = await get(`${url}/operations/MyId`, bearer(token))
    t.equal(r.status, 200)
    t.same(r.body, { echo: 'alice-id' })
    // claim injection: the attacker names someone else's id in every way a variable can arrive
    const viaQuery = await get(`${url}/operations/MyId?id=bob-id`, bearer(token))
    t.equal(viaQuery.status, 400)
    t.equal(codeOf(viaQuery.body), 'TRB_ERR_OPERATION_VARIABLES')
    const viaJson = await get(`${url}/operations/MyId?variables=${encodeURIComponent('{"id":"bob-id"}')}`, bearer(token))
    t.equal(viaJson.status, 400)
    const viaBody = await fetch(`${url}/operations/MyId`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(token) }, body: '{"id":"bob-id"}' })
    t.equal(viaBody.status, 400)
    t.notMatch(await viaBody.text(), /bob-id"\}?$/)
    const gql = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...bearer(token) },
      body: JSON.stringify({ query: OPERATIONS.MyId, variables: { id: 'bob-id' } }),
    })
    t.equal(gql.status, 400)
    t.notMatch(await gql.text(), /"echo"/)
    const viaGraphql = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(token) }, body: JSON.stringify({ query: OPERATIONS.MyId }) })
    t.same(await viaGraphql.json(), { data: { echo: 'alice-id' } }, 'the same document on /graphql takes the claim')
    const noToken = await get(`${url}/operations/MyId?id=bob-id`)
    t.equal(noToken.status, 401)
    const noClaim = await get(`${url}/operations/MyId`, bearer(await mint(jwks.keys[0], { name: 'no sub' }, { issuer: ISS, audience: AUD, expiresIn: '1h' })))
    t.equal(noClaim.status, 403)
    t.equal(codeOf(noClaim.body), 'TRB_ERR_AUTH_FORBIDDEN')
    const wrongType = await get(`${url}/operations/MyId`, bearer(await mint(jwks.keys[0], { sub: { id: 'x' } } as never, { issuer: ISS, audience: AUD, expiresIn: '1h' })))
    t.equal(wrongType.status, 403, 'a claim that does not fit the variable type')
  })

  t.test('/graphql is public in development: context.auth is null without a token', async (t) => {
    const anon = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ me { sub } }' }) })
    t.same(await anon.json(), { data: { me: null } })
    const token = await mint(jwks.keys[0], { sub: 'dana' }, { issuer: ISS, audience: AUD, expiresIn: '1h' })
    const authed = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(token) }, body: JSON.stringify({ query: '{ me { sub } }' }) })
    t.same(await authed.json(), { data: { me: { sub: 'dana' } } })
    const stored = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: OPERATIONS.Me }) })
    t.equal(stored.status, 401, "a stored operation's directives hold on /graphql too")
  })
})

t.test('ES256 and EdDSA keys', async (t) => {
  const es = await signingKey('ES256', 'es')
  const ed = await signingKey('EdDSA', 'ed')
  const jwks = await startJwks(t, [es, ed])
  const { url } = await startAuthGateway(t, { jwt: { jwksUrl: jwks.url } }, OPERATIONS)
  for (const key of [es, ed]) {
    const r = await get(`${url}/operations/Me`, { authorization: `Bearer ${await mint(key, { sub: key.alg }, { expiresIn: '5m' })}` })
    t.same(r.body, { me: { sub: key.alg, roles: [] } }, key.alg)
  }
})

t.test('HS256 secret, token in a cookie, roles from a dotted claim, /graphql authenticated', async (t) => {
  const secret = 'a-test-secret-of-at-least-32-characters!'
  const { url } = await startAuthGateway(t, { jwt: { secret, cookie: 'session', rolesClaim: 'realm_access.roles' }, graphql: 'authenticated' }, OPERATIONS)
  const key = new TextEncoder().encode(secret)
  const token = await mint(key, { sub: 'erin', realm_access: { roles: ['admin'] } }, { expiresIn: '1h' })
  const r = await get(`${url}/operations/Editors`, { cookie: `other=1; session=${token}` })
  t.equal(r.status, 200)
  const me = await get(`${url}/operations/Me`, { cookie: `session=${token}` })
  t.same(me.body, { me: { sub: 'erin', roles: ['admin'] } })
  const wrongSecret = await mint(new TextEncoder().encode('another-secret-of-at-least-32-characters'), { sub: 'erin' }, { expiresIn: '1h' })
  t.equal((await get(`${url}/operations/Me`, { cookie: `session=${wrongSecret}` })).status, 401)
  const anon = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ echo(id: "x") }' }) })
  t.equal(anon.status, 401)
  t.equal(codeOf(await anon.json()), 'TRB_ERR_AUTH_REQUIRED')
  const authed = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query: '{ echo(id: "x") }' }) })
  t.same(await authed.json(), { data: { echo: 'x' } })
})

t.test('WebSocket: connection_init carries the token; a subscription ends when it expires', async (t) => {
  const key = await signingKey('RS256', 'ws')
  const jwks = await startJwks(t, [key])
  const { url } = await startAuthGateway(t, { jwt: { jwksUrl: jwks.url } }, OPERATIONS)
  const wsUrl = url.replace(/^http/, 'ws') + '/graphql'
  const run = (authorization: string | undefined, query: string, max = 3) =>
    new Promise<{ next: unknown[]; error?: unknown; completed: boolean }>((resolve) => {
      const out = { next: [] as unknown[], error: undefined as unknown, completed: false }
      const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true, connectionParams: authorization ? { authorization } : {} })
      const done = () => void Promise.resolve(client.dispose()).then(() => resolve(out))
      const stop = client.subscribe({ query }, {
        next: (v) => {
          out.next.push(v)
          if (out.next.length >= max) {
            stop()
            done()
          }
        },
        error: (e) => {
          out.error = e
          done()
        },
        complete: () => {
          out.completed = true
          done()
        },
      })
    })
  const valid = await mint(key, { sub: 'ws-user' }, { expiresIn: '1h' })
  const me = await run(`Bearer ${valid}`, '{ me { sub } }', 1)
  t.same(me.next, [{ data: { me: { sub: 'ws-user' } } }])
  const anon = await run(undefined, OPERATIONS.Ticks, 1)
  t.equal((anon.next[0] as { errors?: { extensions?: { code?: string } }[] } | undefined)?.errors?.[0]?.extensions?.code ?? (anon.error as { [k: number]: { extensions: { code: string } } })?.[0]?.extensions?.code, 'TRB_ERR_AUTH_REQUIRED')
  const bad = await run('Bearer not.a.token', '{ me { sub } }', 1)
  t.equal((bad.error as { code?: number })?.code, 4403, 'an invalid token closes the socket with 4403')
  // A token that expires in about 1.5 s: the subscription yields ticks, then one error, then completes.
  const short = await mint(key, { sub: 'brief' }, { expiresIn: Math.floor(Date.now() / 1000) + 2 })
  const ticks = await run(short, OPERATIONS.Ticks, 1000)
  t.ok(ticks.completed, 'completed by the server')
  const last = ticks.next.at(-1) as { errors?: { extensions?: { code?: string } }[] }
  t.equal(last.errors?.[0]?.extensions?.code, 'TRB_ERR_AUTH_INVALID')
  t.ok(ticks.next.length > 2, 'ticks arrived before the expiry')
})

t.test('SSE: a stored subscription ends with an error when its token expires', async (t) => {
  const key = await signingKey('RS256', 'sse')
  const jwks = await startJwks(t, [key])
  const { url } = await startAuthGateway(t, { jwt: { jwksUrl: jwks.url } }, OPERATIONS)
  const anon = await fetch(`${url}/operations/Ticks`, { headers: { accept: 'text/event-stream' } })
  t.equal(anon.status, 401)
  await anon.text()
  const short = await mint(key, { sub: 'brief' }, { expiresIn: Math.floor(Date.now() / 1000) + 2 })
  const res = await fetch(`${url}/operations/Ticks`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${short}` } })
  t.equal(res.status, 200)
  const text = await res.text() // the server closes the stream at expiry
  const events = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)))
  t.ok(events.length > 2, 'ticks arrived')
  t.equal(events.at(-1).errors[0].extensions.code, 'TRB_ERR_AUTH_INVALID')
})

t.test('auth.jwt.requireExp: a token without exp is refused (HTTP and WebSocket) unless it is false', async (t) => {
  const secret = 'a-test-secret-of-at-least-32-characters!'
  const key = new TextEncoder().encode(secret)
  const forever = await mint(key, { sub: 'forever' })
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const strict = await startAuthGateway(t, { jwt: { secret } }, OPERATIONS)
  const r = await get(`${strict.url}/operations/Me`, bearer(forever))
  t.equal(r.status, 401)
  t.equal(codeOf(r.body), 'TRB_ERR_AUTH_INVALID')
  t.match(r.body.errors[0].message, /the token has no "exp" claim, so it would never expire \(auth\.jwt\.requireExp\)/)
  const socket = new WebSocket(strict.url.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws')
  socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${forever}` } })))
  const [code] = await new Promise<[number]>((resolve) => socket.once('close', (c: number) => resolve([c])))
  t.equal(code, 4403, 'connection_init with such a token closes the socket with 4403')
  t.equal((await get(`${strict.url}/operations/Me`, bearer(await mint(key, { sub: 'timed' }, { expiresIn: '1h' })))).status, 200, 'a token with exp passes')

  const lax = await startAuthGateway(t, { jwt: { secret, requireExp: false } }, OPERATIONS)
  const ok = await get(`${lax.url}/operations/Me`, bearer(forever))
  t.equal(ok.status, 200, 'requireExp: false accepts it')
  t.same(ok.body, { me: { sub: 'forever', roles: [] } })
  const { resolveConfig, schema } = await import('../gateway/config/index.js')
  const ds = [schema({ typeDefs: 'type Query { a: Int }' })]
  t.equal(resolveConfig({ datasources: ds, auth: { jwt: { secret } } }).auth.jwt?.requireExp, true, 'default true')
  t.throws(() => resolveConfig({ datasources: ds, auth: { jwt: { secret, requireExp: 'no' as never } } }), /auth\.jwt\.requireExp/)
})

t.test('config: auth.jwt is validated; directives need auth.jwt', async (t) => {
  const { resolveConfig, schema } = await import('../gateway/config/index.js')
  const ds = [schema({ typeDefs: 'type Query { a: Int }' })]
  t.throws(() => resolveConfig({ datasources: ds, auth: { jwt: {} } }), /auth\.jwt: give exactly one of jwksUrl or secret/)
  t.throws(() => resolveConfig({ datasources: ds, auth: { jwt: { secret: 'short' } } }), /auth\.jwt\.secret/)
  t.throws(() => resolveConfig({ datasources: ds, auth: { jwt: { secret: 'x'.repeat(32), jwksUrl: 'http://a' } } }), /exactly one/)
  t.throws(() => resolveConfig({ datasources: ds, auth: { graphql: 'authenticated' } }), /needs auth\.jwt/)
  t.throws(() => resolveConfig({ datasources: ds, auth: { jwt: { secret: 'x'.repeat(32), rolez: 'x' } as never } }), /rolez: is not a known option/)
  t.equal(resolveConfig({ datasources: ds, mode: 'production', auth: { jwt: { secret: 'x'.repeat(32) } } }).auth.graphql, 'authenticated')
  t.equal(resolveConfig({ datasources: ds, mode: 'development', auth: { jwt: { secret: 'x'.repeat(32) } } }).auth.graphql, 'public')
  t.equal(resolveConfig({ datasources: ds, mode: 'production' }).auth.graphql, 'public', 'no jwt: nothing to authenticate with')
  await t.rejects(startAuthGateway(t, undefined, { Me: OPERATIONS.Me }), /need auth\.jwt/)
  await t.rejects(startAuthGateway(t, { jwt: { secret: 'x'.repeat(32) } }, { Bad: 'query Bad @rbac(requireMatchAny: []) { echo(id: "x") }' }), /@rbac\(requireMatchAny:\) must be a non-empty list/)
})

t.test('the directives are reflected in operations.json, the OpenAPI document and the typed client', async (t) => {
  const { renderGenerated } = await import('../gateway/codegen/index.js')
  const { gateway } = await startAuthGateway(t, { jwt: { secret: 'x'.repeat(32), cookie: 'session' } }, OPERATIONS)
  const files = renderGenerated(gateway)
  const manifest = JSON.parse(files['operations.json']) as { operations: { name: string; auth: unknown; variablesSchema: { properties: Record<string, unknown> } }[] }
  const byName = new Map(manifest.operations.map((o) => [o.name, o]))
  t.same(byName.get('Open')!.auth, null)
  t.same(byName.get('Editors')!.auth, { requireAuthentication: true, requireMatchAny: ['admin', 'editor'], requireMatchAll: null, fromClaim: {} })
  t.same(byName.get('MyId')!.auth, { requireAuthentication: true, requireMatchAny: null, requireMatchAll: null, fromClaim: { id: 'sub' } })
  t.same(byName.get('MyId')!.variablesSchema.properties, {}, 'the claim variable is not an input')
  const openapi = JSON.parse(files['openapi.json'])
  t.same(openapi.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A JWT verified by the gateway (auth.jwt)' })
  t.same(openapi.paths['/operations/MyId'].get.security, [{ bearerAuth: [] }, { cookieAuth: [] }])
  t.equal(openapi.paths['/operations/Open'].get.security, undefined)
  t.same(openapi.paths['/operations/Editors'].get['x-rbac'], { requireMatchAny: ['admin', 'editor'] })
  t.ok(openapi.paths['/operations/Me'].get.responses['401'])
  const params = (openapi.paths['/operations/MyId'].get.parameters as { name: string }[]).map((p) => p.name)
  t.notOk(params.includes('id'), 'no id parameter')
  t.notOk(JSON.stringify(openapi.paths['/operations/MyId'].post.requestBody).includes('"id"'), 'no id in the body schema')
  t.match(files['client.ts'], /export type MyIdVariables = Record<string, never>/)
  t.match(files['client.ts'], /\$id comes from the token's "sub" claim/)
})

t.test('attack: a flood of tokens with made-up kids costs the key server at most one fetch per cooldown', async (t) => {
  const real = await signingKey('RS256', 'real')
  const jwks = await startJwks(t, [real])
  const { url } = await startAuthGateway(t, { jwt: { jwksUrl: jwks.url } }, OPERATIONS) // default jwksCooldownMs: 30 s
  t.equal((await get(`${url}/operations/Me`, { authorization: `Bearer ${await mint(real, { sub: 'a' }, { expiresIn: '1h' })}` })).status, 200)
  const fetched = jwks.fetches
  // 40 made-up kids signed by one key the server does not know (40 RSA key pairs took seconds of CPU).
  const forger = await signingKey('RS256', 'made-up')
  const forged = await Promise.all(Array.from({ length: 40 }, (_, i) => mint({ ...forger, kid: `made-up-${i}` }, { sub: 'x' }, { expiresIn: '1h' })))
  const statuses = await Promise.all(forged.map(async (tok) => (await get(`${url}/operations/Open`, { authorization: `Bearer ${tok}` })).status))
  t.same([...new Set(statuses)], [401])
  t.ok(jwks.fetches - fetched <= 1, `JWKS fetched ${jwks.fetches - fetched} more time(s) for 40 unknown kids`)
})
