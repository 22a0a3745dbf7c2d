/**
 * Logout of the cookie login across a deployment (README "Cookie login with OpenID Connect" →
 * "Logout on every instance", gateway/auth/revocations.ts): two gateway instances sharing one Redis
 * (a unique key prefix) and a real OpenID provider (`oidc-provider`) on 127.0.0.1. A login at A,
 * the cookie used at B, logout at A: B refuses the cookie, and so does an instance started after the
 * logout (it finds the revocation in Redis). RP-initiated logout from B sends the browser to the
 * provider's `end_session_endpoint` and ends the session at A. Then the in-memory list's bound and
 * the relay of `--workers` without Redis.
 */
import t from 'tap'
import { EventEmitter } from 'node:events'
import type { Worker } from 'node:cluster'
import { fileURLToPath } from 'node:url'
import { createServer } from 'node:http'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Provider from 'oidc-provider'
import { resolveConfig, schema } from '../gateway/config/index.js'
import { createRevocationList, relayRevocations } from '../gateway/auth/revocations.js'
import { serveGateway } from './helpers/serve.js'
import { browse, cookieOf, loginAtProvider, type Jar } from './helpers/oidc-browser.js'
import { redisScratch, redisUrl } from './helpers/redis.js'
import { eventually } from './helpers/eventually.js'

const COOKIE = 'trb_session'
const BYE = 'http://app.test/bye'

t.test('config: maxRevokedSessions is bounded', async (t) => {
  const oidc = (extra: Record<string, unknown>) => ({
    datasources: [schema({ typeDefs: 'type Query { hi: String }' })],
    auth: { oidc: { providers: [{ id: 'p', issuer: 'http://127.0.0.1:1', clientId: 'c', clientSecret: 's' }], cookie: { secrets: ['x'.repeat(32)] }, ...extra } },
  })
  t.equal(resolveConfig(oidc({})).auth.oidc?.maxRevokedSessions, 100_000, 'default')
  t.throws(() => resolveConfig(oidc({ maxRevokedSessions: 10 })), { code: 'TRB_ERR_CONFIG_INVALID' })
  t.throws(() => resolveConfig(oidc({ maxRevokedSessions: 1e9 })), { code: 'TRB_ERR_CONFIG_INVALID' })
})

t.test('in memory: bounded, expired ids are not kept', async (t) => {
  const list = createRevocationList({ max: 100 })
  t.teardown(() => list.close())
  const exp = Math.floor(Date.now() / 1000) + 600
  const seen: string[] = []
  list.onRevoked((id) => seen.push(id))
  for (let i = 0; i < 101; i++) await list.revoke(`s${i}`, exp)
  t.notOk(list.has('s0'), 'the oldest is forgotten past the bound')
  t.ok(list.has('s1'))
  t.ok(await list.check('s100'))
  await list.revoke('old', Math.floor(Date.now() / 1000) - 1)
  t.notOk(list.has('old'), 'an ended session needs no revocation')
  t.equal(seen.length, 101)
})

t.test('--workers without Redis: the primary relays each revocation to the other workers and to a worker that starts later', async (t) => {
  class Worker extends EventEmitter {
    received: unknown[] = []
    send(message: unknown): boolean {
      this.received.push(message)
      return true
    }
  }
  const workers = [new Worker(), new Worker(), new Worker()]
  const known = new Map<string, number>()
  for (const w of workers) relayRevocations(w, () => workers, known, 100)
  const exp = Math.floor(Date.now() / 1000) + 600
  workers[0].emit('message', { type: 'trb:session-revoked', id: 'abc', exp })
  t.same(workers[0].received, [], 'not sent back to its sender')
  t.same(workers[1].received, [{ type: 'trb:session-revoked', id: 'abc', exp }])
  t.same(workers[2].received, [{ type: 'trb:session-revoked', id: 'abc', exp }])
  workers[2].emit('message', { type: 'trb:session-revoked?' })
  t.same(workers[2].received.at(-1), { type: 'trb:session-revoked-list', entries: [['abc', exp]] }, 'a starting worker gets the list')
  workers[1].emit('message', { type: 'trb:session-revoked', id: 42 })
  t.equal(known.size, 1, 'a malformed message is ignored')
})

t.test('--workers without Redis, in real node:cluster workers: a logout in one reaches the others and a later one', async (t) => {
  const cluster = (await import('node:cluster')).default
  // tsx only (not the test runner's instrumentation): a worker starts in about a second.
  cluster.setupPrimary({ exec: fileURLToPath(new URL('./fixtures/revocation-worker.ts', import.meta.url)), execArgv: ['--import=tsx'] })
  const known = new Map<string, number>()
  const started: Worker[] = []
  t.teardown(() => { for (const w of started) w.kill() })
  const fork = async (): Promise<Worker> => {
    const worker = cluster.fork()
    started.push(worker)
    relayRevocations(worker, () => Object.values(cluster.workers ?? {}), known, 100)
    await new Promise<void>((resolve) => worker.on('message', (m: { ready?: boolean }) => m.ready && resolve()))
    return worker
  }
  const has = (worker: Worker, id: string) => new Promise<boolean>((resolve) => {
    const listener = (m: { id?: string; has?: boolean }) => {
      if (m.id !== id || m.has === undefined) return
      worker.off('message', listener)
      resolve(m.has)
    }
    worker.on('message', listener)
    worker.send({ cmd: 'has', id })
  })
  const [w1, w2] = [await fork(), await fork()]
  const exp = Math.floor(Date.now() / 1000) + 600
  t.notOk(await has(w2, 'logged-out'))
  w1.send({ cmd: 'revoke', id: 'logged-out', exp })
  t.ok(await eventually(() => has(w2, 'logged-out')), 'the other worker refuses the session')
  const w3 = await fork()
  t.ok(await eventually(() => has(w3, 'logged-out')), 'a worker started afterwards gets the list')
})

