/**
 * Direct JSON plans: a database root query field compiled into ONE SQL statement whose result is the
 * field's final JSON text, exactly as GraphQL execution would serialise it, so that the gateway can
 * paste it into the response without parsing, walking or re-serialising (what Hasura does).
 *
 * Every database root query field that supports it (`findUniqueX`, `findFirstX`, `findManyX`) carries
 * a {@link DirectJsonCompiler} in `extensions.tributary.direct`; the gateway finds it there (extensions
 * survive compose's namespace rename) and calls it once per operation at its compile time. The
 * normal resolvers stay and remain the fallback: `null` from the compiler, or `run` rejecting with
 * {@link DirectPlanUnavailable} (nothing was sent to the database), means "execute this field with
 * GraphQL". Any other rejection is the statement's own failure (a driver error,
 * `TRB_ERR_DB_TIMEOUT`, `TRB_ERR_DB_CANCELLED`): the caller reports it and must not run the field
 * again (issue 7: a statement that failed, timed out or was cancelled is never run twice).
 *
 * What returns null (see compiler/direct-read.ts for the SQL side):
 * - `@skip`/`@include` whose condition is a variable (the SQL would depend on it);
 * - columns that cannot be printed exactly: JSON (everywhere), Bytes on SQLite, Float on MariaDB,
 *   time-of-day DateTime columns, unknown column types on PostgreSQL/MariaDB;
 * - MySQL 8 (`flavor: 'mysql'`): not tested here;
 * - `aggregateX`, `groupByX` and raw queries: no direct plan;
 * - any statement a row filter applies to (config `permissions.<Type>.filter`): it binds the caller's identity;
 * - anything the compiler rejects for the variables' compile-time sample (e.g. `distinct` or a
 *   negative `take` on a nested list on MariaDB), and invalid documents (undefined variables, unknown
 *   fields).
 * A variable whose runtime *shape* changes the SQL (null vs value, the sign of `take`, an enum value,
 * a list's length, a whole input object) is handled with shape keys: one statement per shape,
 * compiled the first time the shape is seen (at most {@link MAX_SHAPES}); a shape that fails to
 * compile rejects `run`.
 */
import {
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  typeFromAST,
  valueFromAST,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLArgument,
  type GraphQLInputType,
  type GraphQLObjectType,
  type GraphQLSchema,
  type VariableDefinitionNode,
} from 'graphql'
import { Leaf, collectVariables, isObj, readArgs, shapeOf, type ArgValue } from './compiler/args.js'
import { DirectCompiler, DirectUnsupported, hasVariableDirectives } from './compiler/direct-read.js'
import { raw, type Getter, type Vars } from './compiler/frag.js'
import { EXT, compileList, compileUnique, modelOfType, toPlan, type Ctx, type ReadPlan } from './compiler/read.js'
import type { Model } from './compiler/registry.js'
import { cancelWatchOf, type Db } from './compiler/db.js'
import { bindAll, isCheap, lightPlans, markBounded, markCheap, ownerOf, type Runtime } from './resolvers.js'
import { chargeResult, resultRoom, textLength } from '../../result-budget.js'
import { normalizeDataType } from './type-map.js'

/**
 * Rejection of {@link DirectJsonPlan.run} meaning "no direct statement for these variables": nothing
 * was sent to the database, the caller executes the operation with GraphQL instead.
 */
export class DirectPlanUnavailable extends Error {
  constructor(cause: unknown) {
    super('no direct plan for these variables', { cause })
    this.name = 'DirectPlanUnavailable'
  }
}

/** Compiles one root field of a query into a single SQL statement whose result is the field's final JSON. */
export type DirectJsonCompiler = (request: {
  /** The composed gateway schema (public, namespaced type names: use it for __typename, e.g. `todo_Todo`). */
  schema: GraphQLSchema
  /** The root field's selection (its alias is the caller's business). */
  field: FieldNode
  /** Fragment definitions of the document, by name. */
  fragments: Record<string, FragmentDefinitionNode>
  /** The operation's variable definitions. */
  variableDefinitions: readonly VariableDefinitionNode[]
}) => DirectJsonPlan | null // null when anything is unsupported: the caller then uses normal GraphQL execution

