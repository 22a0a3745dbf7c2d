/**
 * Shared subscription executions (issue 13, gateway/http/shared-subscriptions.ts) through real
 * WebSocket clients on a real gateway: a local-schema source counts how often its stream is started
 * and its fields are resolved, so the tests prove that equal subscriptions run once per event and
 * instance while every socket still gets its own `next` messages, ids and errors.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import WebSocket from 'ws'
import { GraphQLError } from 'graphql'
import { createPubSub } from '@graphql-yoga/subscription'
import { resolveConfig, schema, type TributaryConfigInput } from '../gateway/config/index.js'
import { serveGateway } from './helpers/serve.js'
import { mint } from './helpers/auth.js'
import { SLOW_SOCKET_BYTES } from '../gateway/http/shared-subscriptions.js'

const TYPEDEFS = /* GraphQL */ `
  type Query { ok: Boolean }
  type Tick {
    n: Int!
    label(prefix: String!): String!
    "Fails with a GraphQL error for every subscriber"
    fail: String
    "Fails with an internal error (masked, TRB_ERR_INTERNAL)"
    secret: String
    "The caller's token subject"
    who: String
    "1 MiB of text"
    big: String
  }
  type Subscription { ticks(room: String!): Tick, "An empty stream" none: Int }
`

/** What the source counted: streams started and returned, `label` resolutions. */
interface Counters { started: number; returned: number; labels: number }

interface Harness { url: string; counters: Counters; publish(room: string, n: number): void }

async function startGateway(t: Test, override: Partial<TributaryConfigInput> = {}): Promise<Harness> {
  const counters: Counters = { started: 0, returned: 0, labels: 0 }
  const pubsub = createPubSub<Record<string, [{ n: number }]>>()
  const resolvers = {
    Query: { ok: () => true },
    Tick: {
      label: (tick: { n: number }, args: { prefix: string }) => {
        counters.labels++
        return `${args.prefix}${tick.n}`
      },
      fail: () => { throw new GraphQLError('tick failed') },
      secret: () => { throw new Error('connection to 10.0.0.7:5432 refused') },
      big: () => 'x'.repeat(1024 * 1024),
      who: (_: unknown, __: unknown, ctx: { auth: { claims: { sub?: string } } | null }) => ctx.auth?.claims.sub ?? null,
    },
    Subscription: {
      ticks: {
        subscribe: (_: unknown, args: { room: string }) => {
          counters.started++
          const source = pubsub.subscribe(`tick:${args.room}`)[Symbol.asyncIterator]()
          return {
            next: () => source.next(),
            return: async () => {
              counters.returned++
              return (await source.return?.()) ?? { done: true, value: undefined }
            },
            [Symbol.asyncIterator]() { return this },
          }
        },
        resolve: (tick: { n: number }) => tick,
      },
      none: {
        subscribe: async function* () {
          counters.started++
        },
      },
    },
  }
  const dir = mkdtempSync(join(tmpdir(), 'tributary-subs-shared-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = resolveConfig({
    datasources: [schema({ typeDefs: TYPEDEFS, resolvers })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    ...override,
  })
  const { url } = await serveGateway(t, config)
  return { url: `${url.replace(/^http/, 'ws')}/graphql`, counters, publish: (room, n) => pubsub.publish(`tick:${room}`, { n }) }
}

/** A graphql-transport-ws message as received. */
interface Message { id?: string; type: string; payload?: unknown }

/** A raw socket after `connection_ack`, with every message it received. */
interface Socket { ws: WebSocket; messages: Message[]; send(message: Message): void; raw: string[] }

async function connect(t: Test, url: string, connectionParams?: Record<string, unknown>): Promise<Socket> {
  const ws = new WebSocket(url, 'graphql-transport-ws')
  t.teardown(() => ws.terminate())
  const messages: Message[] = []
  const raw: string[] = []
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject)
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) return reject(new Error('a binary frame'))
      raw.push(data.toString())
      const m = JSON.parse(data.toString()) as Message
      if (m.type === 'connection_ack') resolve()
      else messages.push(m)
    })
    ws.once('close', (code) => reject(new Error(`closed ${code}`)))
    ws.once('open', () => ws.send(JSON.stringify({ type: 'connection_init', ...(connectionParams ? { payload: connectionParams } : {}) })))
  })
  return { ws, messages, raw, send: (m) => ws.send(JSON.stringify(m)) }
}

/** Waits until `check()` holds (polling every 10 ms), at most 5 s. */
async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 5000
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

const LABELLED = 'subscription Ticks($room: String!, $prefix: String!) { ticks(room: $room) { n label(prefix: $prefix) } }'

