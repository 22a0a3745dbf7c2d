/**
 * The subscription fields of database change streams (README "Database change streams"):
 *
 * - `<Model>Changed(where)` → `<Model>ChangeEvent { operation, key, old, new }`: one event per row
 *   inserted, updated or deleted by anyone (the change feed, feed.ts);
 * - `<model>Stream(cursor: { column, initialValue }, batchSize, where)` → `[<Model>!]!`: Hasura's
 *   `_stream`, batches of rows after the cursor in the order of a monotonic column.
 *
 * Every event is re-read for its subscriber through the normal read compiler (compiler/read.ts), with
 * the subscriber's identity bound (row-filter.ts `withAuth`): its selection set, relations, `where`
 * and the model's row filter apply, one statement per batch of changes (≤ {@link READ_CHUNK} keys). A
 * change whose row the subscriber may not read (or that no longer matches `where`) is not sent. A
 * deleted row is evaluated on its old values (a one-row derived table in place of the table) when
 * the engine reported them; otherwise it reaches only subscribers without a row filter and `where`.
 * Events wait in an {@link EventQueue} bounded by `maxBufferedEvents` (the events connector's
 * plumbing): past it the subscription ends with `TRB_ERR_EVENTS_SLOW_SUBSCRIBER`.
 */
import {
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  Kind,
  getNullableType,
  parse,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLFieldConfig,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql'
import { DbInputError, EventsSlowSubscriberError } from '../../../errors.js'
import { JSONScalar } from '../../../scalars.js'
import { EventQueue, OVERFLOW } from '../../events/queue.js'
import { Leaf, readArgs, type ArgValue } from '../compiler/args.js'
import { join, constant, type Frag } from '../compiler/frag.js'
import { compileList, toPlan } from '../compiler/read.js'
import { fitsKey } from '../compiler/connection.js'
import type { Model } from '../compiler/registry.js'
import { withAuth } from '../compiler/row-filter.js'
import { bindAll, finishRows, makeCtx, type Runtime } from '../resolvers.js'
import type { ChangeFeed, RowChange } from './feed.js'

/** Most keys one re-read statement asks for. */
export const READ_CHUNK = 100

/** Limits of change subscriptions (`database({ changes })`). */
export interface ChangeLimits {
  /** Most changes waiting for one subscriber; one more ends it with `TRB_ERR_EVENTS_SLOW_SUBSCRIBER`. */
  maxBufferedEvents: number
  /** Largest `batchSize` of a `<model>Stream`; more is `TRB_ERR_DB_INPUT` (400). */
  maxBatchSize: number
}

/** What the change fields of every model of one schema share. */
export interface ChangeShared {
  feed: ChangeFeed
  limits: ChangeLimits
  operation: GraphQLEnumType
  /** Logs a change the gateway dropped (a failed re-read), without the SQL. */
  warn(message: string, details: Record<string, unknown>): void
}

/** The `ChangeOperation` enum of one schema. */
export function changeOperationEnum(): GraphQLEnumType {
  return new GraphQLEnumType({
    name: 'ChangeOperation',
    description: 'What happened to the row.',
    values: { INSERT: { value: 'INSERT' }, UPDATE: { value: 'UPDATE' }, DELETE: { value: 'DELETE' } },
  })
}

/**
 * A field node `{ x { <fields> } }` whose selection adds the given scalar fields to a read: the read
 * compiler returns scalars under their field names (aliases are the executor's business), so the
 * key or cursor of each row is there however the client selected it.
 */
function syntheticNode(fields: readonly string[]): FieldNode {
  const doc = parse(`{ x { ${fields.join(' ')} } }`)
  return (doc.definitions[0] as OperationDefinitionNode).selectionSet.selections[0] as FieldNode
}

/** The nodes of the fields named `name` in a selection set (through fragments), grouped by response key. */
function subfields(set: SelectionSetNode | undefined, name: string, fragments: Record<string, FragmentDefinitionNode>, out = new Map<string, FieldNode[]>(), seen = new Set<string>()): Map<string, FieldNode[]> {
  for (const s of set?.selections ?? []) {
    if (s.kind === Kind.FIELD) {
      if (s.name.value !== name) continue
      const key = s.alias?.value ?? name
      let l = out.get(key)
      if (!l) out.set(key, (l = []))
      l.push(s)
    } else if (s.kind === Kind.INLINE_FRAGMENT) subfields(s.selectionSet, name, fragments, out, seen)
    else if (!seen.has(s.name.value)) {
      seen.add(s.name.value)
      subfields(fragments[s.name.value]?.selectionSet, name, fragments, out, seen)
    }
  }
  return out
}

const leaf = (v: unknown): Leaf => new Leaf(() => v, { value: v }, v)

/** `where` matching any of `keys` (GraphQL field names → values). */
function keysWhere(m: Model, keys: readonly Record<string, unknown>[]): ArgValue {
  if (m.primaryKey.length === 1) {
    const f = m.primaryKey[0]!
    return { [f]: { in: keys.map((k) => leaf(k[f])) } }
  }
  return { OR: keys.map((k) => Object.fromEntries(m.primaryKey.map((f) => [f, { equals: leaf(k[f]) }]))) }
}

/** A key (SQL columns) as GraphQL field names; null when a key column is missing. */
function fieldKey(m: Model, byColumn: Record<string, unknown> | undefined): Record<string, unknown> | null {
  if (!byColumn || typeof byColumn !== 'object') return null
  const out: Record<string, unknown> = {}
  for (const f of m.primaryKey) {
    const col = m.fieldMap.get(f)!.column
    if (!(col in byColumn)) return null
    out[f] = byColumn[col]
  }
  return out
}

/** A key's values as one string (scalar fields come back under their field names, whatever their alias). */
const tuple = (m: Model, k: Record<string, unknown>): string => m.primaryKey.map((f) => String(k[f])).join('\u0000')

/**
 * The subscription iterator of one subscriber: takes the changes waiting in its queue as one batch,
 * turns them into events (`process`), hands them out one by one. `return()` ends the queue at once
 * (also while a read is running).
 */
class ChangeIterator implements AsyncIterableIterator<unknown> {
  private out: unknown[] = []
  constructor(
    private readonly queue: EventQueue,
    private readonly process: (items: unknown[]) => Promise<unknown[]>,
  ) {}

  async next(): Promise<IteratorResult<unknown>> {
    for (;;) {
      if (this.out.length > 0) return { value: this.out.shift(), done: false }
      const first = await this.queue.next()
      if (first.done) return first
      const batch = [first.value, ...this.queue.drain(READ_CHUNK - 1)]
      const overflow = batch.indexOf(OVERFLOW)
      if (overflow >= 0) return { value: OVERFLOW, done: false }
      try {
        this.out = await this.process(batch)
      } catch (err) {
        this.out = [{ [FAILED]: err }]
      }
      if (this.queue.ended && !this.out.length) return { value: undefined, done: true }
    }
  }

  return(): Promise<IteratorResult<unknown>> {
    this.out = []
    return this.queue.return()
  }

  [Symbol.asyncIterator](): this {
    return this
  }
}

const FAILED = Symbol('failed')

/** `resolve` of a change subscription field: the event, or its error. */
function resolveEvent(limits: ChangeLimits): (event: unknown) => unknown {
  return (event) => {
    if (event === OVERFLOW) throw new EventsSlowSubscriberError(String(limits.maxBufferedEvents))
    if (event && typeof event === 'object' && FAILED in event) throw (event as { [FAILED]: unknown })[FAILED]
    return event
  }
}

/**
 * Runs a compiled read for a subscriber (its identity bound, no per-request result budget: a
 * subscription lives long). `cheap` (SQLite: may run in the gateway process, `RunOptions.cheap`):
 * a re-read by primary keys (at most {@link READ_CHUNK}) of one table alias, no relation.
 */
async function read(rt: Runtime, plan: ReturnType<typeof toPlan>, info: GraphQLResolveInfo, context: unknown, cheap = false): Promise<Record<string, unknown>[]> {
  const bindings = bindAll(plan.params, rt.reg.rowFilters.size > 0 ? withAuth(info.variableValues, context) : info.variableValues)
  return finishRows(await rt.db().values(plan.text, bindings, undefined, { light: true, cheap }), plan.post)
}

/** A one-row derived table holding the old values of a deleted row, in place of the model's table. */
function oldRowFrom(rt: Runtime, m: Model, old: Record<string, unknown>): Frag {
  const d = rt.d
  const cols = m.fields.map((f) => {
    const v = old[f.column]
    const value = v !== null && typeof v === 'object' && !Array.isArray(v) ? JSON.stringify(v) : v === undefined ? null : v
    const cast = d.dialect === 'postgres' && /^[a-z][a-z0-9 ,()_]*(\[\])?$/.test(f.dataType) && f.dataType !== 'user-defined' && f.dataType !== 'array' ? `CAST(? AS ${f.dataType})` : '?'
    return { s: `${cast} AS ${d.q(f.column)}`, p: constant(value).p }
  })
  return { s: `(SELECT ${join(cols, ', ').s})`, p: join(cols, ', ').p }
}

/**
 * The subscription fields of one model with a primary key: `<Model>Changed` and `<model>Stream`.
 * @param obj the model's object type
 * @param where its `WhereInput`
 * @param fieldEnum its `ScalarFieldEnum` (the stream's cursor column)
 */
export function changeFields(rt: Runtime, m: Model, obj: GraphQLObjectType, where: GraphQLInputObjectType, fieldEnum: GraphQLEnumType, shared: ChangeShared): Record<string, GraphQLFieldConfig<unknown, unknown>> {
  const { feed, limits } = shared
  const objFields = obj.getFields()
  const keyType = new GraphQLObjectType({
    name: `${m.name}ChangeKey`,
    description: `The primary key of a changed ${m.name}.`,
    fields: Object.fromEntries(m.primaryKey.map((f) => [f, { type: getNullableType(objFields[f]!.type) as GraphQLOutputType }])),
  })
  const eventType = new GraphQLObjectType({
    name: `${m.name}ChangeEvent`,
    description: `A ${m.name} inserted, updated or deleted (by anyone: the gateway, another program, plain SQL).`,
    fields: {
      operation: { type: new GraphQLNonNull(shared.operation) },
      key: { type: new GraphQLNonNull(keyType), description: 'The row\'s primary key (the deleted row\'s, for DELETE).' },
      old: { type: keyType, description: 'UPDATE and DELETE: the primary key before the change.' },
      new: {
        type: obj,
        description: 'INSERT and UPDATE: the row as it is now, read for the subscriber (null for DELETE).',
        resolve: (parent, _a, _c, info) => ((parent as { new?: Record<string, unknown> }).new ?? {})[info.path.key as string] ?? null,
      },
    },
  })
  const cursorInput = new GraphQLInputObjectType({
    name: `${m.name}StreamCursorInput`,
    fields: {
      column: { type: new GraphQLNonNull(fieldEnum), description: 'A column whose values only grow (an auto-increment key, a creation time).' },
      initialValue: { type: JSONScalar, description: 'Rows after this value are sent; null or absent: from the first row.' },
    },
  })
  const filtered = (): boolean => rt.reg.rowFilters.has(m.name)

  /**
   * Binds a read of no row with the subscriber's `where` and identity, without running it: a
   * subscriber the row filter refuses (no token: `TRB_ERR_AUTH_REQUIRED`; a claim missing:
   * `TRB_ERR_AUTH_FORBIDDEN`) or a `where` that cannot be bound fails when it subscribes, not on
   * every event.
   */
  const checkBinding = (info: GraphQLResolveInfo, context: unknown): void => {
    const field = info.parentType.getFields()[info.fieldName]!
    const userWhere = readArgs(info.fieldNodes[0]!, field.args, info.variableValues)['where']
    const ctx = makeCtx(rt, info)
    const keyWhere = keysWhere(m, [Object.fromEntries(m.primaryKey.map((f) => [f, null]))])
    const l = compileList(ctx, m, obj, [syntheticNode(m.primaryKey)], { where: userWhere === undefined ? keyWhere : { AND: [keyWhere, userWhere] } }, null, 'rows', { unordered: true })
    const plan = toPlan(ctx, l.frag, l.post)
    bindAll(plan.params, rt.reg.rowFilters.size > 0 ? withAuth(info.variableValues, context) : info.variableValues)
  }

  /** The events of one batch of changes for one subscriber. */
  const process = async (changes: RowChange[], info: GraphQLResolveInfo, context: unknown): Promise<unknown[]> => {
    const field = info.parentType.getFields()[info.fieldName]!
    const ctxVars = info.variableValues
    const userWhere = readArgs(info.fieldNodes[0]!, field.args, ctxVars)['where']
    const withWhere = (w: ArgValue): ArgValue => (userWhere === undefined ? w : { AND: [w, userWhere] })
    const groups = subfields(info.fieldNodes[0]!.selectionSet, 'new', info.fragments)
    const keyNode = syntheticNode(m.primaryKey)
    // Rows visible to the subscriber, by key tuple: response key of `new` → row.
    const visible = new Map<string, Record<string, unknown>>()
    const upserts = changes.filter((c) => c.op !== 'DELETE').map((c) => fieldKey(m, c.key)).filter((k): k is Record<string, unknown> => k !== null)
    for (let i = 0; i < upserts.length; i += READ_CHUNK) {
      const keys = upserts.slice(i, i + READ_CHUNK)
      const entries = groups.size > 0 ? [...groups] : [['', [] as FieldNode[]] as const]
      for (const [responseKey, nodes] of entries) {
        const ctx = makeCtx(rt, info)
        const l = compileList(ctx, m, obj, [...nodes, keyNode], { where: withWhere(keysWhere(m, keys)) }, null, 'rows', { unordered: true })
        for (const row of await read(rt, toPlan(ctx, l.frag, l.post), info, context, ctx.n <= 1)) {
          const t = tuple(m, row)
          let v = visible.get(t)
          if (!v) visible.set(t, (v = {}))
          if (responseKey) v[responseKey] = row
        }
      }
    }
    const events: unknown[] = []
    for (const c of changes) {
      const key = fieldKey(m, c.key)
      if (!key) continue
      const oldKey = c.oldKey ? fieldKey(m, c.oldKey) : null
      if (c.op !== 'DELETE') {
        const row = visible.get(tuple(m, key))
        if (row) events.push({ operation: c.op, key, old: oldKey, new: row })
        continue
      }
      if (!filtered() && userWhere === undefined) {
        events.push({ operation: 'DELETE', key, old: oldKey ?? key, new: null })
        continue
      }
      // Fail closed: a filtered subscriber gets a delete only when its old values pass the filters.
      if (!c.old) continue
      try {
        const ctx = makeCtx(rt, info)
        const l = compileList(ctx, m, obj, [keyNode], { where: withWhere(keysWhere(m, [key])) }, null, 'rows', { unordered: true, from: oldRowFrom(rt, m, c.old) })
        if ((await read(rt, toPlan(ctx, l.frag, l.post), info, context, ctx.n <= 1)).length > 0) events.push({ operation: 'DELETE', key, old: oldKey ?? key, new: null })
      } catch (err) {
        shared.warn('database changes: a deleted row could not be checked against the filters; not sent', { model: m.name, err: (err as Error).message })
      }
    }
    return events
  }

  const changed: GraphQLFieldConfig<unknown, unknown> = {
    type: new GraphQLNonNull(eventType),
    description: `Every ${m.name} inserted, updated or deleted that the subscriber may read and that matches \`where\` (README "Database change streams").`,
    args: { where: { type: where } },
    subscribe: (_root, _args, context, info) => {
      checkBinding(info, context)
      const queue = new EventQueue(limits.maxBufferedEvents)
      queue.onEnd = feed.listen(m.table, (changes) => {
        for (const c of changes) queue.push(c)
      })
      return new ChangeIterator(queue, (items) => process(items as RowChange[], info, context))
    },
    resolve: resolveEvent(limits),
  }

  const stream: GraphQLFieldConfig<unknown, unknown> = {
    type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(obj))),
    description: `${m.name} rows in batches of at most \`batchSize\` (1 to ${limits.maxBatchSize}), after \`cursor.initialValue\` in the order of \`cursor.column\`, then new ones as they come (Hasura's \`_stream\`).`,
    args: { cursor: { type: new GraphQLNonNull(cursorInput) }, batchSize: { type: new GraphQLNonNull(GraphQLInt) }, where: { type: where } },
    subscribe: (_root, args, context, info) => {
      const batchSize = args['batchSize'] as number
      if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > limits.maxBatchSize) {
        throw new DbInputError(`batchSize must be 1 to ${limits.maxBatchSize}; got ${batchSize}`)
      }
      checkBinding(info, context)
      const cursorArg = args['cursor'] as { column: string; initialValue?: unknown }
      const column = cursorArg.column
      let cursor: unknown = cursorArg.initialValue ?? null
      const cursorField = m.fieldMap.get(column)
      if (cursor !== null && (typeof cursor === 'object' || !cursorField || !('scalar' in cursorField) || !fitsKey(cursorField.scalar, cursor))) {
        throw new DbInputError(`cursor.initialValue must be a value of ${column}'s type (a number or a string)`)
      }
      const field = info.parentType.getFields()[info.fieldName]!
      const userWhere = readArgs(info.fieldNodes[0]!, field.args, info.variableValues)['where']
      const queue = new EventQueue(limits.maxBufferedEvents)
      // One marker for "read again"; changes themselves are read back through the cursor.
      let pending = false
      queue.onEnd = feed.listen(m.table, () => {
        if (!pending) (pending = true), queue.push('tick')
      })
      queue.push('tick')
      const cursorNode = syntheticNode([column])
      return new ChangeIterator(queue, async () => {
        pending = false
        const batches: unknown[] = []
        const ctx = makeCtx(rt, info)
        const after: ArgValue | undefined = cursor === null ? undefined : { [column]: { gt: leaf(cursor) } }
        const w: ArgValue | undefined = after && userWhere !== undefined ? { AND: [after, userWhere] } : (after ?? userWhere)
        const l = compileList(ctx, m, obj, [...info.fieldNodes, cursorNode], { ...(w !== undefined ? { where: w } : {}), orderBy: [{ [column]: leaf('asc') }], take: leaf(batchSize) }, null, 'rows')
        const rows = await read(rt, toPlan(ctx, l.frag, l.post), info, context)
        if (rows.length > 0) {
          cursor = rows[rows.length - 1]![column] ?? cursor
          batches.push(rows)
        }
        // A full batch: more may wait; the next one is read once this one was taken.
        if (rows.length === batchSize && !pending) (pending = true), queue.push('tick')
        return batches
      })
    },
    resolve: resolveEvent(limits),
  }
  return { [`${m.name}Changed`]: changed, [`${m.name.charAt(0).toLowerCase()}${m.name.slice(1)}Stream`]: stream }
}