/** A compiled direct plan of one root field. */
export interface DirectJsonPlan {
  /**
   * Runs the statement. Resolves to the JSON text of the field's value exactly as GraphQL execution would
   * serialise it (same keys in selection order with aliases, same values: Booleans true/false, Int/Float
   * numbers, DateTime ISO 8601 UTC with milliseconds `2026-11-20T09:00:00.000Z`, Decimal and BigInt as
   * strings, enums as names, JSON values, `null` where null; `null` text for a missing row). `variables`
   * are the coerced variable values (GraphQL spec CoerceVariableValues: defaults applied, custom scalars
   * parsed — DateTime arrives as a Date, BigInt as a digit string). Rejects with
   * {@link DirectPlanUnavailable} when no statement could be made for these variables (the caller then
   * executes the operation through GraphQL), or with the statement's error once it was sent (the
   * caller reports it; it must not run the operation again). `context` is the GraphQL context: its
   * client's disconnect cancels the statement.
   */
  run(variables: Record<string, unknown>, context: unknown): Promise<string>
  /**
   * {@link run} without waiting, where the statement can run now: SQLite, a cheap statement (a
   * lookup by key, or a bounded read; see `isCheap`) and an idle connection (`Db.valuesNow`).
   * Returns the same JSON text as `run`, or undefined when it cannot answer now — nothing was sent
   * to the database: call `run`. Throws as `run` rejects: {@link DirectPlanUnavailable} when no
   * statement could be made for these variables, else the statement's own error once it was sent
   * (it must not be run again). Present on SQLite sources only.
   */
  runNow?(variables: Record<string, unknown>, context: unknown): string | undefined
}

/** `extensions.tributary` of a database root query field. */
export interface DirectFieldExtension {
  /** The model the field reads. */
  model: string
  /** Its direct-JSON compiler, when it has one. */
  direct?: DirectJsonCompiler
  /** Which read it is (`findUnique`, `findFirst`, `findMany`): a stored operation's `_join` batches these (gateway/operations/joins.ts). */
  kind?: DirectFieldKind
}

/** The root query fields that get a direct plan. */
export type DirectFieldKind = 'findUnique' | 'findFirst' | 'findMany'

/** At most this many shapes (statements) per plan; the cache is cleared when full. */
export const MAX_SHAPES = 64

/** A variable the field's arguments use, with its shape function. */
interface VarRef {
  name: string
  shape: (value: unknown) => string
}

/** Fingerprint of one variable's runtime value, specialised for scalars (the common case). */
function shapeFunction(type: GraphQLInputType): (value: unknown) => string {
  const t = getNullableType(type)
  if (isScalarType(t)) return (v) => (v === undefined ? 'u' : v === null ? 'n' : typeof v === 'number' && v < 0 ? '-' : 's')
  if (isEnumType(t)) return (v) => (v === undefined ? 'u' : v === null ? 'n' : `e${String(v)}`)
  return (v) => shapeOf(type, v)
}

/** A value of `type` for the compile-time plan: the default, else a representative non-null value, else undefined. */
function sampleValue(type: GraphQLInputType): unknown {
  const nonNull = isNonNullType(type)
  const t = getNullableType(type) as GraphQLInputType
  if (isListType(t)) {
    const item = sampleValue(t.ofType as GraphQLInputType)
    return item === undefined ? (nonNull ? [] : undefined) : [item]
  }
  if (isEnumType(t)) return t.getValues()[0]?.value
  if (isInputObjectType(t)) return nonNull ? {} : undefined
  switch (getNamedType(t).name) {
    case 'Int':
    case 'Float':
      return 1
    case 'Boolean':
      return true
    case 'DateTime':
      return new Date(0)
    case 'BigInt':
    case 'Decimal':
      return '1'
    case 'Bytes':
      return Buffer.alloc(0)
    case 'JSON':
      return nonNull ? {} : undefined
    default:
      return 'x'
  }
}

