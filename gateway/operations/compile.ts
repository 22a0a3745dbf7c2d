/**
 * Compiles a stored operation once, at startup: its variables validators (ajv), its executor
 * (graphql-jit) and its response serialiser (fast-json-stringify). A request then runs no GraphQL
 * parsing or validation.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import fastJson from 'fast-json-stringify'
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit'
import { GraphQLError, execute as executeJs, subscribe as subscribeJs, type ExecutionResult, type GraphQLSchema } from 'graphql'
import { isJitSafe } from './jit-safety.js'
import { assertSafeKey, parseJsonSafely } from '../safe-keys.js'
import { compileDirectOperation, type DirectOperation } from './direct-plan.js'
import { BadRequestError, OperationInvalidError, OperationVariablesError } from '../errors.js'
import { omitProperties, responseSchema, variablesSchema, type JsonSchema } from './json-schema.js'
import { injectedVariables, type OperationDirectiveRules } from './directives.js'
import { applyOperationDirectives, directedResponseSchema } from './joins.js'
import type { GraphQLStoredOperation, StoredOperation } from './load.js'
import { jsonDepth } from '../json-depth.js'
import { filterCost } from './filter-cost.js'
import { authorize, claimVariables, type OperationAuthRules } from '../auth/directives.js'
import type { AuthInfo } from '../auth/jwt.js'
import { AuthForbiddenError } from '../errors.js'

/** Variables of one request, after coercion. */
export type Variables = Record<string, unknown>

/** One bad variable, as reported in a 400 body. */
export interface VariableProblem {
  /** The variable's name, or `''` for the whole object. */
  variable: string
  /** JSON Pointer into the variables object (`/where/id`). */
  path: string
  /** JSON Schema path of the failing keyword (`#/properties/id/type`). */
  schemaPath: string
  message: string
}

/** The 400 error of invalid variables; `problems` lists every bad or missing variable. */
export type VariablesError = InstanceType<typeof OperationVariablesError> & { problems: VariableProblem[] }

/** A stored operation compiled for serving. */
export interface CompiledOperation {
  readonly stored: StoredOperation
  readonly name: string
  readonly kind: 'query' | 'mutation' | 'subscription'
  /**
   * True for `@internalOperation` operations and files under `internal/`: not served over HTTP
   * (404 as if unknown), not in the OpenAPI document or the typed client; callable in process
   * (TypeScript operations, hooks) through the operations registry.
   */
  readonly internal: boolean
  /** The variables a client sends: `@fromClaim`, `@internal` and `@inject…` variables are not among them (sending one is a 400). */
  readonly variablesSchema: JsonSchema
  readonly responseSchema: JsonSchema
  /**
   * Checks an identity against the operation's `@requireAuthentication`/`@rbac` rules, adds its
   * `@fromClaim` variables to `variables` (checked against their GraphQL types) and its server-side
   * variables (`@injectGeneratedUUID`, `@injectCurrentDateTime`, `@injectEnvironmentVariable`), and
   * drops null variables under `@removeNullVariables`. Every caller (HTTP, in-process) runs it
   * before `execute`/`subscribe`/`direct`.
   * @returns `variables` itself when the operation has none of these, else a copy.
   * @throws AuthRequiredError (401), AuthForbiddenError (403: a role or claim is missing, or a claim
   *   does not fit its variable's type).
   */
  authorize(variables: Variables, auth: AuthInfo | null): Variables
  /** Query-string params (strings, or arrays of strings when repeated) → variables; `variables=<JSON>` is merged. @throws VariablesError */
  variablesFromQuery(query: Record<string, string | string[] | undefined>): Variables
  /** A JSON body → variables, checked without type coercion. @throws VariablesError */
  variablesFromBody(body: unknown): Variables
  /** Runs a query or mutation. Never throws for GraphQL errors: they are in `errors`. */
  execute(variables: Variables, context: Record<string, unknown>): Promise<ExecutionResult>
  /** Starts a subscription: an async iterator of results, or a result with errors. */
  subscribe(variables: Variables, context: Record<string, unknown>): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult>
  /** Direct JSON execution when every root field is a database read that supports it; else null. */
  readonly direct: DirectOperation | null
  /** Serialises an error-free `data` object with the response schema. */
  stringifyData(data: unknown): string
}