t.test('equal subscriptions share one stream and one execution per event; each socket gets its own id', async (t) => {
  const { url, counters, publish } = await startGateway(t)
  // Group A: 10 sockets, same document and variables, ids of their own (one needs JSON escaping).
  const ids = Array.from({ length: 10 }, (_, i) => (i === 3 ? 'q"\\</script>é' : `a-${i}`))
  const groupA = await Promise.all(ids.map(() => connect(t, url)))
  groupA.forEach((s, i) => s.send({ id: ids[i], type: 'subscribe', payload: { query: LABELLED, variables: { room: 'r1', prefix: '#' } } }))
  // Group B: other variables (another room); group C: same room, other variables (prefix).
  const groupB = await Promise.all(Array.from({ length: 4 }, () => connect(t, url)))
  groupB.forEach((s) => s.send({ id: '1', type: 'subscribe', payload: { query: LABELLED, variables: { room: 'r2', prefix: '#' } } }))
  const groupC = await Promise.all(Array.from({ length: 3 }, () => connect(t, url)))
  groupC.forEach((s) => s.send({ id: '1', type: 'subscribe', payload: { query: LABELLED, variables: { room: 'r1', prefix: 'C' } } }))
  // Group D: same room, another selection set, on a socket of group A (a second operation there).
  groupA[0].send({ id: 'other', type: 'subscribe', payload: { query: 'subscription { ticks(room: "r1") { n } }' } })
  await until(() => counters.started === 4, 'four streams')
  await new Promise((r) => setTimeout(r, 50))
  t.equal(counters.started, 4, '18 subscriptions, 4 distinct: 4 streams started')

  publish('r1', 1)
  publish('r2', 1)
  await until(() => groupA.every((s) => s.messages.length >= (s === groupA[0] ? 2 : 1)) && [...groupB, ...groupC].every((s) => s.messages.length >= 1), 'every next')
  groupA.forEach((s, i) => {
    const own = s.messages.find((m) => m.id === ids[i])
    t.same(own, { id: ids[i], type: 'next', payload: { data: { ticks: { n: 1, label: '#1' } } } }, `socket ${i} of A: its own id`)
  })
  t.match(groupA[3].raw.at(-1) ?? groupA[3].raw.at(-2), /^\{"id":"q\\"\\\\<\/script>é","type":"next"/, 'the id is JSON-escaped')
  t.same(groupA[0].messages.find((m) => m.id === 'other'), { id: 'other', type: 'next', payload: { data: { ticks: { n: 1 } } } }, 'another selection set: its own result')
  for (const s of groupB) t.same(s.messages, [{ id: '1', type: 'next', payload: { data: { ticks: { n: 1, label: '#1' } } } }], 'room r2')
  for (const s of groupC) t.same(s.messages, [{ id: '1', type: 'next', payload: { data: { ticks: { n: 1, label: 'C1' } } } }], 'prefix C')
  t.equal(counters.labels, 3, '`label` resolved once per group and event (A, B, C), not 17 times')

  // A client `complete` removes that subscriber only; the others go on.
  groupA[1].send({ id: ids[1], type: 'complete' })
  await new Promise((r) => setTimeout(r, 50))
  publish('r1', 2)
  await until(() => groupA.filter((_, i) => i !== 1).every((s) => s.messages.some((m) => m.id === ids[groupA.indexOf(s)] && (m.payload as { data: { ticks: { n: number } } }).data.ticks.n === 2)), 'event 2')
  t.equal(groupA[1].messages.filter((m) => m.type === 'next').length, 1, 'the completed subscriber got nothing more')
  t.equal(counters.labels, 5, 'event 2: `label` resolved for A and C only')
  t.equal(counters.returned, 0, 'no stream returned while it has subscribers')

  // The last subscriber leaving returns the shared stream; a new subscriber starts a new one.
  for (const s of groupC) s.send({ id: '1', type: 'complete' })
  await until(() => counters.returned === 1, 'group C stream returned')
  t.pass('group C: the last complete returned its stream')
  for (const s of groupB) s.ws.close()
  await until(() => counters.returned === 2, 'group B stream returned')
  t.pass('group B: closing the last socket returned its stream')
  const late = await connect(t, url)
  late.send({ id: 'late', type: 'subscribe', payload: { query: LABELLED, variables: { room: 'r2', prefix: '#' } } })
  await until(() => counters.started === 5, 'a new stream for r2')
  publish('r2', 3)
  await until(() => late.messages.length === 1, 'late next')
  t.same(late.messages, [{ id: 'late', type: 'next', payload: { data: { ticks: { n: 3, label: '#3' } } } }])
})

t.test('an execution error reaches every subscriber sharing it, formatted once', async (t) => {
  const { url, counters, publish } = await startGateway(t)
  const sockets = await Promise.all(Array.from({ length: 5 }, () => connect(t, url)))
  sockets.forEach((s, i) => s.send({ id: `e${i}`, type: 'subscribe', payload: { query: 'subscription { ticks(room: "err") { n fail secret } }' } }))
  await until(() => counters.started === 1, 'one stream')
  await new Promise((r) => setTimeout(r, 50))
  publish('err', 7)
  await until(() => sockets.every((s) => s.messages.length === 1), 'every next')
  const payloads = sockets.map((s) => s.messages[0].payload as { data: unknown; errors: { message: string; path: string[]; extensions?: { code?: string } }[] })
  sockets.forEach((s, i) => t.equal(s.messages[0].id, `e${i}`))
  for (const p of payloads) {
    t.same(p.data, { ticks: { n: 7, fail: null, secret: null } })
    t.equal(p.errors.length, 2)
    t.match(p.errors.find((e) => e.path.includes('fail')), { message: 'tick failed', path: ['ticks', 'fail'] })
    const masked = p.errors.find((e) => e.path.includes('secret'))
    t.equal(masked?.extensions?.code, 'TRB_ERR_INTERNAL', 'an internal error is masked')
    t.notMatch(masked?.message ?? '', /10\.0\.0\.7/, 'its message is not sent')
  }
  t.same(new Set(payloads.map((p) => JSON.stringify(p))).size, 1, 'the same payload (one error id) for everyone: formatted once')
  t.equal(counters.started, 1)
})

t.test('subscribers with different tokens never share; equal tokens do', async (t) => {
  const secret = 'a-test-secret-of-at-least-32-characters!'
  const key = new TextEncoder().encode(secret)
  const { url, counters, publish } = await startGateway(t, { auth: { jwt: { secret } } })
  const alice = await mint(key, { sub: 'alice' }, { expiresIn: '1h' })
  const bob = await mint(key, { sub: 'bob' }, { expiresIn: '1h' })
  const clients = await Promise.all([alice, alice, bob].map((token) => connect(t, url, { authorization: `Bearer ${token}` })))
  const anonymous = await connect(t, url)
  for (const s of [...clients, anonymous]) s.send({ id: 'w', type: 'subscribe', payload: { query: 'subscription { ticks(room: "who") { n who } }' } })
  await until(() => counters.started === 3, 'three streams: alice, bob, anonymous')
  await new Promise((r) => setTimeout(r, 50))
  t.equal(counters.started, 3)
  publish('who', 1)
  await until(() => [...clients, anonymous].every((s) => s.messages.length === 1), 'every next')
  t.same(clients.map((s) => (s.messages[0].payload as { data: { ticks: { who: string } } }).data.ticks.who), ['alice', 'alice', 'bob'])
  t.same(anonymous.messages[0].payload, { data: { ticks: { n: 1, who: null } } })
})

t.test('a shared subscription still ends with TRB_ERR_AUTH_INVALID when its token expires', async (t) => {
  const secret = 'a-test-secret-of-at-least-32-characters!'
  const key = new TextEncoder().encode(secret)
  const { url, counters } = await startGateway(t, { auth: { jwt: { secret } } })
  const short = await mint(key, { sub: 'brief' }, { expiresIn: Math.floor(Date.now() / 1000) + 2 })
  const clients = await Promise.all([0, 1, 2].map(() => connect(t, url, { authorization: `Bearer ${short}` })))
  clients.forEach((s, i) => s.send({ id: `x${i}`, type: 'subscribe', payload: { query: 'subscription { ticks(room: "x") { n } }' } }))
  await until(() => clients.every((s) => s.messages.some((m) => m.type === 'complete')), 'complete after expiry')
  t.equal(counters.started, 1, 'one stream for the three subscribers')
  clients.forEach((s, i) => {
    t.match(s.messages, [{ id: `x${i}`, type: 'next', payload: { errors: [{ extensions: { code: 'TRB_ERR_AUTH_INVALID' } }] } }, { id: `x${i}`, type: 'complete' }])
  })
  await until(() => counters.returned === 1, 'the stream returned')
})

t.test('graphql.shareSubscriptions: false runs one stream per subscription; the per-socket cap still applies', async (t) => {
  const { url, counters, publish } = await startGateway(t, { graphql: { shareSubscriptions: false, maxSubscriptionsPerSocket: 2 } })
  const sockets = await Promise.all([0, 1, 2].map(() => connect(t, url)))
  for (const s of sockets) s.send({ id: '1', type: 'subscribe', payload: { query: LABELLED, variables: { room: 'r', prefix: '#' } } })
  await until(() => counters.started === 3, 'three streams')
  publish('r', 1)
  await until(() => sockets.every((s) => s.messages.length === 1), 'every next')
  t.equal(counters.labels, 3, 'executed once per subscriber')
  // The cap counts shared and unshared operations alike: a third operation on one socket is refused.
  sockets[0].send({ id: '2', type: 'subscribe', payload: { query: LABELLED, variables: { room: 'r', prefix: '#' } } })
  sockets[0].send({ id: '3', type: 'subscribe', payload: { query: LABELLED, variables: { room: 'r', prefix: '#' } } })
  await until(() => sockets[0].messages.some((m) => m.id === '3'), 'the refusal')
  t.match(sockets[0].messages.find((m) => m.id === '3'), { type: 'error', payload: [{ extensions: { code: 'TRB_ERR_GRAPHQL_LIMIT' } }] })
})

t.test('the per-socket cap applies to shared subscriptions', async (t) => {
  const { url, counters } = await startGateway(t, { graphql: { maxSubscriptionsPerSocket: 2 } })
  const s = await connect(t, url)
  for (const id of ['1', '2', '3']) s.send({ id, type: 'subscribe', payload: { query: LABELLED, variables: { room: 'cap', prefix: '#' } } })
  await until(() => s.messages.some((m) => m.id === '3'), 'the refusal')
  t.match(s.messages.find((m) => m.id === '3'), { type: 'error', payload: [{ extensions: { code: 'TRB_ERR_GRAPHQL_LIMIT' } }] })
  t.equal(counters.started, 1, 'the two accepted operations share one stream')
})

t.test('attack: a subscriber that stops reading is terminated past SLOW_SOCKET_BYTES unsent; the others go on', async (t) => {
  const { url, counters, publish } = await startGateway(t)
  const [reader, stalled] = await Promise.all([connect(t, url), connect(t, url)])
  for (const s of [reader, stalled]) s.send({ id: '1', type: 'subscribe', payload: { query: 'subscription { ticks(room: "big") { n big } }' } })
  await until(() => counters.started === 1, 'one stream')
  await new Promise((r) => setTimeout(r, 50))
  // The stalled client stops reading its TCP socket: the server's frames pile up in `ws`.
  const tcp = (stalled.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket
  tcp.pause()
  let closed = false
  stalled.ws.once('close', () => (closed = true))
  const events = Math.ceil(SLOW_SOCKET_BYTES / (1024 * 1024)) + 24
  for (let n = 1; n <= events; n++) {
    publish('big', n)
    await until(() => reader.messages.length >= n, `event ${n} read`)
  }
  tcp.resume()
  await until(() => closed, 'the stalled socket closed')
  t.pass(`the stalled socket was terminated (16 MiB unsent after at most ${events} events of 1 MiB)`)
  t.ok(stalled.messages.length < events, `it got ${stalled.messages.length} of ${events} events`)
  t.equal(reader.messages.length, events, 'the reading subscriber got every event')
  t.equal(counters.started, 1)
})

t.test('config: graphql.shareSubscriptions is a boolean, default true', async (t) => {
  const base = { datasources: [schema({ typeDefs: 'type Query { a: Int }' })] }
  t.equal(resolveConfig(base).graphql.shareSubscriptions, true)
  t.equal(resolveConfig({ ...base, graphql: { shareSubscriptions: false } }).graphql.shareSubscriptions, false)
  t.throws(() => resolveConfig({ ...base, graphql: { shareSubscriptions: 'yes' as never } }), { code: 'TRB_ERR_CONFIG_INVALID', message: /shareSubscriptions/ })
})

t.test('subscribers of a stream that ends at once each get complete (no restart loop)', async (t) => {
  const { url, counters } = await startGateway(t)
  const sockets = await Promise.all(Array.from({ length: 5 }, () => connect(t, url)))
  sockets.forEach((s, i) => s.send({ id: `n${i}`, type: 'subscribe', payload: { query: 'subscription { none }' } }))
  await until(() => sockets.every((s) => s.messages.length === 1), 'every complete')
  sockets.forEach((s, i) => t.same(s.messages, [{ id: `n${i}`, type: 'complete' }]))
  t.ok(counters.started <= 5, `${counters.started} stream(s) started for 5 subscribers`)
})