/**
 * Creates the direct-JSON compiler of one root query field.
 * @param rt the schema's runtime (registry, dialect, statement runner)
 * @param model the model the field reads
 * @param kind which root field
 * @returns the compiler to put in the field's `extensions.tributary.direct`
 */
export function createDirectCompiler(rt: Runtime, model: Model, kind: DirectFieldKind): DirectJsonCompiler {
  const self: DirectJsonCompiler = (request) => {
    try {
      const { schema, field, fragments } = request
      const root = schema.getQueryType()?.getFields()[field.name.value]
      const ext = root?.extensions?.[EXT] as DirectFieldExtension | undefined
      if (!root || ext?.direct !== self) return null
      const type = getNamedType(root.type) as GraphQLObjectType
      if (modelOfType(rt.reg, type) !== model) return null
      if (hasVariableDirectives(field, fragments)) return null
      const vars: VarRef[] = []
      const sample: Vars = {}
      for (const name of collectVariables([field], fragments)) {
        const def = request.variableDefinitions.find((d) => d.variable.name.value === name)
        const t = def ? (typeFromAST(schema, def.type as never) as GraphQLInputType | undefined) : undefined
        if (!def || !t) return null
        vars.push({ name, shape: shapeFunction(t) })
        const value = def.defaultValue ? valueFromAST(def.defaultValue, t) : sampleValue(t)
        if (value !== undefined) sample[name] = value
      }
      const compile = (values: Vars): ReadPlan => compileRoot(rt, model, kind, schema, type, root.args, field, fragments, values)
      const shapeKey = (values: Record<string, unknown>): string => {
        if (vars.length === 1) return vars[0]!.shape(values[vars[0]!.name])
        let key = ''
        for (const v of vars) key += `${v.shape(values[v.name])}|`
        return key
      }
      let first: ReadPlan | undefined
      try {
        first = compile(sample)
      } catch (err) {
        // Unsupported whatever the variables: no plan. Otherwise the sample was not representative
        // (e.g. `where: $where` sampled as `{}` for findUnique): compile the real shapes lazily.
        if (err instanceof DirectUnsupported || vars.length === 0 || !selectionSupported(rt, model, schema, type, field, fragments, sample)) return null
      }
      const one = kind !== 'findMany'
      const finish = (rows: unknown[]): string => {
        if (one) return rows.length === 0 ? 'null' : text(rows[0])
        if (rows.length === 0) return '[]'
        if (rows.length === 1) return `[${text(rows[0])}]`
        return `[${(typeof rows[0] === 'string' ? (rows as string[]) : rows.map(text)).join(',')}]`
      }
      /** SQLite, a cheap plan and an idle connection: the answer now (no promise hops), else undefined (nothing sent). */
      const answerNow = (db: Db, plan: ReadPlan, bindings: unknown[], context: unknown): string | undefined => {
        const now = db.valuesNow(plan.text, bindings)
        if (!now) return undefined
        chargeResult(context, textLength(now))
        return finish(now)
      }
      const exec = (plan: ReadPlan, variables: Record<string, unknown>, context: unknown): Promise<string> => {
        let bindings: unknown[]
        try {
          bindings = bindAll(plan.params, variables)
        } catch (err) {
          return Promise.reject(new DirectPlanUnavailable(err))
        }
        const batch = rt.lookups.enabled ? lookupPlans.get(plan) : undefined
        if (batch) return lookup(batch, plan, bindings, variables, context)
        try {
          const db = rt.db()
          const cheap = isCheap(db, plan, bindings)
          if (db.inProcess({ cheap })) {
            const now = answerNow(db, plan, bindings, context)
            if (now !== undefined) return Promise.resolve(now)
          }
          // PostgreSQL, for a caller that takes the answer as latin1-coded UTF-8 (Latin1Context).
          const latin1 = rt.d.dialect === 'postgres' && (context as Latin1Context | null)?.latin1Json === true
          return db.values(plan.text, bindings, undefined, { cheap, light: lightPlans.has(plan), owner: ownerOf(context), cancel: cancelWatchOf(context), maxResultChars: resultRoom(context), latin1 }).then((rows) => {
            if (latin1) {
              chargeLatin1(context, rows)
              ;(context as Latin1Context).latin1Used = true
            } else chargeResult(context, textLength(rows))
            return finish(rows)
          }, (err) => Promise.reject(refused(err)))
        } catch (err) {
          return Promise.reject(refused(err))
        }
      }
      /** A lookup that may share a batched statement (lookup-batch.ts); its own statement when alone or when the key is not a string or number. */
      const lookup = (batch: LookupPlan, plan: ReadPlan, bindings: unknown[], variables: Record<string, unknown>, context: unknown): Promise<string> => {
        let key: unknown
        let others: unknown[]
        try {
          key = batch.key(variables, [])
          others = bindAll(batch.params, variables)
        } catch (err) {
          return Promise.reject(new DirectPlanUnavailable(err))
        }
        try {
          const db = rt.db()
          const cancel = cancelWatchOf(context)
          const solo = (): Promise<unknown[]> => db.values(plan.text, bindings, undefined, { cheap: isCheap(db, plan, bindings), light: lightPlans.has(plan), owner: ownerOf(context), cancel, maxResultChars: resultRoom(context) })
          const rows = typeof key === 'number' || typeof key === 'string' ? rt.lookups.lookup(db, batch.text, others, key, cancel, solo) : solo()
          return rows.then((r) => {
            chargeResult(context, textLength(r))
            return finish(r)
          }, (err) => Promise.reject(refused(err)))
        } catch (err) {
          return Promise.reject(refused(err))
        }
      }
      /** {@link exec} without waiting (see `DirectJsonPlan.runNow`): undefined when the statement cannot run now. */
      const execNow = (plan: ReadPlan, variables: Record<string, unknown>, context: unknown): string | undefined => {
        let bindings: unknown[]
        try {
          bindings = bindAll(plan.params, variables)
        } catch (err) {
          throw new DirectPlanUnavailable(err)
        }
        try {
          const db = rt.db()
          return db.inProcess({ cheap: isCheap(db, plan, bindings) }) ? answerNow(db, plan, bindings, context) : undefined
        } catch (err) {
          throw refused(err)
        }
      }
      // Batched lookups (PostgreSQL) and statements that wait for a pool or a worker have no `runNow`.
      const sqlite = rt.d.dialect === 'sqlite'
      if (vars.length === 0 && first) {
        const plan = first
        return {
          run: (variables, context) => exec(plan, variables, context),
          ...(sqlite ? { runNow: (variables: Record<string, unknown>, context: unknown) => execNow(plan, variables, context) } : {}),
        }
      }
      const plans = new Map<string, ReadPlan | Error>(first ? [[shapeKey(sample), first]] : [])
      /** The statement of the variables' shape, compiled the first time the shape is seen; an Error when it does not compile. */
      const planFor = (variables: Record<string, unknown>): ReadPlan | Error => {
        const key = shapeKey(variables)
        let plan = plans.get(key)
        if (plan === undefined) {
          try {
            plan = compile(variables)
          } catch (err) {
            plan = err instanceof Error ? err : new Error(String(err))
          }
          if (plans.size >= MAX_SHAPES) plans.clear()
          plans.set(key, plan)
        }
        return plan
      }
      return {
        run: (variables, context) => {
          const plan = planFor(variables)
          return plan instanceof Error ? Promise.reject(new DirectPlanUnavailable(plan)) : exec(plan, variables, context)
        },
        ...(sqlite
          ? {
              runNow: (variables: Record<string, unknown>, context: unknown) => {
                const plan = planFor(variables)
                if (plan instanceof Error) throw new DirectPlanUnavailable(plan)
                return execNow(plan, variables, context)
              },
            }
          : {}),
      }
    } catch {
      return null
    }
  }
  return self
}

