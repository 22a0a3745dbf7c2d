/**
 * What a route knows about the errors of the body it sends, told to the admin console's traffic hook
 * (console.ts) so that it need not scan the body for them. The console counts a request as failed
 * when its JSON answer carries `"errors"` (and records those errors); without this mark it finds out
 * by searching every body for the text `"errors"` — on a 33 KB answer of a nested read, a few per cent
 * of the gateway's CPU per request. A route that built the body itself (the GraphQL endpoint) knows.
 */
import type { FastifyReply } from 'fastify'

const kWithoutErrors = Symbol('tributary.answerWithoutErrors')
type Marked = { [kWithoutErrors]?: unknown }

/**
 * Marks `payload`, the exact string or Buffer about to be passed to `reply.send`, as a JSON answer
 * without a top-level `errors` member. Only that payload is covered: when an `onSend` hook replaces
 * it (or the route sends something else), the console scans the replacement as before.
 */
export function markAnswerWithoutErrors(reply: FastifyReply, payload: string | Buffer): void {
  ;(reply as unknown as Marked)[kWithoutErrors] = payload
}

/**
 * True when `payload` is the one {@link markAnswerWithoutErrors} marked on `reply` (same string or
 * Buffer): it carries no errors and needs no scan. False when nothing was marked or the payload is
 * another one.
 */
export function isAnswerWithoutErrors(reply: FastifyReply, payload: unknown): boolean {
  const marked = (reply as unknown as Marked)[kWithoutErrors]
  return marked !== undefined && marked === payload
}
