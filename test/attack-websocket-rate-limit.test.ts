/**
 * Attack (issue 22 item 6): the rate limit counts every operation a WebSocket runs, from the same
 * budget as the caller's HTTP requests. Real sockets (`ws`, graphql-transport-ws) against listening
 * gateways: the demo on a real SQLite file (rows created are counted in the file), and the auth test
 * gateway for `key: 'sub'` and for two instances sharing Redis (skipped with a reason when Redis is down).
 */
import t from 'tap'
import { randomUUID } from 'node:crypto'
import Database from 'better-sqlite3'
import WebSocket from 'ws'
import { startDemo } from './helpers/demo.js'
import { mint, startAuthGateway } from './helpers/auth.js'
import { redisScratch, redisUrl } from './helpers/redis.js'

type Answer = { type: 'next'; payload: { data?: Record<string, unknown>; errors?: unknown[] } } | { type: 'error'; payload: { message: string; extensions?: { code?: string; retryAfter?: number } }[] }

/** Opens a graphql-transport-ws socket and waits for `connection_ack`. */
async function openSocket(url: string, connectionParams?: Record<string, unknown>): Promise<WebSocket> {
  const socket = new WebSocket(url.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws')
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject)
    socket.once('close', (code) => reject(new Error(`closed ${code}`)))
    socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', ...(connectionParams ? { payload: connectionParams } : {}) })))
    socket.once('message', (raw: Buffer) => {
      const msg = JSON.parse(raw.toString()) as { type: string }
      if (msg.type === 'connection_ack') resolve()
      else reject(new Error(`expected connection_ack, got ${msg.type}`))
    })
  })
  socket.removeAllListeners('error').removeAllListeners('close')
  return socket
}

/**
 * Sends the queries in waves of 50 (within the default `maxSubscriptionsPerSocket` of 100), each
 * wave's operations at once, each with its own id; resolves with the first answer (`next` or
 * `error`) of each, in order.
 */
async function runAll(socket: WebSocket, queries: string[]): Promise<Answer[]> {
  const answers: Answer[] = []
  for (let i = 0; i < queries.length; i += 50) answers.push(...await runWave(socket, queries.slice(i, i + 50), i))
  return answers
}

function runWave(socket: WebSocket, queries: string[], firstId: number): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const answers = new Map<string, Answer>()
    const onMessage = (raw: Buffer) => {
      const msg = JSON.parse(raw.toString()) as { id?: string; type: string; payload: never }
      if ((msg.type !== 'next' && msg.type !== 'error') || !msg.id || answers.has(msg.id)) return
      answers.set(msg.id, { type: msg.type, payload: msg.payload })
      if (answers.size === queries.length) {
        socket.off('message', onMessage)
        socket.off('close', onClose)
        resolve(queries.map((_, i) => answers.get(String(firstId + i))!))
      }
    }
    const onClose = (code: number) => reject(new Error(`closed ${code} after ${answers.size} answers`))
    socket.on('message', onMessage)
    socket.once('close', onClose)
    queries.forEach((query, i) => socket.send(JSON.stringify({ id: String(firstId + i), type: 'subscribe', payload: { query } })))
  })
}

const refusals = (answers: Answer[]) => answers.filter((a) => a.type === 'error' && a.payload[0]?.extensions?.code === 'TRB_ERR_RATE_LIMITED')
const ran = (answers: Answer[]) => answers.filter((a) => a.type === 'next' && !a.payload.errors)

