/**
 * Query resolvers (docs/architecture.md §4): `findUniqueX`, `findFirstX`, `findManyX`, `aggregateX`,
 * `groupByX`, and the raw SQL fields `executeRaw` / `queryRaw`. Each root field runs ONE statement,
 * compiled once per operation (plan-cache.ts) and bound with the request's variables. Nested
 * relation fields read their value from the parent's JSON by response key (aliases work).
 */
import { getNamedType, type GraphQLFieldResolver, type GraphQLObjectType, type GraphQLResolveInfo } from 'graphql'
import { DbInputError, DbRawError } from '../../errors.js'
import { readArgs } from './compiler/args.js'
import { compileAggregate, compileGroupBy } from './compiler/aggregate.js'
import { cancelWatchOf, type Db } from './compiler/db.js'
import type { SqlDialect } from './compiler/dialect.js'
import type { Getter, Vars } from './compiler/frag.js'
import { PlanCache } from './compiler/plan-cache.js'
import { compileConnection, type CompiledConnection } from './compiler/connection.js'
import { withAuth } from './compiler/row-filter.js'
import { compileList, compileUnique, computedPlans, toPlan, type CompiledList, type Ctx, type Post, type ReadPlan } from './compiler/read.js'
import type { Model, Registry } from './compiler/registry.js'
import { mapDbError, mapFunctionError } from './db-errors.js'
import type { LookupBatcher } from './lookup-batch.js'
import { assertRawSqliteAllowed } from './sqlite-raw-guard.js'
import { chargeResult, resultRoom, textLength } from '../../result-budget.js'

/**
 * The work of one mutation field, run on `conn` inside the request's transaction on its database.
 * `args` are the field's coerced arguments, `context` the request's (its `auth` binds row filters).
 */
export type WriteBody = (conn: unknown, info: GraphQLResolveInfo, args: Record<string, unknown>, context: unknown) => Promise<unknown>

/** What the resolvers of one schema share. */
export interface Runtime {
  reg: Registry
  d: SqlDialect
  /** The statement runner; throws when the schema was built without a database. */
  db(): Db
  /** Show engine messages of failed raw queries (development); otherwise a generic message. */
  rawErrors: boolean
  /** Most nested writes of one request on this source: items, and rows `set`/`updateMany`/`deleteMany` change (`database({ maxNestedWrites })`). */
  maxNestedWrites: number
  /** Rows written by nested writes so far, per execution (its variable values object, as request-transaction.ts keys it). */
  nestedWrites: WeakMap<object, number>
  /** Concurrent `findUnique` lookups of one statement, batched (PostgreSQL direct plans, lookup-batch.ts). */
  lookups: LookupBatcher
}

/** A fresh compile context for one root field. */
export function makeCtx(rt: Runtime, info: Pick<GraphQLResolveInfo, 'schema' | 'fragments' | 'variableValues'>): Ctx {
  return { reg: rt.reg, d: rt.d, schema: info.schema, fragments: info.fragments, vars: info.variableValues as Vars, n: 0 }
}

/** Evaluates a plan's getters. */
export function bindAll(params: readonly Getter[], vars: Vars, extra: readonly unknown[] = []): unknown[] {
  const out = new Array<unknown>(params.length)
  for (let i = 0; i < params.length; i++) out[i] = params[i]!(vars, extra)
  return out
}

/** Parses JSON rows (strings from SQLite, MariaDB and PostgreSQL, values from MySQL) and applies the plan's post-processing. */
export function finishRows(rows: unknown[], post: Post | null): Record<string, unknown>[] {
  let out: Record<string, unknown>[]
  if (rows.length > 0 && typeof rows[0] === 'string') {
    out = rows.length === 1 ? [JSON.parse(rows[0] as string)] : (JSON.parse(`[${(rows as string[]).join(',')}]`) as Record<string, unknown>[])
  } else out = rows.map((r) => (typeof r === 'string' ? JSON.parse(r) : r)) as Record<string, unknown>[]
  if (post) for (let i = 0; i < out.length; i++) post(out[i]!)
  return out
}

type Resolver = GraphQLFieldResolver<unknown, unknown>

