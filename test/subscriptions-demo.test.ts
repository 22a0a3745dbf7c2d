/** The demo subscription over WebSocket (graphql-transport-ws) on /graphql, with a real client. */
import t from 'tap'
import { createClient } from 'graphql-ws'
import WebSocket from 'ws'
import { startDemo } from './helpers/demo.js'
import { redisScratch, redisUrl } from './helpers/redis.js'

t.test('messageCreated emits messages with increasing numeric ids', async (t) => {
  const { url } = await startDemo(t, { listen: true })
  const client = createClient({ url: url.replace(/^http/, 'ws') + '/graphql', webSocketImpl: WebSocket, retryAttempts: 0 })
  t.teardown(() => client.dispose())
  const received: { id: string; content: string }[] = []
  await new Promise<void>((resolve, reject) => {
    const unsubscribe = client.subscribe<{ messageCreated: { id: string; content: string } }>(
      { query: 'subscription { messageCreated { id content } }' },
      {
        next: (result) => {
          if (result.errors) return reject(new Error(result.errors[0].message))
          received.push(result.data!.messageCreated)
          if (received.length === 3) {
            unsubscribe()
            resolve()
          }
        },
        error: reject,
        complete: () => undefined,
      },
    )
  })
  t.equal(received.length, 3)
  const ids = received.map((m) => Number(m.id))
  t.ok(ids.every((id) => Number.isInteger(id)), 'ids are numeric')
  t.ok(ids[1] > ids[0] && ids[2] > ids[1], `ids increase: ${ids.join(', ')}`)
  for (const m of received) t.match(m.content, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
})

/** Subscribes with graphql-ws and resolves with the first `count` messages. */
function take(client: ReturnType<typeof createClient>, count: number): { done: Promise<{ id: string; content: string }[]>; stop: () => void } {
  const received: { id: string; content: string }[] = []
  let stop = (): void => {}
  const done = new Promise<{ id: string; content: string }[]>((resolve, reject) => {
    stop = client.subscribe<{ messageCreated: { id: string; content: string } }>(
      { query: 'subscription { messageCreated { id content } }' },
      {
        next: (result) => {
          if (result.errors) return reject(new Error(result.errors[0].message))
          received.push(result.data!.messageCreated)
          if (received.length === count) {
            stop()
            resolve(received)
          }
        },
        error: reject,
        complete: () => resolve(received),
      },
    )
  })
  return { done, stop: () => stop() }
}

t.test('messageCreated is one stream: two subscribers see the same messages, the producer stops with the last one', async (t) => {
  const { url } = await startDemo(t, { listen: true })
  const { messageStream } = await import('../datasources/demo/resolvers.js')
  const ws = url.replace(/^http/, 'ws') + '/graphql'
  const a = createClient({ url: ws, webSocketImpl: WebSocket, retryAttempts: 0 })
  const b = createClient({ url: ws, webSocketImpl: WebSocket, retryAttempts: 0 })
  t.teardown(() => Promise.all([a.dispose(), b.dispose()]))

  const first = take(a, 6)
  const second = take(b, 4)
  const [ma, mb] = await Promise.all([first.done, second.done])
  const ida = ma.map((m) => Number(m.id))
  const idb = mb.map((m) => Number(m.id))
  for (const ids of [ida, idb]) t.ok(ids.every((id, i) => i === 0 || id === ids[i - 1]! + 1), `each subscriber sees consecutive ids, not every other one: ${ids.join(', ')}`)
  const common = mb.filter((m) => ma.some((n) => n.id === m.id))
  t.ok(common.length >= 2, `the subscribers share messages (${common.map((m) => m.id).join(', ')})`)
  for (const m of common) t.same(ma.find((n) => n.id === m.id), m, `message ${m.id}: same id and content for both`)

  // Both have unsubscribed: the producer stops and produces nothing more.
  for (let i = 0; i < 50 && messageStream.listeners > 0; i++) await new Promise((r) => setTimeout(r, 20))
  t.equal(messageStream.listeners, 0, 'nobody listens')
  const next = messageStream.nextId
  await new Promise((r) => setTimeout(r, 350))
  t.equal(messageStream.nextId, next, 'no message is produced while nobody listens')

  // A later subscriber continues the numbering.
  const later = await take(a, 2).done
  t.ok(Number(later[0]!.id) >= next, `ids keep increasing across subscriptions (${later[0]!.id} >= ${next})`)
  t.ok(Number(later[0]!.id) > Math.max(...ida, ...idb), 'no id is reused')
})

t.test('createMessageStream: return() releases at once, an aborted signal ends the iterator', async (t) => {
  const { createMessageStream } = await import('../datasources/demo/message-stream.js')
  const stream = createMessageStream({ intervalMs: 30 })
  t.equal(stream.listeners, 0, 'nothing runs before the first subscriber')
  const one = stream.subscribe()
  const controller = new AbortController()
  const two = stream.subscribe(controller.signal)
  t.equal(stream.listeners, 2)
  const before = Date.now()
  const [r1, r2] = await Promise.all([one.next(), two.next()])
  t.same(r1, r2, 'both get the same first message')
  t.ok(Number(r1.value?.messageCreated.id) > before, `a new counter starts at the time in milliseconds (${r1.value?.messageCreated.id} > ${before})`)
  const pending = one.next()
  await one.return!()
  t.same(await pending, { done: true, value: undefined }, 'a pending next() ends when the subscriber leaves')
  t.equal(stream.listeners, 1, 'released immediately, not at the next message')
  controller.abort()
  t.equal(stream.listeners, 0, 'abort releases the other one')
  t.same(await two.next(), { done: true, value: undefined })
  const id = stream.nextId
  await new Promise((r) => setTimeout(r, 100))
  t.equal(stream.nextId, id, 'the producer stopped')
})

t.test('messageCreated ids keep increasing when Redis restarts empty (the counter is lost)', async (t) => {
  const scratch = await redisScratch(t)
  if (!scratch) return
  const { createMessageStream } = await import('../datasources/demo/message-stream.js')
  const { createCluster } = await import('../gateway/cluster/index.js')
  const cluster = createCluster({ redisUrl, keyPrefix: scratch.keyPrefix, commandTimeoutMs: 1000, lockTtlMs: 200 })
  t.teardown(() => cluster.close())
  const counter = `${scratch.keyPrefix}counter:demo:messageCreated`
  /** The ids of the next `n` messages of a new subscription of `stream`. */
  const ids = async (stream: ReturnType<typeof createMessageStream>, n: number): Promise<number[]> => {
    const it = stream.subscribe(undefined, cluster)
    const out: number[] = []
    while (out.length < n) out.push(Number((await it.next()).value!.messageCreated.id))
    await it.return!()
    return out
  }
  const stream = createMessageStream({ intervalMs: 20 })
  const first = await ids(stream, 3)
  t.ok(Number(await scratch.redis.get(counter)) >= first.at(-1)!, 'the counter lives in Redis')

  // Only this test's key is deleted (never FLUSHALL: other tests share the server).
  await scratch.redis.del(counter)
  const sameProcess = await ids(stream, 3)
  t.ok(sameProcess[0]! > first.at(-1)!, `an instance that saw ${first.at(-1)} goes on above it: ${sameProcess.join(', ')}`)

  await scratch.redis.del(counter)
  const restarted = await ids(createMessageStream({ intervalMs: 20 }), 3)
  t.ok(restarted[0]! > sameProcess.at(-1)!, `a new process on an empty Redis goes on above ${sameProcess.at(-1)}: ${restarted.join(', ')}`)
  const all = [...first, ...sameProcess, ...restarted]
  t.ok(all.every((id, i) => i === 0 || id > all[i - 1]!), `strictly increasing: ${all.join(', ')}`)
})
