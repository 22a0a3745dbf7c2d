/**
 * Mutation resolvers (docs/architecture.md §4): `createOneX`, `createManyX`, `updateOneX`, `updateManyX`,
 * `upsertOneX`, `deleteOneX`, `deleteManyX`. Every mutation field of a request on one database runs in
 * ONE transaction (request-transaction.ts), including the read-back of each field's selection (the
 * read compiler with a where on the row's identity). Constraint violations roll back and become
 * `TRB_ERR_DB_*` errors; a missing row for updateOne/deleteOne is
 * `TRB_ERR_DB_NOT_FOUND`. Plans are cached per operation like reads (plan-cache.ts).
 */
import { getNamedType, type GraphQLObjectType, type GraphQLResolveInfo } from 'graphql'
import { AuthForbiddenError, DbInputError, DbNotFoundError } from '../../errors.js'
import { Leaf, NULL, isObj, listLeaf, readArgs, type ArgValue } from './compiler/args.js'
import { constant as constantFrag, join, raw, sql, type Frag, type Getter, type Vars } from './compiler/frag.js'
import { PlanCache } from './compiler/plan-cache.js'
import { andRowFilter, bound, compileList, compileUnique, filteredWhere, listOf, toPlan, type Ctx, type ReadPlan } from './compiler/read.js'
import { withAuth } from './compiler/row-filter.js'
import type { Model, ScalarField } from './compiler/registry.js'
import { bindAll, finishRows, makeCtx, type Runtime } from './resolvers.js'
import type { WriteBody } from './request-transaction.js'

/** A compiled statement: SQL text (engine placeholders) and its getters. */
interface Stmt {
  text: string
  params: Getter[]
}

function stmt(ctx: Ctx, f: Frag): Stmt {
  return { text: ctx.d.native(f.s), params: f.p }
}

function run(s: Stmt, vars: Vars, extra: readonly unknown[] = []): unknown[] {
  return s.params.map((g) => g(vars, extra))
}

/** The mutation root fields of a model, without the model name (`createOne` → `createOneX`). */
export type MutationKind = 'createOne' | 'createMany' | 'updateOne' | 'updateMany' | 'upsertOne' | 'deleteOne' | 'deleteMany'

function argsOf(ctx: Ctx, info: GraphQLResolveInfo): Record<string, ArgValue> {
  const def = info.parentType.getFields()[info.fieldName]!
  return readArgs(info.fieldNodes[0]!, def.args, ctx.vars)
}

/** `[field, value]` pairs of a create data object (scalar fields only; relation inputs are ignored). */
function createPairs(model: Model, data: ArgValue | undefined): [ScalarField, Leaf | typeof NULL][] {
  if (!isObj(data)) return []
  const out: [ScalarField, Leaf | typeof NULL][] = []
  for (const [key, v] of Object.entries(data)) {
    const f = model.fieldMap.get(key)
    if (f && (v instanceof Leaf || v === NULL)) out.push([f, v])
    else if (f?.list && Array.isArray(v)) out.push([f, listLeaf(v)])
  }
  return out
}

/**
 * The clause that skips rows conflicting with a unique or primary key, and only those: every other
 * violation (NOT NULL, CHECK, foreign key, a value too long) still fails the statement.
 * - PostgreSQL, SQLite: `ON CONFLICT DO NOTHING` (SQLite applies it to uniqueness constraints only).
 * - MySQL/MariaDB: `ON DUPLICATE KEY UPDATE c = c` (never `INSERT IGNORE`, which turns every error
 *   into a warning: truncated strings, dropped foreign keys). The update counts the skipped rows in
 *   the session variable `@trb_skipped` ({@link MYSQL_SKIPPED}), since the affected-rows count of
 *   mysql2 (CLIENT_FOUND_ROWS) is 1 for an inserted row and for a skipped one alike.
 */
function skipDuplicatesClause(d: Ctx['d'], model: Model): string {
  if (d.dialect !== 'mysql') return ' ON CONFLICT DO NOTHING'
  const f = model.fieldMap.get(model.primaryKey[0] ?? '') ?? model.fields[0]!
  const c = d.q(f.column)
  return ` ON DUPLICATE KEY UPDATE ${c} = IF((@trb_skipped := @trb_skipped + 1) IS NULL, ${c}, ${c})`
}

