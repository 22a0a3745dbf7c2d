/**
 * Mutation resolvers (docs/architecture.md §4): `createOneX`, `createManyX`, `updateOneX`, `updateManyX`,
 * `upsertOneX`, `deleteOneX`, `deleteManyX`. Every mutation field of a request on one database runs in
 * ONE transaction (request-transaction.ts), including the read-back of each field's selection (the
 * read compiler with a where on the row's identity). Constraint violations roll back and become
 * `TRB_ERR_DB_*` errors; a missing row for updateOne/deleteOne is
 * `TRB_ERR_DB_NOT_FOUND`. Plans are cached per operation like reads (plan-cache.ts). The relation
 * fields of `createOne`/`updateOne`/`upsertOne` data are nested writes (nested-writes.ts).
 */
import { getNamedType, type GraphQLObjectType, type GraphQLResolveInfo } from 'graphql'
import { AuthForbiddenError, DbInputError, DbNotFoundError } from '../../errors.js'
import { Leaf, NULL, isObj, readArgs, type ArgValue } from './compiler/args.js'
import { raw, sql, type Vars } from './compiler/frag.js'
import { PlanCache } from './compiler/plan-cache.js'
import { andRowFilter, compileList, compileUnique, filteredWhere, listOf, toPlan, type Ctx, type ReadPlan } from './compiler/read.js'
import { withAuth } from './compiler/row-filter.js'
import type { Model, ScalarField } from './compiler/registry.js'
import { chargeNested, compileCreateRow, compileUpdateRow, runCreateRow, runUpdateRow, type CreateRowPlan, type NestedBudget, type UpdateRowPlan } from './nested-writes.js'
import { compileCreateKeyChecks, compileUpdateKeyChecks, keyTargets, runKeyChecks, type KeyChecks } from './key-checks.js'
import { createPairs, identityOf, identitySelect, identityWhere, insertFrag, run, setFrag, stmt, whereLabel, type Stmt } from './write-sql.js'
import { bindAll, computedError, finishRows, makeCtx, type Runtime } from './resolvers.js'
import type { WriteBody } from './resolvers.js'

/** The mutation root fields of a model, without the model name (`createOne` → `createOneX`). */
export type MutationKind = 'createOne' | 'createMany' | 'updateOne' | 'updateMany' | 'upsertOne' | 'deleteOne' | 'deleteMany'

function argsOf(ctx: Ctx, info: GraphQLResolveInfo): Record<string, ArgValue> {
  const def = info.parentType.getFields()[info.fieldName]!
  return readArgs(info.fieldNodes[0]!, def.args, ctx.vars)
}

/** MySQL: resets and reads the count of rows skipped by {@link skipDuplicatesClause}. */
const MYSQL_SKIPPED = { reset: 'SET @trb_skipped = 0', read: 'SELECT @trb_skipped AS n' }

function requireIdentity(model: Model): void {
  if (model.identity.length === 0) throw new DbInputError(`${model.name} has no primary key or non-null unique key: this mutation needs one`)
}

/** The read-back plan: the mutation field's selection on the row whose identity is `extra`. */
function readBack(ctx: Ctx, model: Model, info: GraphQLResolveInfo): ReadPlan {
  const type = getNamedType(info.returnType) as GraphQLObjectType
  const l = compileList(ctx, model, type, info.fieldNodes, {}, null, 'rows', { extraWhere: (a) => identityWhere(ctx, model, a), unordered: true })
  return toPlan(ctx, l.frag, l.post)
}

async function readOne(rt: Runtime, conn: unknown, plan: ReadPlan, vars: Vars, extra: unknown[]): Promise<unknown> {
  let rows: unknown[]
  try {
    rows = await rt.db().values(plan.text, bindAll(plan.params, vars, extra), conn)
  } catch (err) {
    throw computedError(rt, plan, err)
  }
  return finishRows(rows, plan.post)[0] ?? null
}