function argsOf(ctx: Ctx, info: GraphQLResolveInfo) {
  const def = info.parentType.getFields()[info.fieldName]!
  return readArgs(info.fieldNodes[0]!, def.args, ctx.vars)
}

function returnObject(info: GraphQLResolveInfo): GraphQLObjectType {
  return getNamedType(info.returnType) as GraphQLObjectType
}

/**
 * Plans that are provably cheap: a `findUnique` (primary key or unique constraint, both indexed)
 * reading one table with no relation (the compiler used one table alias). On SQLite they may run in
 * the gateway process; everything else runs in a worker process (compiler/db.ts).
 */
export const cheapPlans = new WeakSet<ReadPlan>()

/**
 * Read plans without a relation filter of the request (`Ctx.relationFiltered`): their work is bounded
 * by the rows they read and return, which the cost limit prices, not multiplied by a correlated
 * subquery per row filtered. On SQLite they may use the worker process kept for light work
 * (`RunOptions.light`, sqlite-workers.ts).
 */
export const lightPlans = new WeakSet<ReadPlan>()

/** Records `plan` in {@link lightPlans} when its compile context compiled no relation filter of the request. */
export function markLight(ctx: Ctx, plan: ReadPlan): ReadPlan {
  if (!ctx.relationFiltered) lightPlans.add(plan)
  return plan
}

/** Marks `plan` cheap when its compile context used a single table alias (and light, see {@link markLight}). */
export function markCheap(ctx: Ctx, plan: ReadPlan): ReadPlan {
  if (ctx.n <= 1) cheapPlans.add(plan)
  return markLight(ctx, plan)
}

/**
 * The most rows a bounded read may ask for (its bound LIMIT) and still run in the gateway process
 * (see {@link boundedReads}).
 */
export const MAX_IN_PROCESS_ROWS = 100

/**
 * Plans that may be cheap depending on their LIMIT: `findMany`/`findFirst` statements of the shape
 * `SELECT <columns of t0> FROM <table> AS t0 [ORDER BY …] LIMIT ?` (one table alias: no relation
 * field; no WHERE, cursor or OFFSET: see `CompiledList.limitOnly`), by the model's table name. Such
 * a statement runs in the gateway process when, at run time, its LIMIT is at most
 * {@link MAX_IN_PROCESS_ROWS} and SQLite's own query plan shows that it reads at most that many rows
 * (`Db.boundedScan`: a table, scanned in the order asked, no sort); otherwise in a worker process.
 */
export const boundedReads = new WeakMap<ReadPlan, string>()

/** Records `plan` in {@link boundedReads} when `list` is LIMIT-only and the compile context used a single table alias. */
export function markBounded(ctx: Ctx, model: Model, list: CompiledList, plan: ReadPlan): ReadPlan {
  if (list.limitOnly && ctx.n <= 1) boundedReads.set(plan, model.table)
  return markLight(ctx, plan)
}

/**
 * True when `plan` bound to `bindings` may run in the gateway process: a {@link cheapPlans} plan, or
 * a {@link boundedReads} plan whose LIMIT (its last binding) is an integer from 0 to
 * {@link MAX_IN_PROCESS_ROWS} and whose SQLite query plan is one ordered scan of a table.
 */
export function isCheap(db: Db, plan: ReadPlan, bindings: readonly unknown[]): boolean {
  if (cheapPlans.has(plan)) return true
  const table = boundedReads.get(plan)
  if (table === undefined) return false
  const limit = bindings[bindings.length - 1]
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > MAX_IN_PROCESS_ROWS) return false
  return db.boundedScan(plan.text, bindings, table)
}

/** The request a resolver context stands for, charged with its SQLite worker time (`RunOptions.owner`); undefined for a context that is not an object. */
export function ownerOf(context: unknown): object | undefined {
  return typeof context === 'object' && context !== null ? context : undefined
}

/**
 * The error of a read plan: for a plan that calls computed fields' functions ({@link computedPlans}),
 * a function that failed on the request's arguments (RAISE, a data exception) is `TRB_ERR_DB_VALUE`
 * (db-errors.ts `mapFunctionError`); any other error is returned as is.
 */