// verbose: errors carry their parentSchema, from which {@link schemaPaths} gives the full schemaPath.
const ajvOptions = { allErrors: true, strict: false, useDefaults: false, verbose: true } as const
let queryAjvInstance: Ajv | undefined
let bodyAjvInstance: Ajv | undefined
/** The ajv instance for query-string variables (types coerced), created on first use (start-up time, issue 30). */
function queryAjv(): Ajv {
  if (!queryAjvInstance) addFormats.default((queryAjvInstance = new Ajv({ ...ajvOptions, coerceTypes: 'array' })))
  return queryAjvInstance
}
/** The ajv instance for JSON-body variables, created on first use (start-up time, issue 30). */
function bodyAjv(): Ajv {
  if (!bodyAjvInstance) addFormats.default((bodyAjvInstance = new Ajv({ ...ajvOptions })))
  return bodyAjvInstance
}

/**
 * A validator of `schema` compiled by `ajv()` on its first call, not when the operation is compiled:
 * a stored operation's variables validators are compiled by its first request, which keeps ajv's
 * code generation (about 10 ms per operation) out of the gateway's start-up (issue 30). The
 * returned function has ajv's `ValidateFunction` call contract (its `errors` set by each call).
 */
function lazyValidator(ajv: () => Ajv, schema: JsonSchema): { (data: unknown): boolean; errors?: ValidateFunction['errors'] } {
  let validate: ValidateFunction | undefined
  const lazy = (data: unknown): boolean => {
    validate ??= ajv().compile(schema)
    const ok = validate(data)
    lazy.errors = validate.errors
    return ok
  }
  lazy.errors = undefined as ValidateFunction['errors']
  return lazy
}

/**
 * The JSON Pointer (as a `#…` fragment) of every subschema of a variables schema, by identity. ajv
 * reports a keyword inside a `$ref` target relative to that target (`#/properties/equals/type`);
 * with this map the 400 names it from the root (`#/$defs/StringFilter/properties/equals/type`).
 */
function schemaPaths(schema: JsonSchema): WeakMap<object, string> {
  const paths = new WeakMap<object, string>()
  const escape = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1')
  const walk = (node: JsonSchema | undefined, path: string) => {
    if (!node || typeof node !== 'object' || paths.has(node)) return
    paths.set(node, path)
    for (const [key, sub] of Object.entries(node.properties ?? {})) walk(sub, `${path}/properties/${escape(key)}`)
    if (node.items) walk(node.items, `${path}/items`)
    node.anyOf?.forEach((sub, i) => walk(sub, `${path}/anyOf/${i}`))
    for (const [key, sub] of Object.entries((node.$defs ?? {}) as Record<string, JsonSchema>)) walk(sub, `#/$defs/${escape(key)}`)
  }
  walk(schema, '#')
  return paths
}

/** The `$defs` name of a schema path (`#/$defs/X/...` → `X`), or undefined for the root. */
function defOf(schemaPath: string): string | undefined {
  return /^#\/\$defs\/([^/]+)/.exec(schemaPath)?.[1]?.replace(/~1/g, '/').replace(/~0/g, '~')
}

