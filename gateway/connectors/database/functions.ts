/**
 * Resolvers of database functions exposed as root fields (PostgreSQL, the source's `functions`
 * option; issue 10 item 14). Each call is ONE statement, compiled once per operation and variables
 * shape (plan-cache.ts), with every argument bound:
 * - a function returning rows of a table or view (`RETURNS SETOF post`, `RETURNS post`):
 *   `SELECT J(t0) FROM fn(a => ?, …) AS t0 WHERE … ORDER BY … LIMIT ?` — the read compiler's list,
 *   with `where orderBy take skip distinct` and nested relations, on the function's rows;
 * - a function returning a scalar (or `SETOF` a scalar): `SELECT json_build_object('v', t0.v) FROM fn(…) AS t0(v)`.
 * Arguments use named notation, so optional ones (declared with a default) are simply left out.
 * MySQL/MariaDB stored functions (scalar, positional arguments; an absent one is NULL):
 * `SELECT JSON_OBJECT('v', t0.v) FROM (SELECT fn(?, ?) AS v) AS t0`.
 * Stable and immutable functions are Query fields; volatile ones Mutation fields, run in the request's
 * transaction on their database with its other mutation fields (request-transaction.ts).
 */
import { mapFunctionError } from './db-errors.js'
import { getNamedType, type GraphQLFieldResolver, type GraphQLObjectType, type GraphQLResolveInfo } from 'graphql'
import { Leaf, readArgs } from './compiler/args.js'
import { cancelWatchOf } from './compiler/db.js'
import { join, raw, sql } from './compiler/frag.js'
import { PlanCache } from './compiler/plan-cache.js'
import { bound, compileList, functionListArgs, makePost, namedCallArgs, outputConv, resultField, toPlan, type ReadPlan } from './compiler/read.js'
import type { FunctionModel, ScalarField } from './compiler/registry.js'
import type { WriteField } from './request-transaction.js'
import { bindAll, finishRows, makeCtx, type Runtime } from './resolvers.js'
import { withAuth } from './compiler/row-filter.js'

/** A failed call, mapped as {@link mapFunctionError} says (`TRB_ERR_DB_VALUE` for a data exception or `RAISE EXCEPTION`). */
function functionError(rt: Runtime, fn: FunctionModel, err: unknown): unknown {
  return mapFunctionError(err, rt.reg, `the arguments of function \`${fn.fn}\``, rt.rawErrors)
}

/**
 * Builds the call of one function root field: compiles (once per operation shape) and runs its
 * statement on `conn` (a mutation field, inside the request's transaction) or on a pooled
 * connection (`conn` undefined, a query field).
 * @returns a list of rows, one row (or null), or the scalar value(s); throws the driver's error as is
 */
function makeFunctionCall(rt: Runtime, fn: FunctionModel): (conn: unknown, info: GraphQLResolveInfo, context: unknown) => Promise<unknown> {
  const cache = new PlanCache<ReadPlan>()
  return async (conn, info, context) => {
    const plan = cache.get(info, () => {
      const ctx = makeCtx(rt, info)
      const d = ctx.d
      const def = info.parentType.getFields()[info.fieldName]!
      const args = readArgs(info.fieldNodes[0]!, def.args, ctx.vars)
      // `fn(a => ?, b => ?)`: arguments absent from the request keep the function's defaults.
      const given = namedCallArgs(ctx, fn.args, args)
      if (d.dialect === 'mysql') {
        // MySQL/MariaDB stored functions: positional arguments (absent: NULL); one scalar.
        const values = fn.args.map((a) => {
          const v = args[a.name]
          const f = { scalar: a.scalar, dataType: a.dataType }
          return v instanceof Leaf ? bound(v, (x) => d.bindValue(f, x, false)) : raw('NULL')
        })
        const r = fn.returns as Extract<FunctionModel['returns'], { kind: 'scalar' }>
        const f = { name: 'v', column: 'v', scalar: r.scalar, nullable: true, hasDefault: false, autoIncrement: false, dataType: r.dataType } as ScalarField
        const conv = outputConv(d, r.scalar)
        const text = `SELECT ${d.jsonObject([['v', d.output('t0.v', f)]])} AS j FROM (SELECT ${d.table(fn.fn)}(${values.map((x) => x.s).join(', ')}) AS v) AS t0`
        return toPlan(ctx, { s: text, p: values.flatMap((x) => x.p) }, makePost(conv ? [['v', conv]] : [], []))
      }
      const call = sql`${d.table(fn.fn)}(${join(given, ', ')})`
      if (fn.returns.kind === 'model') {
        const model = ctx.reg.models.get(fn.returns.model)!
        const l = compileList(ctx, model, getNamedType(info.returnType) as GraphQLObjectType, info.fieldNodes, functionListArgs(fn, args), null, 'rows', {
          from: call,
          ...(fn.returnsSet ? {} : { first: true, extraWhere: (a: string) => raw(`NOT (${a} IS NULL)`) }),
        })
        return toPlan(ctx, l.frag, l.post)
      }
      const f = resultField(fn.returns)
      const conv = outputConv(d, f.scalar, f.list)
      const frag = sql`SELECT ${d.jsonObject([['v', d.output('t0.v', f)]])} AS j FROM ${call} AS t0(v)`
      return toPlan(ctx, frag, makePost(conv ? [['v', conv]] : [], []))
    })
    const result = await rt.db().values(plan.text, bindAll(plan.params, rt.reg.rowFilters.size > 0 ? withAuth(info.variableValues, context) : info.variableValues), conn, { cancel: cancelWatchOf(context) })
    const rows = finishRows(result, plan.post)
    if (fn.returns.kind === 'model') return fn.returnsSet ? rows : (rows[0] ?? null)
    const values = rows.map((o) => o['v'])
    return fn.returnsSet ? values : (values[0] ?? null)
  }
}

/**
 * The resolver of a stable or immutable function (a Query field): one statement on a pooled connection.
 * @throws as {@link functionError} maps the driver's error
 */
export function makeFunctionResolver(rt: Runtime, fn: FunctionModel): GraphQLFieldResolver<unknown, unknown> {
  const call = makeFunctionCall(rt, fn)
  return async (_s, _a, context, info) => {
    try {
      return await call(undefined, info, context)
    } catch (err) {
      throw functionError(rt, fn, err)
    }
  }
}

/**
 * A volatile function (a Mutation field) as a write: it runs in the request's transaction on its
 * database with the other mutation fields there (request-transaction.ts), all written or none.
 */
export function makeFunctionWrite(rt: Runtime, fn: FunctionModel): WriteField {
  const call = makeFunctionCall(rt, fn)
  return { rt, body: (conn, info) => call(conn, info, undefined), mapError: (err) => functionError(rt, fn, err) }
}
