/**
 * Resolvers of the demo schema. `messageCreated` emits one message per second per subscriber, with
 * an increasing numeric `id` (shared by all subscribers) and the current ISO 8601 date-time as `content`.
 */
import { setTimeout as sleep } from 'node:timers/promises'

/** A demo message. */
export interface Message {
  id: number
  content: string
}

const history: Message[] = [{ id: 0, content: 'Welcome to Tributary' }]
let nextId = 1

/** Interval between two `messageCreated` events, in milliseconds. `DEMO_MESSAGE_INTERVAL_MS` overrides it (tests). */
const intervalMs = Number(process.env.DEMO_MESSAGE_INTERVAL_MS) || 1000

async function* messageStream(signal?: AbortSignal): AsyncGenerator<{ messageCreated: Message }> {
  while (!signal?.aborted) {
    await sleep(intervalMs, undefined, { signal }).catch(() => undefined)
    if (signal?.aborted) return
    const message = { id: nextId++, content: new Date().toISOString() }
    history.push(message)
    if (history.length > 100) history.shift()
    yield { messageCreated: message }
  }
}

export const resolvers = {
  Query: {
    messages: (): Message[] => history,
    deatail: (_: unknown, args: { title: string }): string => `Detail of "${args.title}"`,
  },
  Subscription: {
    messageCreated: {
      subscribe: (_: unknown, __: unknown, context: { signal?: AbortSignal } | undefined) => messageStream(context?.signal),
    },
  },
}