/**
 * The context flags of a latin1 run (PostgreSQL only): `latin1Json` is set by a caller that accepts
 * the answer as latin1-coded UTF-8 (each character one byte of the UTF-8 text: `Buffer.from(text,
 * 'latin1')` is the answer's UTF-8), for an operation of one root field; `latin1Used` is set by the
 * plan when its text is such (a findMany/findFirst statement on PostgreSQL), and left unset when it
 * is an ordinary string (another engine, a batched lookup). The rows then skip UTF-8 decoding
 * (connection.ts `pgJsonAsLatin1`) and the answer UTF-8 encoding.
 */
export interface Latin1Context {
  latin1Json?: boolean
  latin1Used?: boolean
}

/**
 * Charges latin1-coded rows to the request's result budget as the same number of UTF-16 units as
 * their ordinary strings would be (gateway/result-budget.ts), so that the budget refuses exactly
 * what it refused before: their length (their UTF-8 bytes, never fewer than the units) when that
 * fits what is left, else the exact units, decoded. Only for a run of one statement per request
 * (`latin1Json`), where no later statement reads what is left.
 */
function chargeLatin1(context: unknown, rows: unknown[]): void {
  const bytes = textLength(rows)
  const room = resultRoom(context)
  if (room === undefined) return
  if (bytes <= room) return chargeResult(context, bytes)
  let units = 0
  for (const r of rows) if (typeof r === 'string') units += Buffer.from(r, 'latin1').toString('utf8').length
  chargeResult(context, units)
}

