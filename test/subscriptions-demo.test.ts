/** The demo subscription over WebSocket (graphql-transport-ws) on /graphql, with a real client. */
import t from 'tap'
import { createClient } from 'graphql-ws'
import WebSocket from 'ws'
import { startDemo } from './helpers/demo.js'

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
