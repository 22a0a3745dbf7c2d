/**
 * Two real gateway processes (examples/cluster/config.ts, `dist/gateway/cli.js start`) on two ports,
 * one PostgreSQL `todo` database (a fresh schema) and Redis (a key prefix of their own, so parallel
 * runs never meet): one messageCreated stream, a shared cache invalidated by a mutation on the other
 * instance, and producer failover when the producer's process is killed.
 * Needs PostgreSQL (TEST_POSTGRES_URL) and Redis (REDIS_URL, default redis://127.0.0.1:6379).
 */
import t from 'tap'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { redisReason, redisUrl, uniquePrefix } from './helpers/redis.js'
import WebSocket from 'ws'
import { createClient, type Client } from 'graphql-ws'
import { freshDatabase } from './helpers/chinook.js'
import { spawnCli } from './helpers/spawn-cli.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const config = join(root, 'examples/cluster/config.ts')


function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

interface Instance {
  base: string
  child: ChildProcess
  output: () => string
}

async function startInstance(t: { teardown(fn: () => unknown): void }, env: Record<string, string>, dir: string): Promise<Instance> {
  const port = await freePort()
  const { child, output } = spawnCli(t, ['start', '--config', config], { cwd: dir, env: { ...env, TRIBUTARY_PUBSUB: '', PORT: String(port), LOG_LEVEL: 'warn' } })
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 90_000
  while (Date.now() < deadline && child.exitCode === null) {
    const ready = await fetch(`${base}/health/ready`).then((r) => r.status, () => 0)
    if (ready === 200) return { base, child, output }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`instance on ${port} did not become ready:\n${output()}`)
}

interface Message { id: string; content: string }

/** Subscribes to messageCreated and pushes every message into the returned array. */
function collect(client: Client): { messages: Message[]; stop: () => void; next: (n: number, timeoutMs: number) => Promise<Message[]> } {
  const messages: Message[] = []
  const waiters: (() => void)[] = []
  const stop = client.subscribe<{ messageCreated: Message }>(
    { query: 'subscription { messageCreated { id content } }' },
    {
      next: (r) => {
        if (r.data) messages.push(r.data.messageCreated)
        for (const w of waiters.splice(0)) w()
      },
      error: () => undefined,
      complete: () => undefined,
    },
  )
  const next = async (n: number, timeoutMs: number): Promise<Message[]> => {
    const target = messages.length + n
    const deadline = Date.now() + timeoutMs
    while (messages.length < target && Date.now() < deadline) await new Promise<void>((r) => { waiters.push(r); setTimeout(r, 50) })
    return messages.slice(target - n, target)
  }
  return { messages, stop, next }
}

const consecutive = (ids: number[]) => ids.every((id, i) => i === 0 || id === ids[i - 1]! + 1)

const redisDown = await redisReason()
const db = redisDown ? undefined : await freshDatabase('postgres', 'cluster')
t.teardown(() => db?.cleanup())