/**
 * The statement's own refusal to print a stored value (compiler/direct-read.ts "Exactness rule":
 * SQLite `json('!…')` → malformed JSON, PostgreSQL `'!…'::json` → 22P02 on type json, MariaDB a
 * BIGINT UNSIGNED overflow, errno 1690) becomes {@link DirectPlanUnavailable}: GraphQL execution
 * then reports that value the way GraphQL does. Every other error (a timeout, a cancellation, a
 * driver error) is returned unchanged, to be reported without running the field again.
 */
function refused(err: unknown): unknown {
  const e = err as { code?: unknown; errno?: unknown; message?: unknown }
  const message = String(e?.message ?? '')
  const exactness =
    (e?.code === 'SQLITE_ERROR' && /malformed JSON/i.test(message)) ||
    (e?.code === '22P02' && /type json/i.test(message)) ||
    (e?.errno === 1690 && /BIGINT UNSIGNED/i.test(message))
  return exactness ? new DirectPlanUnavailable(err) : err
}

/** A row's JSON text: a string, or bytes (MariaDB returns binary strings as Buffers). */
function text(row: unknown): string {
  if (typeof row === 'string') return row
  if (Buffer.isBuffer(row)) return row.toString('utf8')
  throw new TypeError(`unexpected JSON row of type ${typeof row}`)
}

/**
 * False when the selection set alone (the JSON it builds, without the root field's arguments) does
 * not compile for the sample variables: then no plan is kept for later shapes.
 */
function selectionSupported(
  rt: Runtime,
  model: Model,
  schema: GraphQLSchema,
  type: GraphQLObjectType,
  field: FieldNode,
  fragments: Record<string, FragmentDefinitionNode>,
  vars: Vars,
): boolean {
  try {
    new DirectCompiler(rt.d).object({ reg: rt.reg, d: rt.d, schema, fragments, vars, n: 0 }, model, type, 't0', [field])
    return true
  } catch {
    // Unsupported (or failing for the sample variables too): no plan, which is always safe.
    return false
  }
}

/** Compiles the root field's statement for the variables' shape of `vars`. */
function compileRoot(
  rt: Runtime,
  model: Model,
  kind: DirectFieldKind,
  schema: GraphQLSchema,
  type: GraphQLObjectType,
  argDefs: readonly GraphQLArgument[],
  field: FieldNode,
  fragments: Record<string, FragmentDefinitionNode>,
  vars: Vars,
): ReadPlan {
  const ctx: Ctx = { reg: rt.reg, d: rt.d, schema, fragments, vars, n: 0 }
  const emit = new DirectCompiler(rt.d)
  const args = readArgs(field, argDefs, vars)
  const l =
    kind === 'findUnique'
      ? compileList(ctx, model, type, [field], {}, null, 'rows', { extraWhere: (a) => compileUnique(ctx, model, a, args['where']), unordered: true, emit })
      : compileList(ctx, model, type, [field], args, null, 'rows', kind === 'findFirst' ? { first: true, emit } : { emit })
  // A row filter binds the caller's identity, which a direct run does not carry: GraphQL execution instead.
  if (ctx.rowFiltered) throw new DirectUnsupported('a row filter applies')
  const plan = toPlan(ctx, l.frag, null)
  if (kind !== 'findUnique') return markBounded(ctx, model, l, plan)
  const batch = compileLookup(rt, { reg: rt.reg, d: rt.d, schema, fragments, vars, n: 0 }, model, type, field, args['where'])
  if (batch) lookupPlans.set(plan, batch)
  return markCheap(ctx, plan)
}