/**
 * The read-back of a row the mutation wrote (created or updated). On a model with a row filter the
 * read-back is filtered too: a written row the caller could not read (a created or updated row with
 * another owner) fails the field with `TRB_ERR_AUTH_FORBIDDEN`, which rolls the transaction back
 * (Hasura's insert and update "check").
 */
async function readWritten(rt: Runtime, model: Model, conn: unknown, plan: ReadPlan, vars: Vars, extra: unknown[]): Promise<unknown> {
  const row = await readOne(rt, conn, plan, vars, extra)
  if (row === null && rt.reg.rowFilters.has(model.name)) {
    throw new AuthForbiddenError(`the row written to ${model.name} does not pass its row filter (nothing was written)`)
  }
  return row
}

/** The variables to bind: with the request's identity when the source has row filters. */
function bindVars(rt: Runtime, info: GraphQLResolveInfo, context: unknown): Vars {
  return rt.reg.rowFilters.size > 0 ? withAuth(info.variableValues, context) : info.variableValues
}

/**
 * Writes that cannot check the row filter on what they write (`createMany`, a create on a model
 * without identity): refused on a filtered model unless the caller bypasses the filter.
 * @throws AuthForbiddenError
 */
function requireUnfiltered(rt: Runtime, model: Model, vars: Vars, what: string): void {
  const rf = rt.reg.rowFilters.get(model.name)
  if (rf && !(rf.bypass && rf.bypass(vars, []) === 1)) throw new AuthForbiddenError(`${what} on ${model.name} cannot check its row filter on the rows written; use createOne on ${model.name}`)
}

/**
 * The row-filtered models that nested writes under a create or update `data` would create rows in or
 * connect rows of (`create`, `connect`, `connectOrCreate`, `upsert`, a non-empty `set`; any write
 * through a many-to-many shortcut whose join table is filtered), at any depth, and those whose key a
 * nested row's scalar field sets (key-checks.ts checks the root row's own keys). `update`,
 * `updateMany`, `delete`, `deleteMany` and `disconnect` are not listed: their statements AND the
 * target's filter and check updated rows against it (nested-writes.ts).
 */
function nestedModels(rt: Runtime, model: Model, data: ArgValue | undefined): string[] {
  if (rt.reg.rowFilters.size === 0) return []
  const out = new Set<string>()
  const filtered = (m: Model | undefined): void => {
    if (m && rt.reg.rowFilters.has(m.name)) out.add(m.name)
  }
  const joinModel = (table: string): Model | undefined => [...rt.reg.models.values()].find((m) => m.table === table)
  const walk = (m: Model, v: ArgValue | undefined, nested: boolean): void => {
    if (Array.isArray(v)) return v.forEach((x) => walk(m, x, nested))
    if (!isObj(v)) return
    if (nested) for (const name of keyTargets(rt.reg, m, v)) out.add(name)
    for (const [k, input] of Object.entries(v)) {
      const rel = m.relations.get(k)
      const target = rel ? rt.reg.models.get(rel.target) : undefined
      if (!rel || !target || !isObj(input)) continue
      if (rel.via) filtered(joinModel(rel.via.table))
      for (const [op, x] of Object.entries(input)) {
        const items = listOf(x)
        if (op === 'create' || op === 'connect' || op === 'connectOrCreate' || op === 'upsert' || (op === 'set' && items.length > 0)) {
          if (items.length > 0) filtered(target)
        }
        for (const item of items) {
          if (!isObj(item)) continue
          if (op === 'create') walk(target, item, true)
          else if (op === 'connectOrCreate') walk(target, item['create'], true)
          else if (op === 'upsert') {
            walk(target, item['create'], true)
            walk(target, item['update'], true)
          } else if (op === 'update') walk(target, rel.kind === 'many' ? item['data'] : item, true)
          else if (op === 'updateMany') walk(target, item['data'], true)
        }
      }
    }
  }
  walk(model, data, false)
  return [...out]
}

/**
 * Nested writes cannot check row filters on the rows they create or connect: refused when they reach
 * a row-filtered model, unless the caller bypasses its filter.
 * @throws AuthForbiddenError
 */