export function computedError(rt: Runtime, plan: ReadPlan, err: unknown): unknown {
  return computedPlans.has(plan) ? mapFunctionError(err, rt.reg, 'the arguments of a computed field', rt.rawErrors) : err
}

async function runRead(rt: Runtime, plan: ReadPlan, vars: Vars, context: unknown): Promise<Record<string, unknown>[]> {
  const db = rt.db()
  const bindings = bindAll(plan.params, rt.reg.rowFilters.size > 0 ? withAuth(vars, context) : vars)
  let rows: unknown[]
  try {
    rows = await db.values(plan.text, bindings, undefined, { cheap: isCheap(db, plan, bindings), light: lightPlans.has(plan), owner: ownerOf(context), cancel: cancelWatchOf(context), maxResultChars: resultRoom(context) })
  } catch (err) {
    throw computedError(rt, plan, err)
  }
  chargeResult(context, textLength(rows))
  return finishRows(rows, plan.post)
}

/** Builds the query resolvers of one model. */
export function makeQueryResolvers(rt: Runtime, model: Model): Record<string, Resolver> {
  const unique = new PlanCache<ReadPlan>()
  const first = new PlanCache<ReadPlan>()
  const many = new PlanCache<ReadPlan>()
  const aggregate = new PlanCache<ReadPlan>()
  const groupBy = new PlanCache<ReadPlan>()
  const connection = new PlanCache<{ plan: ReadPlan; finish: CompiledConnection['finish'] }>()
  return {
    // A Relay connection (compiler/connection.ts): one statement, finished into edges and pageInfo.
    connection: async (_s, _a, context, info) => {
      const c = connection.get(info, () => {
        const ctx = makeCtx(rt, info)
        const cc = compileConnection(ctx, model, returnObject(info), info.fieldNodes, argsOf(ctx, info))
        return { plan: markLight(ctx, toPlan(ctx, cc.frag, cc.post)), finish: cc.finish }
      })
      const row = (await runRead(rt, c.plan, info.variableValues, context))[0] ?? {}
      return c.finish(row, info.variableValues)
    },
    findUnique: async (_s, _a, context, info) => {
      const plan = unique.get(info, () => {
        const ctx = makeCtx(rt, info)
        const args = argsOf(ctx, info)
        const l = compileList(ctx, model, returnObject(info), info.fieldNodes, {}, null, 'rows', {
          extraWhere: (a) => compileUnique(ctx, model, a, args['where']),
          unordered: true,
        })
        return markCheap(ctx, toPlan(ctx, l.frag, l.post))
      })
      return (await runRead(rt, plan, info.variableValues, context))[0] ?? null
    },
    findFirst: async (_s, _a, context, info) => {
      const plan = first.get(info, () => {
        const ctx = makeCtx(rt, info)
        const l = compileList(ctx, model, returnObject(info), info.fieldNodes, argsOf(ctx, info), null, 'rows', { first: true })
        return markBounded(ctx, model, l, toPlan(ctx, l.frag, l.post))
      })
      return (await runRead(rt, plan, info.variableValues, context))[0] ?? null
    },
    findMany: async (_s, _a, context, info) => {
      const plan = many.get(info, () => {
        const ctx = makeCtx(rt, info)
        const l = compileList(ctx, model, returnObject(info), info.fieldNodes, argsOf(ctx, info), null, 'rows')
        return markBounded(ctx, model, l, toPlan(ctx, l.frag, l.post))
      })
      return runRead(rt, plan, info.variableValues, context)
    },
    aggregate: async (_s, _a, context, info) => {
      const plan = aggregate.get(info, () => {
        const ctx = makeCtx(rt, info)
        return markLight(ctx, compileAggregate(ctx, model, returnObject(info), info.fieldNodes, argsOf(ctx, info)))
      })
      return (await runRead(rt, plan, info.variableValues, context))[0] ?? {}
    },
    groupBy: async (_s, _a, context, info) => {
      const plan = groupBy.get(info, () => {
        const ctx = makeCtx(rt, info)
        return markLight(ctx, compileGroupBy(ctx, model, returnObject(info), info.fieldNodes, argsOf(ctx, info)))
      })
      return runRead(rt, plan, info.variableValues, context)
    },
  }
}