/** The batched form of a `findUnique` direct plan (lookup-batch.ts). */
interface LookupPlan {
  /** `SELECT __k.i::int4, __b.j FROM unnest($1::<type>[]) WITH ORDINALITY AS __k(v, i) CROSS JOIN LATERAL (<the plan's statement, key = __k.v>) AS __b`. */
  text: string
  /** The getters of `$2…`: the plan's own parameters without the key. */
  params: Getter[]
  /** The key value, as the plan binds it. */
  key: Getter
}

/** The batched forms of `findUnique` plans, when they have one. */
const lookupPlans = new WeakMap<ReadPlan, LookupPlan>()

/**
 * PostgreSQL key column types a batched lookup binds as an array (`unnest($1::<type>[])`), by
 * normalised column type: integers, text, varchar and uuid, whose values are bound as JS numbers or
 * strings. Other key types (compound keys, citext, dates, enums…) are left unbatched.
 */
const LOOKUP_KEY_TYPES: Readonly<Record<string, string>> = {
  integer: 'int4',
  int4: 'int4',
  smallint: 'int2',
  int2: 'int2',
  bigint: 'int8',
  int8: 'int8',
  text: 'text',
  'character varying': 'varchar',
  varchar: 'varchar',
  uuid: 'uuid',
}

/**
 * The batched statement of a `findUnique` (see {@link LookupPlan}), or null when the lookup cannot be
 * batched: not PostgreSQL, batching off, a `where` other than one single-column unique key bound to
 * a value (compound keys, `null`), a key column type outside {@link LOOKUP_KEY_TYPES}, or a row
 * filter. `ctx` is a fresh compile context of the field. The inner statement is the plan's own,
 * with `t0.key = ?` read as `t0.key = __k.v`.
 */
function compileLookup(rt: Runtime, ctx: Ctx, model: Model, type: GraphQLObjectType, field: FieldNode, where: ArgValue | undefined): LookupPlan | null {
  if (rt.d.dialect !== 'postgres' || !rt.lookups.enabled || !isObj(where)) return null
  const entries = Object.entries(where)
  if (entries.length !== 1) return null
  const [name, value] = entries[0]!
  const uk = model.uniqueKeys.find((u) => u.name === name)
  const f = uk?.fields.length === 1 ? model.fieldMap.get(uk.fields[0]!) : undefined
  const elem = f && !f.list && value instanceof Leaf ? LOOKUP_KEY_TYPES[normalizeDataType(f.dataType)] : undefined
  if (!f || !elem) return null
  let key: Getter | undefined
  try {
    const l = compileList(ctx, model, type, [field], {}, null, 'rows', {
      extraWhere: (a) => {
        const one = compileUnique(ctx, model, a, where)
        const lhs = rt.d.compareExpr(`${a}.${rt.d.q(f.column)}`, f)
        if (one.s !== `${lhs} = ?` || one.p.length !== 1) throw new DirectUnsupported('not a single key comparison')
        key = one.p[0]
        return raw(`${lhs} = __k.v`)
      },
      unordered: true,
      emit: new DirectCompiler(rt.d),
    })
    if (ctx.rowFiltered || !key) return null
    const frag = { s: `SELECT __k.i::int4, __b.j FROM unnest(?::${elem}[]) WITH ORDINALITY AS __k(v, i) CROSS JOIN LATERAL (${l.frag.s}) AS __b`, p: [key, ...l.frag.p] }
    return { text: toPlan(ctx, frag, null).text, params: l.frag.p, key }
  } catch {
    return null // not batchable: the plan runs alone
  }
}
