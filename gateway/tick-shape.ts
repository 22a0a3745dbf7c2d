/**
 * Keeps V8's shape of Node's `process.nextTick` objects fixed for the life of the gateway's process
 * (issue 30; bench/README "Last figures", `bench/tick-feedback.mjs`).
 *
 * Node builds every tick as an object literal with computed keys — on Node 20 `{ [async_id_symbol]:
 * asyncId, [trigger_async_id_symbol]: triggerAsyncId, callback, args }`, on Node 22 and 24 with
 * `[async_context_frame]` (a symbol described `kAsyncContextFrame`) after the two ids — and V8
 * defines each key after the first through a `DefineKeyedOwnPropertyInLiteral` inline cache that
 * holds the map it saw *weakly*. V8 turns such a cache MEGAMORPHIC the first time it sees another
 * map, and never back: from then on every tick of the process goes through V8's runtime
 * (`Runtime_DefineKeyedOwnPropertyInLiteral`, `JSObject::MigrateToMap`). The map did change: an
 * object of the tick's shape built with integer ids at the start of a process was found with a
 * deprecated map later (its id fields generalised to doubles); the maps are also held only weakly,
 * so a collection while no tick is alive could replace them as well. In a process that had built
 * the demo's app this happened in 7 of 22 runs, some seconds into a load, never in a bare
 * `node:http` process; Node's HTTP server makes about 18 ticks per request, and a bare server
 * inside the gateway's process then spent 14.3 µs of CPU per request instead of 11.1 (Node 20,
 * `bench/tick-feedback.mjs`).
 *
 * {@link settleTickShape} builds, once, an object with the same keys in the same order, its ids
 * stored as non-integer numbers (so that the ids' fields are doubles from the start and no later
 * value generalises them), and keeps it for the process' life: its maps, the tick objects' maps,
 * can then neither be collected nor replaced. It must run before Node's `nextTick` has gathered
 * feedback — first thing in the process, as the `tributary` command's entry (cli.ts) does; run later,
 * its generalisation could itself be the change it guards against.
 *
 * Imports only Node's built-ins: it runs before the rest of the command is loaded.
 */
import { createHook } from 'node:async_hooks'

/** What {@link settleTickShape} did. */
export interface TickShapeResult {
  /** True when the shape is held (by this call or an earlier one). */
  settled: boolean
  /** The tick object's keys, in order, as Node's `nextTick` defines them (symbols by description). */
  keys: string[]
  /** The object that holds the shape, for tests (`%HaveSameMap` against a tick object). */
  holder?: object
  /** Why nothing was done: this Node builds its ticks in a shape this file does not know, or a tick caught has other keys. */
  reason?: string
}

/**
 * The tick literal of `process.nextTick` in the Node versions this package supports (`engines`:
 * ≥ 20.19), in its source text: the two id symbols, on Node 22 and 24 the context frame's, then
 * `callback` and `args` (group 1: the context-frame key, when present).
 */
const TICK_LITERAL = /\{\s*\[async_id_symbol\]:[^,{}]*,\s*\[trigger_async_id_symbol\]:[^,{}]*,(\s*\[async_context_frame\]:[^,{}]*,)?\s*callback,\s*args,?\s*\}/

let held: TickShapeResult | undefined

function noop(): void {}

/**
 * Holds the shape of Node's tick objects for the rest of the process (see the file's comment).
 * Idempotent; never throws: on a Node whose `nextTick` builds another shape (its source text, then
 * the keys of one tick caught by an `async_hooks` init hook enabled for that one call), it does
 * nothing and says why (`settled: false`).
 * @returns what was done, and the holding object
 */
export function settleTickShape(): TickShapeResult {
  if (held) return held
  const literal = TICK_LITERAL.exec(Function.prototype.toString.call(process.nextTick))
  if (!literal) return { settled: false, keys: [], reason: "this Node's process.nextTick builds its ticks in an unknown shape" }
  const keys = ['async_id_symbol', 'trigger_async_id_symbol', ...(literal[1] ? ['kAsyncContextFrame'] : []), 'callback', 'args']
  // The symbols are Node's internals: take them from a tick itself, caught by an init hook that is
  // on for this one call (Node 22's timers and AsyncResource carry context-frame symbols of their own).
  let tick: object | undefined
  const hook = createHook({
    init(_id, type, _trigger, resource) {
      if (type === 'TickObject' && tick === undefined) tick = resource as object
    },
  })
  hook.enable()
  try {
    process.nextTick(noop)
  } finally {
    hook.disable()
  }
  const symbols = tick ? Object.getOwnPropertySymbols(tick) : []
  const names = [...symbols.map((s) => s.description ?? ''), ...(tick ? Object.keys(tick) : [])]
  // Every symbol key of the shape comes before its string keys: this lists them in definition order.
  if (names.join(',') !== keys.join(',')) {
    return { settled: false, keys, reason: `a tick has the keys ${names.join(', ') || '(none caught)'}` }
  }
  const [asyncId, triggerId, frame] = symbols as [symbol, symbol, symbol | undefined]
  // The same keys in the same order walk the same map transitions as Node's literal; 0.5 makes the
  // ids' fields doubles, which every later id (an integer) fits without a change.
  const holder = frame !== undefined
    ? { [asyncId]: 0.5, [triggerId]: 0.5, [frame]: undefined, callback: noop, args: undefined }
    : { [asyncId]: 0.5, [triggerId]: 0.5, callback: noop, args: undefined }
  held = { settled: true, keys, holder }
  return held
}