function problemsOf(errors: ErrorObject[] | null | undefined, paths: WeakMap<object, string>): VariableProblem[] {
  return (errors ?? []).map((e) => {
    let path = e.instancePath
    let message = e.message ?? 'is invalid'
    const parent = e.parentSchema ? paths.get(e.parentSchema) : undefined
    const schemaPath = parent === undefined ? e.schemaPath : `${parent}/${e.keyword}`
    if (e.keyword === 'required') {
      path = `${path}/${(e.params as { missingProperty: string }).missingProperty}`
      message = 'is required'
    } else if (e.keyword === 'additionalProperties') {
      path = `${path}/${(e.params as { additionalProperty: string }).additionalProperty}`
      const inputObject = defOf(schemaPath)
      message = inputObject ? `is not a field of the input object ${inputObject}` : 'is not a variable of this operation'
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`
    }
    return { variable: path.split('/')[1] ?? '', path, schemaPath, message }
  })
}

/** Creates the 400 error for a list of problems. */
export function variablesError(problems: VariableProblem[]): VariablesError {
  const summary = problems.map((p) => `${p.path.slice(1).replace(/\//g, '.') || '(variables)'} ${p.message}`).join('; ')
  const err = new OperationVariablesError(summary) as VariablesError
  err.problems = problems
  return err
}

/** Deepest `a[b][c]…` nesting accepted in a query-string key. */
export const MAX_QUERY_KEY_DEPTH = 16

/**
 * Puts `a[b]=1` and `a[]=1` query keys into nested objects and lists (WunderGraph, qs style).
 * Every segment is checked by {@link assertSafeKey}, and objects are built without a prototype.
 * @throws BadRequestError for a `__proto__`/`constructor`/`prototype` segment or a key nested deeper than {@link MAX_QUERY_KEY_DEPTH}.
 */
function unflatten(query: Record<string, string | string[] | undefined>): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null)
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue
    const m = /^([^[\]]+)((\[[^[\]]*\])+)$/.exec(key)
    if (!m) {
      assertSafeKey(key, 'query-string key')
      out[key] = value
      continue
    }
    const parts = [...m[2].matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1])
    if (parts.length > MAX_QUERY_KEY_DEPTH) throw new BadRequestError(`The query-string key "${m[1]}" is nested deeper than ${MAX_QUERY_KEY_DEPTH} levels`)
    assertSafeKey(m[1], 'query-string key')
    for (const part of parts) assertSafeKey(part, 'query-string key segment')
    let node = out as Record<string, unknown>
    let k = m[1]
    for (const part of parts) {
      if (part === '') {
        const list = Array.isArray(node[k]) ? (node[k] as unknown[]) : (node[k] = [])
        ;(list as unknown[]).push(...(Array.isArray(value) ? value : [value]))
        node = Object.create(null)
        k = ''
        break
      }
      const child = Object.hasOwn(node, k) ? node[k] : undefined
      node = (child && typeof child === 'object' && !Array.isArray(child) ? child : (node[k] = Object.create(null))) as Record<string, unknown>
      k = part
    }
    if (k !== '') node[k] = value
  }
  return out
}

function needsJson(schema: JsonSchema | undefined): boolean {
  if (!schema) return false
  if (schema.$ref !== undefined) return true // input objects are references into $defs
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  if (types.includes('object')) return true
  if (types.includes('array')) return needsJson(schema.items)
  return !!schema.anyOf?.some(needsJson)
}

/** True when the empty string is a value of this schema's type (String, ID, DateTime...; for lists, of the items). */
function acceptsEmptyString(schema: JsonSchema | undefined): boolean {
  if (!schema) return true
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  if (types.includes('array')) return acceptsEmptyString(schema.items)
  return types.includes('string') && !types.includes('integer') && !types.includes('number')
}

function isBooleanSchema(schema: JsonSchema | undefined): boolean {
  if (!schema) return false
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  return types.includes('boolean')
}

/** Options of {@link compileOperation}. */
export interface CompileOperationOptions {
  /** Deepest nesting of object/list variables (`graphql.maxInputDepth`); deeper ones are a 400 `TRB_ERR_OPERATION_VARIABLES`. Default 32. */
  maxInputDepth?: number
  /** `graphql.maxCost` and `graphql.defaultListSize`: relation filters sent in variables that cost more (operations/filter-cost.ts) are a 400 `TRB_ERR_OPERATION_VARIABLES`. Default: not priced. */
  cost?: { maxCost: number; listSize: number }
}

/** `@removeNullVariables`: the variables without those whose value is null (so their defaults apply). */
function withoutNulls(variables: Variables): Variables {
  const out: Variables = {}
  for (const [k, v] of Object.entries(variables)) if (v !== null) out[k] = v
  return out
}

/**
 * A variables schema with the `@jsonSchema` keywords of its variables merged in: `list` keywords on
 * a list variable's own schema, `value` keywords on its items (on the variable's schema when it is
 * not a list). The properties touched are copies; `schema` is not changed.
 */
function withJsonSchemaKeywords(schema: JsonSchema, keywords: OperationDirectiveRules['jsonSchema']): JsonSchema {
  const names = Object.keys(keywords)
  if (!names.length || !schema.properties) return schema
  const properties = { ...schema.properties }
  for (const name of names) {
    const prop = properties[name]
    if (!prop) continue
    const { value, list } = keywords[name]!
    const merged: JsonSchema = prop.items ? { ...prop, ...list, items: { ...prop.items, ...value } } : { ...prop, ...list, ...value }
    // The rules are also written out in the description: the typed client's docstrings show them.
    const all: JsonSchema = { ...list, ...value }
    const rules = Object.entries(all).filter(([k]) => k !== 'title' && k !== 'description').map(([k, v]) => `${k} ${Array.isArray(v) ? v.join('|') : String(v)}`)
    if (rules.length) merged.description = `${all.description ? `${all.description}. ` : ''}Rules: ${rules.join(', ')}.`
    properties[name] = merged
  }
  return { ...schema, properties }
}

/**
 * The two readers of an operation's variables (or a TypeScript operation's input) against its JSON
 * Schema: from a query string (strings coerced to the schema's types, `a[b]=` keys nested, JSON for
 * object and list variables) and from a JSON body (no coercion). Both refuse input nested deeper than
 * `maxInputDepth`, then run `checkObjects` (only when a variable can hold an object or list), then ajv.
 * @throws VariablesError (400 `TRB_ERR_OPERATION_VARIABLES`) listing every problem; BadRequestError for a forbidden query-string key.
 */
export function variableReaders(
  vSchema: JsonSchema,
  maxInputDepth: number,
  checkObjects?: (vars: Record<string, unknown>) => void,
): Pick<CompiledOperation, 'variablesFromQuery' | 'variablesFromBody'> {
  const paths = schemaPaths(vSchema)
  const validateQuery = lazyValidator(queryAjv, vSchema)
  const validateBody = lazyValidator(bodyAjv, vSchema)
  const properties = vSchema.properties ?? {}
  const jsonVars = new Set(Object.entries(properties).filter(([, s]) => needsJson(s)).map(([k]) => k))
  const boolVars = new Set(Object.entries(properties).filter(([, s]) => isBooleanSchema(s)).map(([k]) => k))
  // `?id=` for an Int is an error, not null and not the default (README, "Variables").
  const noEmptyVars = new Set(Object.entries(properties).filter(([, s]) => !acceptsEmptyString(s) && !isBooleanSchema(s) && !needsJson(s)).map(([k]) => k))
  /** Refuses variables nested deeper than maxInputDepth (only operations with object or list variables can nest). */
  const checkDepth = (vars: Record<string, unknown>): void => {
    if (jsonVars.size === 0 || jsonDepth(vars, maxInputDepth + 1) <= maxInputDepth + 1) return
    throw variablesError([{ variable: '', path: '', schemaPath: '#', message: `must not be nested more than ${maxInputDepth} levels deep (maxInputDepth)` }])
  }
  /** Runs `checkObjects` (relation filter cost) when a variable can hold an object or a list. */
  const checkFilterCost = (vars: Record<string, unknown>): void => {
    if (jsonVars.size > 0 && checkObjects) checkObjects(vars)
  }
  return {
    variablesFromQuery(query) {
      let vars: Record<string, unknown> = {}
      const problems: VariableProblem[] = []
      const json = query.variables
      if (json !== undefined) {
        try {
          const parsed = parseJsonSafely(Array.isArray(json) ? json[json.length - 1] : json)
          if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object')
          vars = parsed as Record<string, unknown>
        } catch (err) {
          if (err instanceof BadRequestError) throw err
          problems.push({ variable: 'variables', path: '/variables', schemaPath: '#', message: 'must be a JSON object' })
        }
      }
      let params: Record<string, unknown> = query
      for (const key in query) {
        if (key.includes('[')) {
          params = unflatten(query)
          break
        }
        assertSafeKey(key, 'query-string key')
      }
      for (const key in params) {
        if (key === 'variables') continue
        const value = params[key]
        if (value === undefined) continue
        if (jsonVars.has(key) && typeof value === 'string') {
          try {
            vars[key] = parseJsonSafely(value)
          } catch (err) {
            if (err instanceof BadRequestError) throw err
            problems.push({ variable: key, path: `/${key}`, schemaPath: `#/properties/${key}`, message: 'must be JSON' })
          }
        } else if (value === '' && boolVars.has(key)) {
          vars[key] = true // a bare ?flag is true (Hasura)
        } else if (noEmptyVars.has(key) && (value === '' || (Array.isArray(value) && value.includes('')))) {
          problems.push({ variable: key, path: `/${key}`, schemaPath: `#/properties/${key}/type`, message: 'is empty: give a value, or leave the parameter out to use the default' })
        } else {
          vars[key] = value
        }
      }
      if (problems.length) throw variablesError(problems)
      checkDepth(vars)
      checkFilterCost(vars)
      if (!validateQuery(vars)) throw variablesError(problemsOf(validateQuery.errors, paths))
      return vars
    },

    variablesFromBody(body) {
      const vars = body === undefined || body === null || body === '' ? {} : body
      if (typeof vars !== 'object' || Array.isArray(vars)) {
        throw variablesError([{ variable: '', path: '', schemaPath: '#/type', message: 'the body must be a JSON object of variables' }])
      }
      checkDepth(vars as Record<string, unknown>)
      checkFilterCost(vars as Record<string, unknown>)
      if (!validateBody(vars)) throw variablesError(problemsOf(validateBody.errors, paths))
      return vars as Variables
    },
  }
}

/**
 * The reader of an operation's claimed variables (`@fromClaim` of a `.graphql` operation, `fromClaim`
 * of a TypeScript one): each claim's value, checked on its own against the variable's JSON Schema
 * (`full`, the schema before the claimed variables were removed, with the `$defs` it points into).
 * Call it after {@link authorize} (it needs an identity).
 * @returns null when the operation claims nothing; else a function that
 * @throws AuthForbiddenError (403) when the token lacks a claim, or its value does not fit the variable.
 */
export function claimReader(rules: OperationAuthRules | null, full: JsonSchema): ((auth: AuthInfo) => Variables) | null {
  const fromClaim = rules?.fromClaim ?? {}
  const checks = Object.keys(fromClaim).map((v) => [v, bodyAjv().compile({ ...(full.properties?.[v] ?? {}), ...(full.$defs ? { $defs: full.$defs } : {}) })] as const)
  if (!rules || checks.length === 0) return null
  return (auth) => {
    const claims = claimVariables(rules, auth)
    for (const [v, check] of checks) {
      if (!check(claims[v])) throw new AuthForbiddenError(`the "${fromClaim[v]}" claim does not fit $${v}: it ${check.errors?.[0]?.message ?? 'is invalid'}`)
    }
    return claims
  }
}

/**
 * Compiles a stored operation against the schema.
 * @throws OperationInvalidError when graphql-jit cannot compile it (it was validated already, so this is rare).
 */
export function compileOperation(stored: GraphQLStoredOperation, schema: GraphQLSchema, options: CompileOperationOptions = {}): CompiledOperation {
  const maxInputDepth = options.maxInputDepth ?? 32
  const fullSchema = variablesSchema(schema, stored.operation, stored.document)
  const fromClaim = stored.auth?.fromClaim ?? {}
  const claimVars = Object.keys(fromClaim)
  const rules = stored.rules
  const serverVars = [...claimVars, ...rules.internalVariables, ...Object.keys(rules.inject)]
  const publicSchema = withJsonSchemaKeywords(fullSchema, rules.jsonSchema)
  const vSchema = serverVars.length ? omitProperties(publicSchema, serverVars, true) : publicSchema
  const injecting = Object.keys(rules.inject).length > 0
  const directed = rules.joins.length > 0 || rules.transforms.length > 0 || rules.later !== null
  const claimsOf = claimReader(stored.auth, fullSchema)
  const what = `operation ${stored.name}`
  let rSchema: JsonSchema
  try {
    rSchema = directedResponseSchema(schema, responseSchema(schema, stored.document, stored.operation), rules)
  } catch (err) {
    throw new OperationInvalidError(`${stored.file}: ${(err as Error).message}`, { cause: err })
  }
  const readers = variableReaders(vSchema, maxInputDepth, options.cost ? (vars) => {
    const cost = filterCost(schema, stored.document, stored.operation, options.cost!.listSize, vars, true)
    if (cost > options.cost!.maxCost) throw variablesError([{ variable: '', path: '', schemaPath: '#', message: `hold relation filters that cost ${cost}, more than the maximum of ${options.cost!.maxCost} (maxCost)` }])
  } : undefined)

  // graphql-jit when it can compile the operation; graphql-js (no parsing or validation either) when not.
  let run: { query(vars: Variables, ctx: unknown): Promise<ExecutionResult> | ExecutionResult; subscribe(vars: Variables, ctx: unknown): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> }
  const operationName = stored.operation.name!.value
  if (isJitSafe(schema, stored.document, stored.operation)) {
    const compiled = compileQuery(schema, stored.document, operationName, { disablingCapturingStackErrors: true })
    if (!isCompiledQuery(compiled)) {
      throw new OperationInvalidError(`${stored.file}: ${compiled.errors?.map((e) => e.message).join('; ')}`)
    }
    const jit = compiled as CompiledQuery
    run = {
      query: (vars, ctx) => jit.query(undefined, ctx, vars),
      subscribe: async (vars, ctx) => (jit.subscribe ? jit.subscribe(undefined, ctx, vars) : { errors: [new GraphQLError('not a subscription')] }),
    }
  } else {
    run = {
      query: (vars, ctx) => executeJs({ schema, document: stored.document, operationName, variableValues: vars, contextValue: ctx }),
      subscribe: (vars, ctx) => subscribeJs({ schema, document: stored.document, operationName, variableValues: vars, contextValue: ctx }),
    }
  }
  let stringify: (data: unknown) => string
  try {
    stringify = fastJson(rSchema as Parameters<typeof fastJson>[0]) as (data: unknown) => string
  } catch {
    stringify = JSON.stringify
  }

  return {
    stored,
    name: stored.name,
    kind: stored.kind,
    internal: stored.internal,
    variablesSchema: vSchema,
    responseSchema: rSchema,
    // `_join` and `@transform` work on the data object, which the direct plan never builds.
    direct: directed ? null : compileDirectOperation(schema, stored.document, stored.operation),

    variablesFromQuery: readers.variablesFromQuery,
    variablesFromBody: readers.variablesFromBody,

    async execute(variables, context) {
      const result = await run.query(variables, context)
      if (!directed || !result.data) return result
      const errors = await applyOperationDirectives(schema, rules, result.data as Record<string, unknown>, variables, context)
      return errors.length ? { ...result, errors: [...(result.errors ?? []), ...errors] } : result
    },

    async subscribe(variables, context) {
      return run.subscribe(variables, context)
    },

    authorize(variables, auth) {
      authorize(stored.auth, auth, what)
      let out = variables
      if (claimsOf) out = { ...out, ...claimsOf(auth!) }
      if (injecting) out = { ...out, ...injectedVariables(rules.inject) }
      if (rules.removeNullVariables) out = withoutNulls(out)
      return out
    },

    stringifyData(data) {
      try {
        return stringify(data)
      } catch {
        return JSON.stringify(data)
      }
    },
  }
}