function requireUnfilteredNested(rt: Runtime, models: readonly string[], vars: Vars): void {
  for (const name of models) requireUnfiltered(rt, rt.reg.models.get(name)!, vars, 'a nested write')
}

/**
 * Builds the mutation bodies of one model (tables only; views are read-only): each runs its
 * statements on `conn`, inside the transaction that request-transaction.ts opened for every
 * mutation field of the request on this database.
 */
export function makeMutationResolvers(rt: Runtime, model: Model): Record<MutationKind, WriteBody> {
  const d = rt.d

  /** The root row of a create, its nested writes and the read-back of the field's selection. */
  interface CreatePlan {
    row: CreateRowPlan
    /** Nested items (each create, connect or connectOrCreate under the root row). */
    nested: number
    /** Row-filtered models its nested writes reach (see {@link nestedModels}). */
    nestedModels: string[]
    /** The root row's keys to row-filtered types (key-checks.ts). */
    keys: KeyChecks
    back: ReadPlan | null
  }
  const compileCreate = (ctx: Ctx, info: GraphQLResolveInfo, data: ArgValue | undefined): CreatePlan => {
    const budget: NestedBudget = { rows: 0, max: rt.maxNestedWrites }
    const row = compileCreateRow(ctx, model, data, [], [], 0, budget)
    const keys = compileCreateKeyChecks(ctx, model, [createPairs(model, data)])
    return { row, nested: budget.rows, nestedModels: nestedModels(rt, model, data), keys, back: model.identity.length ? readBack(ctx, model, info) : null }
  }
  const runCreate = async (conn: unknown, plan: CreatePlan, vars: Vars): Promise<unknown> => {
    if (!plan.back) requireUnfiltered(rt, model, vars, 'a create of a row without a primary key')
    await runKeyChecks(rt, conn, plan.keys, vars)
    const values = await runCreateRow(rt, conn, plan.row, vars, [])
    if (!plan.back) return null
    return readWritten(rt, model, conn, plan.back, vars, model.identity.map((n) => values[n]))
  }

  const createOne = new PlanCache<CreatePlan>()
  const createMany = new PlanCache<{ plain: { s: Stmt; rows: number }[]; skipping: { s: Stmt; rows: number }[] | null; skip: Leaf | null; keys: KeyChecks }>()
  const updateOne = new PlanCache<{ find: Stmt; update: UpdatePlan; back: ReadPlan; label: string }>()
  const updateMany = new PlanCache<{ update: Stmt; keys: KeyChecks }>()
  const upsertOne = new PlanCache<{ find: Stmt; update: UpdatePlan; create: CreatePlan; back: ReadPlan }>()
  const deleteOne = new PlanCache<{ read: ReadPlan; del: Stmt; label: string }>()
  const deleteMany = new PlanCache<Stmt>()
  const tableRef = d.table(model.table)

  /** The UPDATE of one row (by identity) with the relation writes of its data. */
  interface UpdatePlan {
    row: UpdateRowPlan
    nested: number
    /** Row-filtered models its nested writes reach (see {@link nestedModels}). */
    nestedModels: string[]
    /** Keys to row-filtered types that `data` sets (key-checks.ts); `extra` = the row's identity. */
    keys: KeyChecks
  }
  const compileUpdate = (ctx: Ctx, data: ArgValue | undefined): UpdatePlan => {
    const budget: NestedBudget = { rows: 0, max: rt.maxNestedWrites }
    const row = compileUpdateRow(ctx, model, data, 0, budget, false)
    const keys = compileUpdateKeyChecks(ctx, model, data, (a) => identityWhere(ctx, model, a))
    return { row, nested: budget.rows, nestedModels: nestedModels(rt, model, data), keys }
  }
  /** Updates the row whose identity is `id`; returns its identity after the update. */
  const runUpdate = async (conn: unknown, plan: UpdatePlan, vars: Vars, id: unknown[]): Promise<unknown[]> => {
    chargeNested(rt, vars, plan.nested)
    await runKeyChecks(rt, conn, plan.keys, vars, id)
    return runUpdateRow(rt, conn, plan.row, vars, id)
  }

  return {
    createOne: async (conn, info, _args, context) => {
      const plan = createOne.get(info, () => {
        const ctx = makeCtx(rt, info)
        return compileCreate(ctx, info, argsOf(ctx, info)['data'])
      })
      const vars = bindVars(rt, info, context)
      chargeNested(rt, vars, plan.nested)
      requireUnfilteredNested(rt, plan.nestedModels, vars)
      return runCreate(conn, plan, vars)
    },
    createMany: async (conn, info, _args, context) => {
      const plan = createMany.get(info, () => {
        const ctx = makeCtx(rt, info)
        const args = argsOf(ctx, info)
        const groups = new Map<string, [ScalarField, Leaf | typeof NULL][][]>()
        const data = listOf(args['data'])
        if (data.length > ctx.reg.maxTake) throw new DbInputError(`${model.name}: createMany takes at most ${ctx.reg.maxTake} rows per call (maxTake); got ${data.length}`)
        const rows = data.map((row) => createPairs(model, row))
        for (const pairs of rows) {
          const key = pairs.map(([f]) => f.name).join(',')
          groups.set(key, [...(groups.get(key) ?? []), pairs])
        }
        // `skipDuplicates: $v` is read at run time: the plan holds both statement lists.
        const skip = args['skipDuplicates'] instanceof Leaf ? (args['skipDuplicates'] as Leaf) : null
        // Rows of defaults only (`{}`) have no multi-row form on every engine (`DEFAULT VALUES` inserts
        // one row): each is a statement of its own.
        const batches = [...groups.values()].flatMap((rows) => (rows[0]!.length === 0 ? rows.map((r) => [r]) : [rows]))
        const compileRows = (skipDuplicates: boolean) => batches.map((rows) => ({ s: stmt(ctx, insertFrag(ctx, model, rows, { skipDuplicates })), rows: rows.length }))
        return { plain: compileRows(false), skipping: model.insertsRedirected ? null : compileRows(true), skip, keys: compileCreateKeyChecks(ctx, model, rows) }
      })
      const vars = bindVars(rt, info, context)
      requireUnfiltered(rt, model, vars, 'createMany')
      const skipDuplicates = plan.skip !== null && Boolean(plan.skip.get(vars, []))
      if (skipDuplicates && !plan.skipping) {
        throw new DbInputError(`${model.name}: skipDuplicates is not available on a table whose inserts a rule or inheritance redirects (PostgreSQL refuses ON CONFLICT there)`)
      }
      await runKeyChecks(rt, conn, plan.keys, vars)
      let count = 0
      const db = rt.db()
      for (const { s, rows } of skipDuplicates ? plan.skipping! : plan.plain) {
        if (model.insertsRedirected) {
          // The engine counts the rows left in the table itself (0 when a rule moved them): an INSERT
          // without ON CONFLICT writes every row it sends, or fails.
          await db.exec(conn, s.text, run(s, vars))
          count += rows
        } else if (skipDuplicates && d.dialect === 'mysql') {
          await db.exec(conn, MYSQL_SKIPPED.reset, [])
          await db.exec(conn, s.text, run(s, vars))
          count += rows - Number((await db.exec(conn, MYSQL_SKIPPED.read, [])).rows[0]?.['n'] ?? 0)
        } else count += (await db.exec(conn, s.text, run(s, vars))).affected
      }
      return { count }
    },
    updateOne: async (conn, info, _args, context) => {
      requireIdentity(model)
      const plan = updateOne.get(info, () => {
        const ctx = makeCtx(rt, info)
        const args = argsOf(ctx, info)
        return { find: identitySelect(ctx, model, args['where']), update: compileUpdate(ctx, args['data']), back: readBack(ctx, model, info), label: whereLabel(model, args['where']) }
      })
      const vars = bindVars(rt, info, context)
      const found = await rt.db().exec(conn, plan.find.text, run(plan.find, vars))
      if (!found.rows[0]) throw new DbNotFoundError(model.name, plan.label)
      requireUnfilteredNested(rt, plan.update.nestedModels, vars)
      return readWritten(rt, model, conn, plan.back, vars, await runUpdate(conn, plan.update, vars, identityOf(model, found.rows[0])))
    },
    updateMany: async (conn, info, _args, context) => {
      const plan = updateMany.get(info, () => {
        const ctx = makeCtx(rt, info)
        const args = argsOf(ctx, info)
        const { frag } = setFrag(ctx, model, args['data'])
        const w = filteredWhere(ctx, model, tableRef, args['where'])
        const where = w ? sql` WHERE ${w}` : raw('')
        const keys = compileUpdateKeyChecks(ctx, model, args['data'], (a) => filteredWhere(ctx, model, a, args['where']))
        return { update: stmt(ctx, frag ? sql`UPDATE ${tableRef} SET ${frag}${where}` : sql`SELECT COUNT(*) AS n FROM ${tableRef}${where}`), keys }
      })
      const vars = bindVars(rt, info, context)
      await runKeyChecks(rt, conn, plan.keys, vars)
      const res = await rt.db().exec(conn, plan.update.text, run(plan.update, vars))
      return { count: res.rows[0] && 'n' in res.rows[0] ? Number(res.rows[0]['n']) : res.affected }
    },
    upsertOne: async (conn, info, _args, context) => {
      requireIdentity(model)
      const plan = upsertOne.get(info, () => {
        const ctx = makeCtx(rt, info)
        const args = argsOf(ctx, info)
        return { find: identitySelect(ctx, model, args['where']), update: compileUpdate(ctx, args['update']), create: compileCreate(ctx, info, args['create']), back: readBack(ctx, model, info) }
      })
      const vars = bindVars(rt, info, context)
      const found = await rt.db().exec(conn, plan.find.text, run(plan.find, vars))
      if (!found.rows[0]) {
        chargeNested(rt, vars, plan.create.nested)
        requireUnfilteredNested(rt, plan.create.nestedModels, vars)
        return runCreate(conn, plan.create, vars)
      }
      requireUnfilteredNested(rt, plan.update.nestedModels, vars)
      return readWritten(rt, model, conn, plan.back, vars, await runUpdate(conn, plan.update, vars, identityOf(model, found.rows[0])))
    },
    deleteOne: async (conn, info, _args, context) => {
      const plan = deleteOne.get(info, () => {
        const ctx = makeCtx(rt, info)
        const args = argsOf(ctx, info)
        const type = getNamedType(info.returnType) as GraphQLObjectType
        const l = compileList(ctx, model, type, info.fieldNodes, {}, null, 'rows', { extraWhere: (a) => compileUnique(ctx, model, a, args['where']), unordered: true })
        return {
          read: toPlan(ctx, l.frag, l.post),
          del: stmt(ctx, sql`DELETE FROM ${tableRef} WHERE ${andRowFilter(ctx, model, tableRef, compileUnique(ctx, model, tableRef, args['where']))}`),
          label: whereLabel(model, args['where']),
        }
      })
      const vars = bindVars(rt, info, context)
      const row = await readOne(rt, conn, plan.read, vars, [])
      if (row === null) throw new DbNotFoundError(model.name, plan.label)
      await rt.db().exec(conn, plan.del.text, run(plan.del, vars))
      return row
    },
    deleteMany: async (conn, info, _args, context) => {
      const plan = deleteMany.get(info, () => {
        const ctx = makeCtx(rt, info)
        const w = filteredWhere(ctx, model, tableRef, argsOf(ctx, info)['where'])
        return stmt(ctx, sql`DELETE FROM ${tableRef}${w ? sql` WHERE ${w}` : ''}`)
      })
      return { count: (await rt.db().exec(conn, plan.text, run(plan, bindVars(rt, info, context)))).affected }
    },
  }
}
