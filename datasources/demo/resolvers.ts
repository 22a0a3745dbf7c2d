/**
 * Resolvers of the demo schema. `messageCreated` is one shared stream (see ./message-stream.ts): one
 * message per second (`DEMO_MESSAGE_INTERVAL_MS` overrides it, for tests), produced once across every
 * instance of the gateway's cluster (`context.cluster`) while anyone listens and delivered to every
 * subscriber, with an increasing numeric `id` (as a String) and the current ISO 8601 date-time as `content`.
 */
import type { Cluster } from '../../gateway/cluster/index.js'
import { createMessageStream, type Message } from './message-stream.js'

export type { Message } from './message-stream.js'

const history: Message[] = [{ id: '0', content: 'Welcome to Tributary' }]

/** The demo's message stream (one per process; one producer per cluster). */
export const messageStream = createMessageStream({
  intervalMs: Number(process.env.DEMO_MESSAGE_INTERVAL_MS) || 1000,
  onMessage(message) {
    history.push(message)
    if (history.length > 100) history.shift()
  },
})

export const resolvers = {
  Query: {
    messages: (): Message[] => history,
    deatail: (_: unknown, args: { title: string }): string => `Detail of "${args.title}"`,
  },
  Subscription: {
    messageCreated: {
      subscribe: (_: unknown, __: unknown, context: { signal?: AbortSignal; cluster?: Cluster } | undefined) => messageStream.subscribe(context?.signal, context?.cluster),
    },
  },
}
