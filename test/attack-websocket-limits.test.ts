/**
 * Attack: subscriptions per WebSocket and WebSockets per gateway (issue 7 item 6), with real
 * graphql-ws clients. The operation over `graphql.maxSubscriptionsPerSocket` gets a graphql-ws
 * `error` message (TRB_ERR_GRAPHQL_LIMIT) and the socket stays open; the socket over
 * `server.maxWebSockets` is closed with 4503. The cost and input-depth limits hold on the socket too.
 */
import t from 'tap'
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'
import { startDemo } from './helpers/demo.js'

type Result = { data?: unknown; errors?: readonly { message: string; extensions?: { code?: string } }[] }

/** Subscribes and resolves with the first result or error. */
function first(client: Client, query: string, variables?: Record<string, unknown>): Promise<Result | { failed: Result['errors'] }> {
  return new Promise((resolve) => {
    const stop = client.subscribe(
      { query, ...(variables ? { variables } : {}) },
      {
        next: (r) => {
          stop()
          resolve(r as Result)
        },
        error: (e) => resolve({ failed: (Array.isArray(e) ? e : [{ message: String((e as Error).message ?? e) }]) as Result['errors'] }),
        complete: () => undefined,
      },
    )
  })
}

t.test('WebSocket caps', async (t) => {
  const { url } = await startDemo(t, { listen: true, override: { graphql: { maxSubscriptionsPerSocket: 3 }, server: { maxWebSockets: 2 } } })
  const wsUrl = url.replace(/^http/, 'ws') + '/graphql'
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, lazy: false })
  t.teardown(() => client.dispose())

  t.test('the operation over maxSubscriptionsPerSocket gets an error; the socket stays open', async (t) => {
    const events: Result[] = []
    const running: (() => void)[] = []
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve, reject) => {
        running.push(client.subscribe({ query: 'subscription { messageCreated { id } }' }, {
          next: (r) => {
            events.push(r as Result)
            resolve()
          },
          error: reject,
          complete: () => undefined,
        }))
      })
    }
    t.equal(events.length >= 3, true, 'three subscriptions run')
    const fourth = await first(client, 'subscription { messageCreated { id } }')
    t.ok('failed' in fourth, 'the fourth gets an error message')
    const errors = (fourth as { failed: Result['errors'] }).failed!
    t.equal(errors[0].extensions?.code, 'TRB_ERR_GRAPHQL_LIMIT')
    t.match(errors[0].message, /already runs 3 operations; the maximum is 3 \(maxSubscriptionsPerSocket\)/)
    running.pop()!()
    await new Promise((r) => setTimeout(r, 50))
    const query = await first(client, '{ todo_findManyTodo(take: 1) { id } }')
    t.same(query, { data: { todo_findManyTodo: [{ id: 1 }] } }, 'after one completes, the same socket runs another operation')
    for (const stop of running) stop()
  })

  t.test('cost and input depth are checked on the socket too', async (t) => {
    const aliases = Array.from({ length: 30 }, (_, i) => `a${i}: todo_findManyTodo(take: $n) { id }`).join(' ')
    const costly = await first(client, `query($n: Int) { ${aliases} }`, { n: 1000 })
    t.match((costly as { failed: Result['errors'] }).failed?.[0], { message: /costs 30000, more than the maximum of 20000/, extensions: { code: 'TRB_ERR_GRAPHQL_LIMIT' } })
    let w: unknown = { id: { equals: 1 } }
    for (let i = 0; i < 1000; i++) w = { NOT: w }
    const deep = await first(client, 'query($w: todo_TodoWhereInput) { todo_findManyTodo(where: $w) { id } }', { w })
    t.match((deep as { failed: Result['errors'] }).failed?.[0], { message: /more than 32 levels/, extensions: { code: 'TRB_ERR_GRAPHQL_LIMIT' } })
    t.same(await first(client, '{ todo_findManyTodo(take: 1) { id } }'), { data: { todo_findManyTodo: [{ id: 1 }] } })
  })

  t.test('the socket over maxWebSockets is closed with 4503', async (t) => {
    // `client` holds one socket; a second fits, a third does not.
    const open = () => new WebSocket(wsUrl, 'graphql-transport-ws')
    const second = open()
    await new Promise((r) => second.once('open', r))
    const third = open()
    const [code, reason] = await new Promise<[number, string]>((resolve) => third.once('close', (c, r) => resolve([c, r.toString()])))
    t.equal(code, 4503)
    t.match(reason, /Too many connections/)
    second.close()
    await new Promise((r) => second.once('close', r))
    await new Promise((r) => setTimeout(r, 50))
    const fourth = open()
    await new Promise((r) => fourth.once('open', r))
    fourth.send(JSON.stringify({ type: 'connection_init' }))
    const ack = await new Promise<string>((resolve) => fourth.once('message', (m) => resolve(m.toString())))
    t.same(JSON.parse(ack), { type: 'connection_ack' }, 'once one closes, a new socket is accepted')
    fourth.close()
  })
})