/** MySQL: resets and reads the count of rows skipped by {@link skipDuplicatesClause}. */
const MYSQL_SKIPPED = { reset: 'SET @trb_skipped = 0', read: 'SELECT @trb_skipped AS n' }

function insertFrag(ctx: Ctx, model: Model, rows: [ScalarField, Leaf | typeof NULL][][], opts: { returning?: boolean; skipDuplicates?: boolean }): Frag {
  const d = ctx.d
  const cols = rows[0]!.map(([f]) => f)
  const tableRef = d.table(model.table)
  const prefix = 'INSERT INTO'
  const conflict = opts.skipDuplicates ? skipDuplicatesClause(d, model) : ''
  const returning = opts.returning && model.identity.length > 0 && (d.dialect !== 'mysql' || d.flavor === 'mariadb')
    ? ` RETURNING ${model.identity.map((n) => d.q(model.fieldMap.get(n)!.column)).join(', ')}`
    : ''
  if (cols.length === 0) {
    if (d.dialect === 'sqlite' && conflict) {
      // SQLite has no upsert clause after DEFAULT VALUES; a NULL into the rowid alias is the same row.
      const rowid = model.fields.find((f) => f.autoIncrement)
      if (!rowid) throw new DbInputError(`${model.name}: skipDuplicates needs at least one field in every row of this table on SQLite`)
      return raw(`${prefix} ${tableRef} (${d.q(rowid.column)}) VALUES (NULL)${conflict}${returning}`)
    }
    const body = d.dialect === 'mysql' ? `${prefix} ${tableRef} () VALUES ()` : `${prefix} ${tableRef} DEFAULT VALUES`
    return raw(`${body}${conflict}${returning}`)
  }
  const values = rows.map((row) => sql`(${join(row.map(([f, v]) => (v === NULL ? raw('NULL') : bound(v, (x) => d.bindValue(f, x, false)))), ', ')})`)
  return sql`${prefix} ${tableRef} (${cols.map((f) => d.q(f.column)).join(', ')}) VALUES ${join(values, ', ')}${conflict}${returning}`
}

/** `SET` assignments of an update data object: `{ field: { set | increment | decrement | multiply | divide } }`. */
function setFrag(ctx: Ctx, model: Model, data: ArgValue | undefined): { frag: Frag | null; setsIdentity: [number, Leaf | typeof NULL][] } {
  const d = ctx.d
  const parts: Frag[] = []
  const setsIdentity: [number, Leaf | typeof NULL][] = []
  if (isObj(data)) {
    for (const [key, ops] of Object.entries(data)) {
      const f = model.fieldMap.get(key)
      if (!f) continue
      const c = d.q(f.column)
      // A bare value is accepted as `set`.
      const o: { [k: string]: ArgValue } = isObj(ops) ? ops : { set: ops }
      const [op, v] = Object.entries(o)[0] ?? []
      if (op === undefined || v === undefined) continue
      if (v === NULL) {
        if (op === 'set') parts.push(raw(`${c} = NULL`))
        continue
      }
      if (f.list && Array.isArray(v)) {
        // PostgreSQL arrays: `set` replaces, `push` appends (array_cat keeps the column's type).
        const p = bound(listLeaf(v), (x) => d.bindValue(f, x, false))
        if (op === 'set') parts.push({ s: `${c} = ?`, p: p.p })
        else if (op === 'push') parts.push({ s: `${c} = array_cat(${c}, ?)`, p: p.p })
        continue
      }
      if (!(v instanceof Leaf)) continue
      const p = bound(v, (x) => d.bindValue(f, x, false))
      const isInt = f.scalar === 'Int' || f.scalar === 'BigInt'
      switch (op) {
        case 'set':
          parts.push({ s: `${c} = ?`, p: p.p })
          break
        case 'increment':
          parts.push({ s: `${c} = ${c} + ?`, p: p.p })
          break
        case 'decrement':
          parts.push({ s: `${c} = ${c} - ?`, p: p.p })
          break
        case 'multiply':
          parts.push({ s: `${c} = ${c} * ?`, p: p.p })
          break
        case 'divide':
          parts.push({ s: `${c} = ${isInt ? d.intDivide(c) : `${c} / ?`}`, p: p.p })
          break
        default:
          continue
      }
      const idx = model.identity.indexOf(key)
      if (idx >= 0) {
        if (op !== 'set') throw new DbInputError(`${model.name}.${key} identifies the row: only \`set\` may change it`)
        setsIdentity.push([idx, v])
      }
    }
  }
  return { frag: parts.length ? join(parts, ', ') : null, setsIdentity }
}

