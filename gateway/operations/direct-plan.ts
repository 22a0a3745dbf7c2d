/**
 * Direct JSON execution of a whole query operation (cf. Hasura): when every root field of the
 * operation is a database read whose connector offers a direct plan (`extensions.tributary.direct`,
 * see `connectors/database/direct.ts`), the operation runs one SQL statement per root field whose
 * result is already the field's final JSON, and the response body is assembled from those strings —
 * no JSON parsing, no GraphQL result walk, no re-serialisation. Batched links to REST operations in
 * a root field's selection are served inside its plan (./direct-links.ts). Anything else uses normal
 * GraphQL execution, which also reports every error.
 */
import {
  GraphQLError,
  Kind,
  getNamedType,
  getVariableValues,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  typeFromAST,
  valueFromAST,
  type GraphQLInputType,
  type DocumentNode,
  type VariableDefinitionNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql'
import { selectsProtectedField } from '../auth/permissions.js'
import { DirectPlanUnavailable, type DirectJsonCompiler, type DirectJsonPlan } from '../connectors/database/direct.js'
import { compileLinkedRoot, serveLinks, type LinkedPartial, type LinkedRoot } from './direct-links.js'

/**
 * A direct run whose statement failed once sent (a driver error, `TRB_ERR_DB_TIMEOUT`,
 * `TRB_ERR_DB_CANCELLED`): the caller reports `errors` (`data` is null) and does NOT run the
 * operation again — a failed, timed-out or cancelled statement is never re-run.
 */
export interface DirectFailure {
  /** One error, its `path` the failing root field's response key, `originalError` the statement's error. */
  errors: GraphQLError[]
  /**
   * Set when the statements answered but a link value failed (./direct-links.ts): the data object,
   * with null where the errors are, as GraphQL execution would give it; `errors` are the link values'.
   */
  data?: Record<string, unknown>
}

/** A query operation compiled for direct JSON execution. */
export interface DirectOperation {
  /**
   * Coerces `variables` (GraphQL spec §6.1.2 CoerceVariableValues) and runs every root field's plan.
   * @returns the JSON text of the operation's `data` object; null when the variables do not coerce
   *   or a plan has no statement for them (nothing was run): the caller then runs the operation
   *   through GraphQL execution, which reports why; a {@link DirectFailure} when a statement failed.
   */
  run(variables: Record<string, unknown> | undefined, context: unknown): Promise<string | DirectFailure | null>
  /**
   * The same, for variables already validated against the operation's variables JSON Schema (stored
   * operations): when every variable is a built-in scalar or an enum (or a list of them), coercion is
   * only applying the defaults, done without graphql-js; otherwise it is {@link run}.
   */
  runValidated(variables: Record<string, unknown>, context: unknown): Promise<string | DirectFailure | null>
  /**
   * {@link run} without waiting, for an operation of one database root field without links whose
   * statement can run now (connectors/database/direct.ts `DirectJsonPlan.runNow`: SQLite, a cheap
   * statement, an idle connection): what `run` would resolve to, answered synchronously, or
   * undefined when it cannot answer now — nothing was sent to the database: call `run`. Absent on
   * operations that never can (several root fields, links, another engine).
   */
  runNow?(variables: Record<string, unknown> | undefined, context: unknown): string | DirectFailure | null | undefined
  /** {@link runValidated} without waiting, as {@link runNow}; present when `runNow` is. */
  runValidatedNow?(variables: Record<string, unknown>, context: unknown): string | DirectFailure | null | undefined
  /** How many root fields (statements) the operation runs: a latin1 run (connectors/database/direct.ts `Latin1Context`) is for one. */
  readonly roots: number
  /**
   * True when the plan also calls other sources, through the links in its selection
   * (./direct-links.ts): it needs the request's hooks like GraphQL execution does, and no latin1 run.
   */
  readonly upstream: boolean
}

/**
 * Compiles a query operation for direct execution, once.
 * @returns null when the operation is not a query or any root selection cannot run directly
 *   (a non-database field, `@skip`/`@include`, a fragment at the root, a repeated response key...).
 */
export function compileDirectOperation(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): DirectOperation | null {
  if (operation.operation !== 'query') return null
  // Permissions are checked by resolvers, which a direct plan skips.
  if (selectsProtectedField(schema, document)) return null
  const root = schema.getQueryType()
  if (!root) return null
  const fragments: Record<string, FragmentDefinitionNode> = {}
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d
  const variableDefinitions = operation.variableDefinitions ?? []
  const parts: { key: string; prefix: string; plan: DirectJsonPlan; sites: LinkedRoot['sites'] }[] = []
  const keys = new Set<string>()
  for (const selection of operation.selectionSet.selections) {
    if (selection.kind !== Kind.FIELD || selection.directives?.length) return null
    const field: FieldNode = selection
    const key = field.alias?.value ?? field.name.value
    if (keys.has(key)) return null
    keys.add(key)
    const compile = (root.getFields()[field.name.value]?.extensions as { tributary?: { direct?: DirectJsonCompiler } } | undefined)?.tributary?.direct
    if (typeof compile !== 'function') return null
    // Batched links in the selection are compiled as markers, served once the statement answers.
    const type = getNamedType(root.getFields()[field.name.value]!.type)
    const linked = isObjectType(type) ? compileLinkedRoot(schema, field, type, fragments, operation) : { field, sites: [] }
    if (!linked) return null
    const plan = compile({ schema, field: linked.field, fragments, variableDefinitions })
    if (!plan) return null
    parts.push({ key, prefix: `${parts.length ? ',' : '{'}${JSON.stringify(key)}:`, plan, sites: linked.sites })
  }
  if (!parts.length) return null
  const upstream = parts.some((p) => p.sites.length > 0)

  // Variables whose JSON value is already their coerced value once validated: Int, Float, String,
  // Boolean, ID and enums, and lists of them. Their defaults are computed once.
  const simple = variableDefinitions.every((def) => {
    const type = typeFromAST(schema, def.type as never)
    const named = type && getNamedType(type)
    return !!named && (isEnumType(named) || (isScalarType(named) && isSpecifiedScalarType(named)))
  })
  const defaults: [string, unknown][] = []
  if (simple) {
    for (const def of variableDefinitions) {
      if (def.defaultValue) defaults.push([def.variable.name.value, valueFromAST(def.defaultValue, typeFromAST(schema, def.type as never) as GraphQLInputType)])
    }
  }

  /** One root field: its statement, then its links (a statement failure rejects; a link failure is a {@link LinkedPartial}). */
  const runPart = (part: (typeof parts)[number], coerced: Record<string, unknown>, context: unknown): Promise<string | LinkedPartial> =>
    part.sites.length ? part.plan.run(coerced, context).then((text) => serveLinks(text, part.sites, context, part.key)) : part.plan.run(coerced, context)

  async function execute(coerced: Record<string, unknown>, context: unknown): Promise<string | DirectFailure | null> {
    if (parts.length === 1) {
      let value: string | LinkedPartial
      try {
        value = await runPart(parts[0], coerced, context)
      } catch (err) {
        return failure(parts[0].key, err)
      }
      return typeof value === 'string' ? `${parts[0].prefix}${value}}` : { errors: value.errors, data: { [parts[0].key]: value.value } }
    }
    const settled = await Promise.allSettled(parts.map((p) => runPart(p, coerced, context)))
    let body = ''
    let unavailable = false
    let partials = false
    for (let i = 0; i < parts.length; i++) {
      const r = settled[i]
      if (r.status === 'fulfilled') {
        if (typeof r.value === 'string') body += parts[i].prefix + r.value
        else partials = true
      } else if (r.reason instanceof DirectPlanUnavailable) unavailable = true
      else return failure(parts[i].key, r.reason)
    }
    if (unavailable) return null
    if (!partials) return body + '}'
    // Some link value failed: the data object with its nulls, and the errors in root field order.
    const data: Record<string, unknown> = {}
    const errors: GraphQLError[] = []
    for (let i = 0; i < parts.length; i++) {
      const value = (settled[i] as PromiseFulfilledResult<string | LinkedPartial>).value
      if (typeof value === 'string') data[parts[i].key] = JSON.parse(value)
      else {
        data[parts[i].key] = value.value
        errors.push(...value.errors)
      }
    }
    return { errors, data }
  }

  const quick = simple ? quickCoercion(schema, variableDefinitions) : undefined

  /** CoerceVariableValues: {@link quickCoercion}'s way when it takes it, else graphql-js'; null when the variables do not coerce. */
  function coerce(variables: Record<string, unknown> | undefined): Record<string, unknown> | null {
    if (!variableDefinitions.length) return {}
    const fast = quick?.(variables)
    if (fast) return fast
    const result = getVariableValues(schema, variableDefinitions, variables ?? {})
    return result.errors ? null : result.coerced
  }

  function run(variables: Record<string, unknown> | undefined, context: unknown): Promise<string | DirectFailure | null> {
    const coerced = coerce(variables)
    return coerced ? execute(coerced, context) : Promise.resolve(null)
  }

  /**
   * The variables with their defaults applied, for variables validated as {@link DirectOperation.runValidated}
   * takes them: `variables` itself when every variable with a default is given (never written to: it
   * may be frozen and shared between requests), else a copy with the missing ones set.
   */
  const withDefaults = (variables: Record<string, unknown>): Record<string, unknown> => {
    let coerced: Record<string, unknown> | undefined
    for (let i = 0; i < defaults.length; i++) {
      const [name, value] = defaults[i]!
      if (variables[name] === undefined) (coerced ??= { ...variables })[name] = value
    }
    return coerced ?? variables
  }

  const compiled: DirectOperation = {
    run,
    roots: parts.length,
    upstream,
    runValidated(variables, context) {
      return simple ? execute(withDefaults(variables), context) : run(variables, context)
    },
  }
  const only = parts.length === 1 && !upstream ? parts[0] : undefined
  const runNowPlan = only?.plan.runNow ? only : undefined
  if (runNowPlan) {
    /** {@link execute} without waiting: the one root field's statement now, else undefined (nothing sent). */
    const executeNow = (coerced: Record<string, unknown>, context: unknown): string | DirectFailure | null | undefined => {
      let value: string | undefined
      try {
        value = runNowPlan.plan.runNow!(coerced, context)
      } catch (err) {
        return failure(runNowPlan.key, err)
      }
      return value === undefined ? undefined : `${runNowPlan.prefix}${value}}`
    }
    compiled.runNow = (variables, context) => {
      const coerced = coerce(variables)
      return coerced ? executeNow(coerced, context) : null
    }
    compiled.runValidatedNow = (variables, context) => (simple ? executeNow(withDefaults(variables), context) : compiled.runNow!(variables, context))
  }
  return compiled
}

/** null for a plan without a statement (GraphQL execution follows), else the statement's failure as a {@link DirectFailure}. */
function failure(key: string, err: unknown): DirectFailure | null {
  if (err instanceof DirectPlanUnavailable) return null
  const original = err instanceof Error ? err : new Error(String(err))
  const code = (original as { code?: unknown }).code
  return { errors: [new GraphQLError(original.message, { path: [key], originalError: original, ...(typeof code === 'string' && code.startsWith('TRB_ERR_') ? { extensions: { code } } : {}) })] }
}

/** Coerces one provided, non-null value of a built-in scalar or enum; `undefined` when it does not take the fast way. */
type QuickScalar = (value: unknown) => unknown

const INT_MIN = -2147483648
const INT_MAX = 2147483647

/**
 * CoerceVariableValues (GraphQL spec §6.1.2) compiled once per operation for its common case: every
 * variable a built-in scalar or an enum, not a list. Per request it only checks each value's JSON type
 * (Int: an integer within 32 bits; Float: a finite number; String; Boolean; ID: a string, or an integer
 * made a string; enum: the name of one of its values, given as its internal value) and applies the
 * defaults. Anything else — a list type, a missing non-null variable, null for a non-null one, a value
 * of another type — answers `undefined`, and the caller runs graphql-js' `getVariableValues`, which
 * coerces or reports it: the result is always what graphql-js would give.
 * @returns undefined when some variable's type is not of that kind (then always graphql-js)
 */
export function quickCoercion(schema: GraphQLSchema, definitions: readonly VariableDefinitionNode[]): ((variables: Record<string, unknown> | undefined) => Record<string, unknown> | undefined) | undefined {
  const vars: { name: string; nonNull: boolean; scalar: QuickScalar; hasDefault: boolean; defaultValue: unknown }[] = []
  for (const def of definitions) {
    const declared = typeFromAST(schema, def.type as never) as GraphQLInputType | undefined
    if (!declared) return undefined
    const nonNull = isNonNullType(declared)
    const type = nonNull ? declared.ofType : declared
    if (isListType(type)) return undefined
    let scalar: QuickScalar
    if (isEnumType(type)) {
      const enumType = type
      scalar = (v) => {
        if (typeof v !== 'string') return undefined
        const value = enumType.getValue(v)
        return value ? value.value : undefined
      }
    } else if (isScalarType(type) && isSpecifiedScalarType(type)) {
      switch (type.name) {
        case 'Int':
          scalar = (v) => (typeof v === 'number' && Number.isInteger(v) && v >= INT_MIN && v <= INT_MAX ? v : undefined)
          break
        case 'Float':
          scalar = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined)
          break
        case 'String':
          scalar = (v) => (typeof v === 'string' ? v : undefined)
          break
        case 'Boolean':
          scalar = (v) => (typeof v === 'boolean' ? v : undefined)
          break
        default: // ID
          scalar = (v) => (typeof v === 'string' ? v : typeof v === 'number' && Number.isInteger(v) ? String(v) : undefined)
      }
    } else return undefined
    const defaultValue = def.defaultValue ? valueFromAST(def.defaultValue, type) : undefined
    // A default that does not coerce is graphql-js' to report.
    if (def.defaultValue && defaultValue === undefined) return undefined
    vars.push({ name: def.variable.name.value, nonNull, scalar, hasDefault: def.defaultValue !== undefined, defaultValue })
  }
  return (variables) => {
    const out: Record<string, unknown> = {}
    for (const v of vars) {
      const given = variables && Object.hasOwn(variables, v.name) ? variables[v.name] : undefined
      if (given === undefined) {
        if (v.hasDefault) out[v.name] = v.defaultValue
        else if (v.nonNull) return undefined
        continue
      }
      if (given === null) {
        if (v.nonNull) return undefined
        out[v.name] = null
        continue
      }
      const coerced = v.scalar(given)
      if (coerced === undefined) return undefined
      out[v.name] = coerced
    }
    return out
  }
}