/** Resolver of relation fields and other JSON-keyed fields: reads the parent's value by response key (alias or name). */
export const byResponseKey: Resolver = (parent, _args, _ctx, info) => (parent as Record<string, unknown>)[info.path.key as string]

function toJsonValue(v: unknown): unknown {
  if (v === null || v === undefined) return null
  if (typeof v === 'bigint') return v.toString()
  if (v instanceof Date) return v.toISOString()
  if (Buffer.isBuffer(v)) return v.toString('base64')
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64')
  return v
}

function rawBindings(parameters: unknown): unknown[] | Record<string, unknown> {
  if (parameters === null || parameters === undefined) return []
  const conv = (v: unknown): unknown => (v !== null && typeof v === 'object' && !Array.isArray(v) ? JSON.stringify(v) : typeof v === 'boolean' ? (v ? 1 : 0) : v)
  if (Array.isArray(parameters)) return parameters.map(conv)
  if (typeof parameters === 'object') return Object.fromEntries(Object.entries(parameters as Record<string, unknown>).map(([k, v]) => [k, conv(v)]))
  throw new DbInputError('`parameters` must be a JSON array (for `?` placeholders) or object (for `:name` placeholders)')
}

/**
 * `executeRaw(query, parameters)` → affected rows (a mutation body, run in the request's transaction)
 * and `queryRaw(query, parameters)` → rows as JSON.
 * Only in the schema of a source with `rawSql: true` (build-schema.ts). Each runs once: a failure,
 * a timeout (`TRB_ERR_DB_TIMEOUT`) or a cancellation (`TRB_ERR_DB_CANCELLED`) is reported, never retried.
 * Placeholders are `?` (positional, `parameters` a JSON array) or `:name` (`parameters` an object) on
 * every engine; values are always bound, never interpolated. On SQLite a statement that reaches
 * another file or code is refused with `TRB_ERR_DB_RAW_REFUSED` (sqlite-raw-guard.ts).
 */
export function makeRawResolvers(rt: Runtime): { executeRaw: WriteBody; queryRaw: Resolver } {
  const prepare = (args: { query?: unknown; parameters?: unknown }): { sql: string; bindings: unknown[] } => {
    if (typeof args.query !== 'string' || args.query.trim() === '') throw new DbInputError('`query` must be a non-empty SQL string')
    // SQLite: nothing that reaches another file or code (ATTACH, VACUUM INTO, load_extension, PRAGMA).
    if (rt.reg.dialect === 'sqlite') assertRawSqliteAllowed(args.query)
    const b = rawBindings(args.parameters)
    const native = (Array.isArray(b) ? rt.db().knex.raw(args.query, b as never[]) : rt.db().knex.raw(args.query, b as never)).toSQL().toNative()
    return { sql: native.sql, bindings: [...native.bindings] }
  }
  const fail = (err: unknown): never => {
    const mapped = mapDbError(err, rt.reg.dialect, rt.reg)
    if (mapped !== err) throw mapped
    if (err instanceof Error && 'code' in err && String((err as { code: unknown }).code).startsWith('TRB_ERR_')) throw err
    const message = rt.rawErrors && err instanceof Error ? err.message : 'the database rejected the statement'
    throw new DbRawError(message, { cause: err })
  }
  return {
    // A mutation field: it runs in the request's transaction on this database (request-transaction.ts).
    executeRaw: async (conn, _info, args) => {
      try {
        const { sql, bindings } = prepare(args)
        const res = await rt.db().exec(conn, sql, bindings, undefined, true)
        return res.affected
      } catch (err) {
        return fail(err)
      }
    },
    queryRaw: async (_s, args, context) => {
      try {
        const { sql, bindings } = prepare(args)
        const res = await rt.db().execute(sql, bindings, cancelWatchOf(context), true)
        return res.rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, toJsonValue(v)])))
      } catch (err) {
        return fail(err)
      }
    },
  }
}