t.test('two instances sharing Redis and a real OpenID provider', async (t) => {
  const scratch = await redisScratch(t)
  if (!scratch) return
  const providerServer = createServer()
  await new Promise<void>((resolve) => providerServer.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    providerServer.closeAllConnections()
    providerServer.close(() => resolve())
  }))
  const issuer = `http://127.0.0.1:${(providerServer.address() as { port: number }).port}`
  const dir = mkdtempSync(join(tmpdir(), 'tributary-oidc-cluster-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'operations'))
  const input = {
    datasources: [schema({ typeDefs: 'type Query { echo(id: String!): String }', resolvers: { Query: { echo: (_: unknown, a: { id: string }) => a.id } } })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    pubsub: { redisUrl, keyPrefix: scratch.keyPrefix },
    auth: {
      oidc: {
        providers: [{ id: 'local', issuer, clientId: 'tributary', clientSecret: 'client-secret-0123456789' }],
        cookie: { secrets: ['cookie-secret-of-the-cluster-test-0123456789'] },
        redirectUris: [BYE],
      },
    },
  }
  const config = resolveConfig(input)
  const a = (await serveGateway(t, config)).url
  const b = (await serveGateway(t, config)).url
  const provider = new Provider(issuer, {
    clients: [{
      client_id: 'tributary',
      client_secret: 'client-secret-0123456789',
      redirect_uris: [`${a}/auth/cookie/callback/local`, `${b}/auth/cookie/callback/local`],
      post_logout_redirect_uris: [BYE],
      response_types: ['code'],
      grant_types: ['authorization_code'],
    }],
    async findAccount(_ctx: unknown, sub: string) {
      return { accountId: sub, claims: async () => ({ sub }) }
    },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    cookies: { keys: ['provider-cookie-key-0123456789'] },
  })
  providerServer.on('request', provider.callback())

  /** A browser logged in at `gateway`: the session cookie's value. */
  const login = async (gateway: string, user: string): Promise<{ jar: Jar; cookie: string }> => {
    const jar: Jar = new Map()
    const callback = await loginAtProvider(jar, { gateway, providerId: 'local', user })
    const res = await browse(jar, callback)
    if (res.status !== 200) throw new Error(`callback answered ${res.status}: ${await res.text()}`)
    return { jar, cookie: cookieOf(jar, gateway, COOKIE)! }
  }
  const user = (gateway: string, cookie: string) => fetch(`${gateway}/auth/user`, { headers: { cookie: `${COOKIE}=${cookie}` } })
  const codeOf = async (res: Response) => ((await res.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code

  t.test('logout at A: B refuses the cookie, and so does an instance started afterwards', async (t) => {
    const { jar, cookie } = await login(a, 'ada')
    const atB = await user(b, cookie)
    t.equal(atB.status, 200, 'the cookie of A works at B (the same secrets)')
    t.match(await atB.json(), { sub: 'ada' })
    const out = await browse(jar, `${a}/auth/cookie/user/logout`, { method: 'POST' })
    t.same(await out.json(), { loggedOut: true, redirect: null })
    t.equal((await user(a, cookie)).status, 401, 'A refuses it')
    // B had the cookie's identity cached: the published revocation drops it (delivered within milliseconds).
    t.ok(await eventually(async () => (await user(b, cookie)).status === 401), 'B refuses it')
    const refused = await user(b, cookie)
    t.equal(refused.status, 401)
    t.equal(await codeOf(refused), 'TRB_ERR_AUTH_INVALID')
    const c = (await serveGateway(t, config)).url
    const atC = await user(c, cookie)
    t.equal(atC.status, 401, 'an instance started after the logout finds it in Redis')
    t.equal(await codeOf(atC), 'TRB_ERR_AUTH_INVALID')
  })

  t.test('the revocation key in Redis expires with the session', async (t) => {
    const keys = await scratch.redis.keys(`${scratch.keyPrefix}kv:session-revoked:*`)
    t.equal(keys.length, 1)
    const ttl = await scratch.redis.pttl(keys[0])
    t.ok(ttl > 0 && ttl <= 28_800_000, `expires in ${ttl} ms, at most the session's 8 h`)
  })

  t.test('RP-initiated logout from B: the provider\'s end_session_endpoint, and A refuses the session', async (t) => {
    const { jar, cookie } = await login(a, 'grace')
    t.equal((await user(a, cookie)).status, 200)
    const bJar: Jar = new Map([[new URL(b).origin, new Map([[COOKIE, cookie]])]])
    const r = await browse(bJar, `${b}/auth/cookie/user/logout?logout_openid_connect_provider=true&redirect_uri=${encodeURIComponent(BYE)}`)
    t.equal(r.status, 302)
    const location = new URL(r.headers.get('location')!)
    t.equal(location.origin + location.pathname, `${issuer}/session/end`)
    t.equal(location.searchParams.get('client_id'), 'tributary')
    t.equal(location.searchParams.get('post_logout_redirect_uri'), BYE)
    t.notOk(cookieOf(bJar, b, COOKIE), 'the cookie is cleared')
    const atProvider = await browse(jar, location.href)
    t.equal(atProvider.status, 200, 'the provider asks to confirm its logout')
    t.ok(await eventually(async () => (await user(a, cookie)).status === 401), 'A refuses the session')
  })
})