t.test('two instances on one database and one Redis', { skip: redisDown ?? db?.skipReason }, async (t) => {
  if (!db) return
  const dir = mkdtempSync(join(tmpdir(), 'tributary-cluster-'))
  const prefix = uniquePrefix()
  const redis = new Redis(redisUrl)
  t.teardown(async () => {
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length) await redis.del(...keys)
    redis.disconnect()
    rmSync(dir, { recursive: true, force: true })
  })
  const env = { TODO_DATABASE_URL: db.url, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix, DEMO_MESSAGE_INTERVAL_MS: '200', CLUSTER_GENERATED_DIR: join(dir, 'generated') }
  // One after the other, so that the migrations run once.
  const a = await startInstance(t, env, dir)
  const b = await startInstance(t, env, dir)

  const wsA = createClient({ url: a.base.replace(/^http/, 'ws') + '/graphql', webSocketImpl: WebSocket, retryAttempts: 0 })
  const wsB = createClient({ url: b.base.replace(/^http/, 'ws') + '/graphql', webSocketImpl: WebSocket, retryAttempts: 0 })
  t.teardown(() => Promise.allSettled([wsA.dispose(), wsB.dispose()]))

  await t.test('subscribers on A and on B receive the same messageCreated messages', async (t) => {
    // A listens first: its instance is the only candidate, so it holds the producer lock.
    const onA = collect(wsA)
    t.equal((await onA.next(1, 10_000)).length, 1, 'A receives messages')
    const lock = await redis.get(`${prefix}lock:demo:messageCreated`)
    t.ok(lock, 'the producer lock is held in Redis')
    const onB = collect(wsB)
    const fromB = await onB.next(5, 10_000)
    t.equal(fromB.length, 5, 'B receives messages produced on A')
    await onA.next(1, 5000)
    for (const m of fromB) t.same(onA.messages.find((n) => n.id === m.id), m, `message ${m.id}: same id and content on A and B`)
    t.ok(consecutive(fromB.map((m) => Number(m.id))), `one producer: consecutive ids ${fromB.map((m) => m.id).join(', ')}`)
    t.equal(await redis.get(`${prefix}lock:demo:messageCreated`), lock, 'the producer did not change')

    await t.test('killing the producer instance moves production to the other within 5 s, ids still increasing', async (t) => {
      const lastBefore = Number(onB.messages.at(-1)!.id)
      const killedAt = Date.now()
      a.child.kill('SIGKILL')
      const after = await onB.next(3, 10_000)
      const took = Date.now() - killedAt
      t.equal(after.length, 3, 'B keeps receiving messages')
      t.ok(took < 5000, `production resumed after ${took} ms`)
      const ids = after.map((m) => Number(m.id))
      t.ok(ids[0]! > lastBefore, `ids keep increasing across the failover (${lastBefore} then ${ids.join(', ')})`)
      t.ok(consecutive(ids), 'one producer after the failover')
      const holder = await redis.get(`${prefix}lock:demo:messageCreated`)
      t.ok(holder && holder !== lock, 'B holds the producer lock now')
      onB.stop()
    })
  })

  await t.test('a CreateTodo through one instance invalidates the cached Todos on the other', async (t) => {
    // A was killed by the previous test: start it again (same config, same database and Redis).
    const a2 = a.child.exitCode === null && a.child.signalCode === null ? a : await startInstance(t, env, dir)
    const first = await fetch(`${b.base}/operations/Todos`)
    t.equal(first.status, 200)
    const etag = first.headers.get('etag')
    const cached = await fetch(`${b.base}/operations/Todos`)
    t.equal(cached.headers.get('x-tributary-cache'), 'hit', 'B serves Todos from the cache')
    const onA = await fetch(`${a2.base}/operations/Todos`)
    t.equal(onA.headers.get('x-tributary-cache'), 'hit', 'A serves the entry B stored')
    t.equal(onA.headers.get('etag'), etag, 'same ETag on both instances')
    t.same(await onA.json(), await first.json())
    const created = await fetch(`${a2.base}/operations/CreateTodo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'written through A' }) })
    t.equal(created.status, 200)
    const id = ((await created.json()) as { todo_createOneTodo: { id: number } }).todo_createOneTodo.id
    const fresh = await fetch(`${b.base}/operations/Todos?take=1000`)
    const again = await fetch(`${b.base}/operations/Todos`)
    t.equal(again.headers.get('x-tributary-cache'), 'miss', 'the write invalidated the entry on B')
    t.not(again.headers.get('etag'), etag, 'a new ETag')
    const todos = ((await again.json()) as { todo_findManyTodo: { id: number; title: string }[] }).todo_findManyTodo
    const all = ((await fresh.json()) as { todo_findManyTodo: { id: number; title: string }[] }).todo_findManyTodo
    t.ok(all.some((x) => x.id === id && x.title === 'written through A'), 'B answers with the new row')
    t.ok(todos.length > 0)
    t.equal((await fetch(`${a2.base}/health/live`)).status, 200)
  })
})