function identityWhere(ctx: Ctx, model: Model, alias: string): Frag {
  return join(
    model.identity.map((n, i) => {
      const f = model.fieldMap.get(n)!
      return { s: `${alias}.${ctx.d.q(f.column)} = ?`, p: [(_v: Vars, x: readonly unknown[]) => x[i]] }
    }),
    ' AND ',
  )
}

function requireIdentity(model: Model): void {
  if (model.identity.length === 0) throw new DbInputError(`${model.name} has no primary key or non-null unique key: this mutation needs one`)
}

/** The read-back plan: the mutation field's selection on the row whose identity is `extra`. */
function readBack(ctx: Ctx, model: Model, info: GraphQLResolveInfo): ReadPlan {
  const type = getNamedType(info.returnType) as GraphQLObjectType
  const l = compileList(ctx, model, type, info.fieldNodes, {}, null, 'rows', { extraWhere: (a) => identityWhere(ctx, model, a), unordered: true })
  return toPlan(ctx, l.frag, l.post)
}

function identitySelect(ctx: Ctx, model: Model, where: ArgValue | undefined): Stmt {
  const tableRef = ctx.d.table(model.table)
  const cols = model.identity.map((n) => `${tableRef}.${ctx.d.q(model.fieldMap.get(n)!.column)}`).join(', ')
  return stmt(ctx, sql`SELECT ${cols} FROM ${tableRef} WHERE ${andRowFilter(ctx, model, tableRef, compileUnique(ctx, model, tableRef, where))}`)
}

function identityOf(model: Model, row: Record<string, unknown>): unknown[] {
  return model.identity.map((n) => row[model.fieldMap.get(n)!.column])
}

function whereLabel(model: Model, where: ArgValue | undefined): string {
  return isObj(where) ? `where { ${Object.keys(where).join(', ')} }` : 'where'
}

async function readOne(rt: Runtime, conn: unknown, plan: ReadPlan, vars: Vars, extra: unknown[]): Promise<unknown> {
  const rows = await rt.db().values(plan.text, bindAll(plan.params, vars, extra), conn)
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
  if (rf && !(rf.bypass && rf.bypass(vars, []) === 1)) throw new AuthForbiddenError(`${what} on ${model.name} cannot check its row filter on the rows written; use createOne`)
}

/**
 * Builds the mutation bodies of one model (tables only; views are read-only): each runs its
 * statements on `conn`, inside the transaction that request-transaction.ts opened for every
 * mutation field of the request on this database.
 */