t.test('200 mutations on one socket with a limit of 20 per minute: only the budget runs, the rest is refused, the socket stays open', async (t) => {
  const keyPrefix = `tributary-test-${randomUUID()}:`
  const demo = await startDemo(t, { listen: true, override: { server: { rateLimit: { max: 20, timeWindowMs: 60_000, keyPrefix } } } })
  const file = process.env.TODO_DATABASE_URL!.replace(/^sqlite:/, '')
  const db = new Database(file, { readonly: true })
  t.teardown(() => db.close())
  const count = () => (db.prepare(`select count(*) as n from Todo where title like 'ws-rate-%'`).get() as { n: number }).n

  // Two HTTP requests of the same caller first; the upgrade request is one more.
  for (let i = 0; i < 2; i++) t.equal((await fetch(`${demo.url}/operations/Todos`)).status, 200)
  const socket = await openSocket(demo.url)
  t.teardown(() => socket.close())
  const answers = await runAll(socket, Array.from({ length: 200 }, (_, i) => `mutation { todo_createOneTodo(data: { title: "ws-rate-${i}" }) { id } }`))

  t.equal(ran(answers).length, 17, '20 - 2 HTTP requests - the upgrade = 17 mutations ran')
  t.equal(count(), 17, 'and created 17 rows')
  const refused = refusals(answers)
  t.equal(refused.length, 183, 'every other one is refused with TRB_ERR_RATE_LIMITED')
  const first = (refused[0]!.payload as { message: string; extensions: { retryAfter: number } }[])[0]!
  t.match(first.message, /^Rate limit exceeded: retry in \d+ seconds$/)
  t.ok(first.extensions.retryAfter >= 1 && first.extensions.retryAfter <= 60, `retryAfter ${first.extensions.retryAfter}`)
  t.equal(socket.readyState, WebSocket.OPEN, 'the socket stays open')

  const http = await fetch(`${demo.url}/operations/Todos`)
  t.equal(http.status, 429, 'the operations used up the HTTP budget of the same caller')
  t.equal(((await http.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code, 'TRB_ERR_RATE_LIMITED')
  const again = await runAll(socket, ['{ todo_findManyTodo(take: 1) { id } }'])
  t.equal(refusals(again).length, 1, 'a query is counted as well')
  t.equal(count(), 17)
})

const secret = 'ws-rate-limit-test-secret-0123456789abcdef'
const key = new TextEncoder().encode(secret)
const echo = (n: number) => Array.from({ length: n }, (_, i) => `{ echo(id: "${i}") }`)

t.test("key 'sub': a socket counts against the subject its connection_init proved", async (t) => {
  const { url } = await startAuthGateway(t, { jwt: { secret } }, { Open: 'query Open { echo(id: "x") }' }, {
    server: { rateLimit: { max: 10, timeWindowMs: 60_000, key: 'sub', keyPrefix: `tributary-test-${randomUUID()}:` } },
  })
  const a = await mint(key, { sub: 'a' }, { expiresIn: '1h' })
  const b = await mint(key, { sub: 'b' }, { expiresIn: '1h' })
  for (let i = 0; i < 4; i++) t.equal((await fetch(`${url}/operations/Open`, { headers: { authorization: `Bearer ${a}` } })).status, 200)
  // The upgrade requests carry no token: they count by IP, not against a or b.
  const socketA = await openSocket(url, { authorization: `Bearer ${a}` })
  const socketB = await openSocket(url, { authorization: b })
  t.teardown(() => (socketA.close(), socketB.close()))
  const answersA = await runAll(socketA, echo(30))
  t.equal(ran(answersA).length, 6, 'a had 10 - 4 left')
  t.equal(refusals(answersA).length, 24)
  t.equal((await fetch(`${url}/operations/Open`, { headers: { authorization: `Bearer ${a}` } })).status, 429, "a's HTTP requests are refused now")
  const answersB = await runAll(socketB, echo(12))
  t.equal(ran(answersB).length, 10, 'b has its own budget')
  t.equal(refusals(answersB).length, 2)
})

t.test('Redis: the operations of a socket on one instance and the requests to another share the counter', async (t) => {
  const scratch = await redisScratch(t)
  if (!scratch) return
  const { keyPrefix } = scratch
  const rateLimit = { max: 20, timeWindowMs: 60_000, redisUrl, keyPrefix }
  const one = await startAuthGateway(t, undefined, {}, { server: { rateLimit } })
  const two = await startAuthGateway(t, undefined, {}, { server: { rateLimit } })
  const socket = await openSocket(one.url)
  t.teardown(() => socket.close())
  const answers = await runAll(socket, echo(200))
  t.equal(ran(answers).length, 19, '20 - the upgrade')
  t.equal(refusals(answers).length, 181)
  const http = await fetch(`${two.url}/graphql?query=${encodeURIComponent('{ echo(id: "x") }')}`)
  t.equal(http.status, 429, 'the other instance refuses the same caller')
})