export function makeMutationResolvers(rt: Runtime, model: Model): Record<MutationKind, WriteBody> {
  const d = rt.d
  const mysqlNoReturning = d.dialect === 'mysql' && d.flavor === 'mysql'

  interface CreatePlan {
    insert: Stmt
    /** Redirected PostgreSQL tables: draws the auto-increment keys the data leaves out from their sequences, one column each. */
    prefetch: Stmt | null
    fromData: (Getter | null)[]
    back: ReadPlan | null
  }
  const compileCreate = (ctx: Ctx, info: GraphQLResolveInfo, data: ArgValue | undefined): CreatePlan => {
    const pairs = createPairs(model, data)
    let prefetch: Stmt | null = null
    const fromData = model.identity.map((n) => {
      const pair = pairs.find(([f]) => f.name === n)
      if (!pair || pair[1] === NULL) return null
      const leaf = pair[1]
      const f = pair[0]
      return ((v: Vars, x: readonly unknown[]) => d.bindValue(f, leaf.get(v, x), false)) as Getter
    })
    if (model.insertsRedirected) {
      // No RETURNING (a rule refuses it, a routing trigger returns nothing): the keys are known first.
      const drawn = model.identity.map((n, i) => ({ f: model.fieldMap.get(n)!, i })).filter(({ f, i }) => fromData[i] === null && f.autoIncrement)
      if (drawn.length > 0) {
        prefetch = stmt(ctx, join(drawn.map(({ f }, k) => sql`nextval(pg_get_serial_sequence(${constantFrag(tableRef)}, ${constantFrag(f.column)})) AS ${d.q(`k${k}`)}`), ', '))
        prefetch = { text: `SELECT ${prefetch.text}`, params: prefetch.params }
        drawn.forEach(({ f, i }, k) => {
          pairs.push([f, new Leaf((_v, x) => x[k])])
          fromData[i] = (_v, x) => x[k]
        })
      }
    }
    const insert = stmt(ctx, insertFrag(ctx, model, [pairs], { returning: !model.insertsRedirected }))
    return { insert, prefetch, fromData, back: model.identity.length ? readBack(ctx, model, info) : null }
  }
  const runCreate = async (conn: unknown, plan: CreatePlan, vars: Vars): Promise<unknown> => {
    if (!plan.back) requireUnfiltered(rt, model, vars, 'a create of a row without a primary key')
    const drawn = plan.prefetch ? Object.values((await rt.db().exec(conn, plan.prefetch.text, run(plan.prefetch, vars))).rows[0] ?? {}) : []
    const res = await rt.db().exec(conn, plan.insert.text, run(plan.insert, vars, drawn))
    if (!plan.back) return null
    let id: unknown[]
    if (!mysqlNoReturning && res.rows[0]) id = identityOf(model, res.rows[0])
    else if (plan.prefetch) id = plan.fromData.map((g) => (g ? g(vars, drawn) : null))
    else {
      id = plan.fromData.map((g, i) => {
        if (g) return g(vars, [])
        const f = model.fieldMap.get(model.identity[i]!)!
        return f.autoIncrement ? res.insertId : null
      })
    }
    return readWritten(rt, model, conn, plan.back, vars, id)
  }

  const createOne = new PlanCache<CreatePlan>()
  const createMany = new PlanCache<{ plain: { s: Stmt; rows: number }[]; skipping: { s: Stmt; rows: number }[] | null; skip: Leaf | null }>()
  const updateOne = new PlanCache<{ find: Stmt; update: Stmt | null; setsIdentity: [number, Leaf | typeof NULL][]; back: ReadPlan; label: string }>()
  const updateMany = new PlanCache<Stmt>()
  const upsertOne = new PlanCache<{ find: Stmt; update: Stmt | null; setsIdentity: [number, Leaf | typeof NULL][]; create: CreatePlan; back: ReadPlan }>()
  const deleteOne = new PlanCache<{ read: ReadPlan; del: Stmt; label: string }>()
  const deleteMany = new PlanCache<Stmt>()
  const tableRef = d.table(model.table)

  const updateStmt = (ctx: Ctx, data: ArgValue | undefined): { update: Stmt | null; setsIdentity: [number, Leaf | typeof NULL][] } => {
    const { frag, setsIdentity } = setFrag(ctx, model, data)
    return { update: frag ? stmt(ctx, sql`UPDATE ${tableRef} SET ${frag} WHERE ${andRowFilter(ctx, model, tableRef, identityWhere(ctx, model, tableRef))}`) : null, setsIdentity }
  }
  const newIdentity = (old: unknown[], sets: [number, Leaf | typeof NULL][], vars: Vars): unknown[] => {
    const id = [...old]
    for (const [i, v] of sets) id[i] = v === NULL ? null : d.bindValue(model.fieldMap.get(model.identity[i]!)!, v.get(vars, []), false)
    return id
  }

  return {
    createOne: async (conn, info, _args, context) => {
      const plan = createOne.get(info, () => {
        const ctx = makeCtx(rt, info)
        return compileCreate(ctx, info, argsOf(ctx, info)['data'])
      })
      return runCreate(conn, plan, bindVars(rt, info, context))
    },
    createMany: async (conn, info, _args, context) => {
      const plan = createMany.get(info, () => {
        const ctx = makeCtx(rt, info)
        const args = argsOf(ctx, info)
        const groups = new Map<string, [ScalarField, Leaf | typeof NULL][][]>()
        const data = listOf(args['data'])
        if (data.length > ctx.reg.maxTake) throw new DbInputError(`${model.name}: createMany takes at most ${ctx.reg.maxTake} rows per call (maxTake); got ${data.length}`)
        for (const row of data) {
          const pairs = createPairs(model, row)
          const key = pairs.map(([f]) => f.name).join(',')
          groups.set(key, [...(groups.get(key) ?? []), pairs])
        }
        // `skipDuplicates: $v` is read at run time: the plan holds both statement lists.
        const skip = args['skipDuplicates'] instanceof Leaf ? (args['skipDuplicates'] as Leaf) : null
        // Rows of defaults only (`{}`) have no multi-row form on every engine (`DEFAULT VALUES` inserts
        // one row): each is a statement of its own.
        const batches = [...groups.values()].flatMap((rows) => (rows[0]!.length === 0 ? rows.map((r) => [r]) : [rows]))
        const compileRows = (skipDuplicates: boolean) => batches.map((rows) => ({ s: stmt(ctx, insertFrag(ctx, model, rows, { skipDuplicates })), rows: rows.length }))
        return { plain: compileRows(false), skipping: model.insertsRedirected ? null : compileRows(true), skip }
      })
      const vars = bindVars(rt, info, context)
      requireUnfiltered(rt, model, vars, 'createMany')
      const skipDuplicates = plan.skip !== null && Boolean(plan.skip.get(vars, []))
      if (skipDuplicates && !plan.skipping) {
        throw new DbInputError(`${model.name}: skipDuplicates is not available on a table whose inserts a rule or inheritance redirects (PostgreSQL refuses ON CONFLICT there)`)
      }
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
        return { find: identitySelect(ctx, model, args['where']), ...updateStmt(ctx, args['data']), back: readBack(ctx, model, info), label: whereLabel(model, args['where']) }
      })
      const vars = bindVars(rt, info, context)
      const found = await rt.db().exec(conn, plan.find.text, run(plan.find, vars))
      if (!found.rows[0]) throw new DbNotFoundError(model.name, plan.label)
      const id = identityOf(model, found.rows[0])
      if (plan.update) await rt.db().exec(conn, plan.update.text, run(plan.update, vars, id))
      return readWritten(rt, model, conn, plan.back, vars, newIdentity(id, plan.setsIdentity, vars))
    },
    updateMany: async (conn, info, _args, context) => {
      const plan = updateMany.get(info, () => {
        const ctx = makeCtx(rt, info)
        const args = argsOf(ctx, info)
        const { frag } = setFrag(ctx, model, args['data'])
        const w = filteredWhere(ctx, model, tableRef, args['where'])
        const where = w ? sql` WHERE ${w}` : raw('')
        return stmt(ctx, frag ? sql`UPDATE ${tableRef} SET ${frag}${where}` : sql`SELECT COUNT(*) AS n FROM ${tableRef}${where}`)
      })
      const res = await rt.db().exec(conn, plan.text, run(plan, bindVars(rt, info, context)))
      return { count: res.rows[0] && 'n' in res.rows[0] ? Number(res.rows[0]['n']) : res.affected }
    },
    upsertOne: async (conn, info, _args, context) => {
      requireIdentity(model)
      const plan = upsertOne.get(info, () => {
        const ctx = makeCtx(rt, info)
        const args = argsOf(ctx, info)
        return { find: identitySelect(ctx, model, args['where']), ...updateStmt(ctx, args['update']), create: compileCreate(ctx, info, args['create']), back: readBack(ctx, model, info) }
      })
      const vars = bindVars(rt, info, context)
      const found = await rt.db().exec(conn, plan.find.text, run(plan.find, vars))
      if (!found.rows[0]) return runCreate(conn, plan.create, vars)
      const id = identityOf(model, found.rows[0])
      if (plan.update) await rt.db().exec(conn, plan.update.text, run(plan.update, vars, id))
      return readWritten(rt, model, conn, plan.back, vars, newIdentity(id, plan.setsIdentity, vars))
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
