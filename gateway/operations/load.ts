/**
 * Loads stored operations from `operations/`: one named operation per `.graphql` file (fragments may
 * sit beside it), parsed and validated once against the composed schema, and one TypeScript operation
 * per `.ts` file (imported through tsx, gateway/operations/define.ts). Sub-folders become URL
 * segments; files under `internal/` are loaded (callable from code) but not served over HTTP.
 * `operations.defaults` are applied here too ({@link withOperationDefaults}).
 */
import { readdir, readFile } from 'node:fs/promises'
import { basename, join, relative, sep } from 'node:path'
import {
  GraphQLError,
  Kind,
  NoUnusedFragmentsRule,
  NoUnusedVariablesRule,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql'
import { OperationInvalidError } from '../errors.js'
import { extractAuthDirectives, type OperationAuthRules } from '../auth/directives.js'
import { isTypeScriptOperation, type TypeScriptOperation } from './define.js'
import { importModule } from '../config/load.js'
import type { TributaryConfig } from '../config/index.js'
import { extractOperationDirectives, type OperationDirectiveRules } from './directives.js'

/** Per-operation settings read from `# @cache ...` and `# @live ...` comment lines of its file. */
export interface OperationDirectives {
  /** `# @cache maxAge=60 staleWhileRevalidate=30 public|private mustRevalidate`: Cache-Control of GET responses. */
  cache?: { maxAge: number; staleWhileRevalidate?: number; public: boolean; mustRevalidate: boolean }
  /** `# @live interval=2000`: live-query poll interval in milliseconds. */
  liveIntervalMs?: number
  /** `# @live off` (or `live: false` in a TypeScript query, or `operations.defaults.queries.live: false`): `?live=true` is refused. */
  liveOff?: boolean
  /** `# @cache off`: the config's `operations.defaults.queries.cache` does not apply. */
  cacheOff?: boolean
  /** `# @authentication on|off`: overrides `operations.defaults.<kind>.authentication` (`@rbac`/`@fromClaim` still need a token). */
  authentication?: boolean
}

/** What every stored operation has, whatever its language. */
export interface StoredOperationBase {
  /** URL name: the file's path under `operations/` without `.graphql`/`.ts`, with `/` separators (`users/GetUser`). */
  name: string
  /** The file's path as shown in errors (relative to the working directory). */
  file: string
  /** The file's text. */
  source: string
  /** `query`, `mutation` or `subscription`. */
  kind: 'query' | 'mutation' | 'subscription'
  /** True for files under `internal/` and operations marked `@internalOperation`: never served over HTTP. */
  internal: boolean
  directives: OperationDirectives
  /** What `@requireAuthentication`, `@rbac` and `@fromClaim` require (gateway/auth/directives.ts); null when it uses none. */
  auth: OperationAuthRules | null
}

/** A `.graphql` stored operation. */
export interface GraphQLStoredOperation extends StoredOperationBase {
  readonly language: 'graphql'
  /** What the data directives declare (`@internal`, `@inject…`, `@jsonSchema`, `@export`/`_join`, `@transform`...; ./directives.ts). */
  rules: OperationDirectiveRules
  /** The parsed document: the operation and the fragments it uses, without its auth directives. */
  document: DocumentNode
  /** The operation definition itself. */
  operation: OperationDefinitionNode
}

/** A TypeScript operation (`operations/**\/*.ts`, gateway/operations/typescript.ts). */
export interface TypeScriptStoredOperation extends StoredOperationBase {
  readonly language: 'typescript'
  /** What the file default-exports. */
  definition: TypeScriptOperation
}

/** One stored operation as loaded from its file. */
export type StoredOperation = GraphQLStoredOperation | TypeScriptStoredOperation

/** True for a TypeScript operation file: `.ts`, `.mts` (not `.d.ts`, not a test). */
function isTypeScriptOperationFile(name: string): boolean {
  return /\.m?ts$/.test(name) && !/\.d\.m?ts$/.test(name) && !/\.test\.m?ts$/.test(name)
}

async function listOperationFiles(dir: string): Promise<string[]> {
  let entries
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  return entries
    .filter((e) => e.isFile() && (e.name.endsWith('.graphql') || isTypeScriptOperationFile(e.name)))
    .map((e) => join(e.parentPath ?? (e as unknown as { path: string }).path, e.name))
    .sort()
}

const JOIN_RULES = specifiedRules.filter((r) => r !== NoUnusedFragmentsRule)
/** A main selection whose `_join`s or later root fields use some of its variables: ./directives.ts checks unused variables over the whole operation. */
const MAIN_RULES_WITH_JOINS = specifiedRules.filter((r) => r !== NoUnusedVariablesRule)

function location(file: string, err: GraphQLError): string {
  const loc = err.locations?.[0]
  return loc ? `${file}:${loc.line}:${loc.column}` : file
}

/** Parses `# @cache`, `# @live` (each also `off`: no config default) and `# @authentication on|off` comment lines. Unknown keys are an error, so typos do not pass silently. */
export function parseDirectives(source: string, file: string): OperationDirectives {
  const directives: OperationDirectives = {}
  const lines = source.split('\n')
  lines.forEach((line, i) => {
    const m = /^\s*#\s*@(cache|live|authentication)\b(.*)$/.exec(line)
    if (!m) return
    const where = `${file}:${i + 1}:1`
    const args = m[2].trim().split(/\s+/).filter(Boolean)
    const num = (v: string | undefined, key: string) => {
      if (v === undefined || !/^\d+$/.test(v)) throw new OperationInvalidError(`${where}: @${m[1]} ${key} must be a whole number`)
      return Number(v)
    }
    if (m[1] === 'authentication') {
      if (args.length !== 1 || (args[0] !== 'on' && args[0] !== 'off')) throw new OperationInvalidError(`${where}: @authentication takes on or off`)
      directives.authentication = args[0] === 'on'
    } else if (args.length === 1 && args[0] === 'off') {
      if (m[1] === 'cache') directives.cacheOff = true
      else directives.liveOff = true
    } else if (m[1] === 'cache') {
      const cache = { maxAge: 0, public: true, mustRevalidate: false } as NonNullable<OperationDirectives['cache']>
      for (const arg of args) {
        const [key, value] = arg.split('=')
        if (key === 'maxAge') cache.maxAge = num(value, key)
        else if (key === 'staleWhileRevalidate') cache.staleWhileRevalidate = num(value, key)
        else if (key === 'public') cache.public = true
        else if (key === 'private') cache.public = false
        else if (key === 'mustRevalidate') cache.mustRevalidate = true
        else throw new OperationInvalidError(`${where}: unknown @cache option "${key}" (maxAge, staleWhileRevalidate, public, private, mustRevalidate)`)
      }
      directives.cache = cache
    } else {
      for (const arg of args) {
        const [key, value] = arg.split('=')
        if (key === 'interval') directives.liveIntervalMs = num(value, key)
        else throw new OperationInvalidError(`${where}: unknown @live option "${key}" (interval)`)
      }
    }
  })
  return directives
}

/**
 * Parses and validates one operation file's text.
 * @param name the URL name (`users/GetUser`).
 * @param file the path shown in errors.
 * @throws OperationInvalidError `file:line:column: message` for a syntax or validation error, or when
 *   the file does not hold exactly one named operation.
 */
export function loadOperationSource(name: string, file: string, source: string, schema: GraphQLSchema): GraphQLStoredOperation {
  let document: DocumentNode
  try {
    document = parse(source)
  } catch (err) {
    throw new OperationInvalidError(`${location(file, err as GraphQLError)}: ${(err as GraphQLError).message}`, { cause: err })
  }
  const extracted = extractAuthDirectives(document)
  if (extracted.errors.length > 0) {
    throw new OperationInvalidError(extracted.errors.map((e) => `${location(file, e)}: ${e.message}`).join('\n'), { cause: extracted.errors[0] })
  }
  document = extracted.document
  const data = extractOperationDirectives(document, schema)
  const fail = (errors: readonly GraphQLError[]) => {
    throw new OperationInvalidError(errors.map((e) => `${location(file, e)}: ${e.message}`).join('\n'), { cause: errors[0] })
  }
  if (data.errors.length > 0) fail(data.errors)
  document = data.document
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)
  if (operations.length !== 1) {
    throw new OperationInvalidError(`${file}:1:1: a stored operation file must hold exactly one operation, found ${operations.length}`)
  }
  const operation = operations[0]
  if (!operation.name) {
    const loc = operation.loc?.startToken
    throw new OperationInvalidError(`${file}:${loc?.line ?? 1}:${loc?.column ?? 1}: the operation must be named`)
  }
  const errors = validate(schema, document, data.rules.joins.length || data.rules.later ? MAIN_RULES_WITH_JOINS : specifiedRules)
  if (errors.length > 0) fail(errors)
  // A joined selection, and the later root fields, are validated as operations of their own (they may leave some of the file's fragments unused).
  for (const join of [...data.rules.joins, ...(data.rules.later ? [data.rules.later] : [])]) {
    const joinErrors = validate(schema, join.document, JOIN_RULES)
    if (joinErrors.length > 0) fail(joinErrors)
  }
  const auth = extracted.rules.get(operation.name.value) ?? null
  const serverSet = [...data.rules.internalVariables, ...Object.keys(data.rules.inject)].filter((v) => auth?.fromClaim[v] !== undefined)
  if (serverSet.length) {
    const v = operation.variableDefinitions!.find((d) => d.variable.name.value === serverSet[0])!
    fail([new GraphQLError(`$${serverSet[0]} can take only one of @internal, @injectGeneratedUUID, @injectCurrentDateTime, @injectEnvironmentVariable, @fromClaim`, { nodes: v })])
  }
  return {
    language: 'graphql',
    name,
    file,
    source,
    document,
    operation,
    kind: operation.operation,
    internal: name === 'internal' || name.startsWith('internal/') || data.rules.internalOperation,
    directives: parseDirectives(source, file),
    rules: data.rules,
    auth,
  }
}

/**
 * The `file:line:column` of an error thrown while importing a TypeScript file: esbuild's (through tsx)
 * `<file>:<line>:<column>: ERROR: …` for a syntax error, else the first stack frame in the file.
 */
function importErrorLocation(err: unknown, absFile: string, shown: string): string {
  const e = err as { message?: string; stack?: string; errors?: { location?: { line: number; column: number } }[] }
  const loc = e?.errors?.[0]?.location
  if (loc) return `${shown}:${loc.line}:${loc.column + 1}`
  const text = `${e?.message ?? ''}\n${e?.stack ?? ''}`
  const escaped = absFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const m = new RegExp(`${escaped}(?:\\?[^:]*)?:(\\d+):(\\d+)`).exec(text)
  if (m) return `${shown}:${m[1]}:${m[2]}`
  // A TypeScript compiler diagnostic (ts-node, when a test runner registers it): `<file>(line,col): error TS…`.
  const base = basename(absFile).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const d = new RegExp(`${base}\\((\\d+),(\\d+)\\): error TS`).exec(text)
  return d ? `${shown}:${d[1]}:${d[2]}` : `${shown}:1:1`
}

/** The first line of an import error's message, without the file path esbuild repeats. */
function importErrorMessage(err: unknown): string {
  const message = String((err as Error)?.message ?? err)
  const error = /ERROR: (.*)/.exec(message) ?? /\): error (TS\d+: .*)/.exec(message)
  return (error ? error[1] : message.split('\n')[0]).trim()
}

const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x !== '')
const isCount = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0

/**
 * Checks a TypeScript operation's settings and turns them into the directives and auth rules a
 * `.graphql` operation gets from its comments and directives.
 * @throws OperationInvalidError `file:1:1: …` naming the setting
 */
function typeScriptSettings(definition: TypeScriptOperation, shown: string): { directives: OperationDirectives; auth: OperationAuthRules | null } {
  const s = definition.settings as unknown as Record<string, unknown>
  const bad = (msg: string) => new OperationInvalidError(`${shown}:1:1: ${msg}`)
  const known = new Set(['input', 'response', 'requireAuthentication', 'rbac', 'fromClaim', 'cache', 'live', 'handler'])
  for (const key of Object.keys(s)) if (!known.has(key)) throw bad(`unknown setting "${key}" (${[...known].join(', ')})`)
  for (const key of ['input', 'response'] as const) {
    const schema = s[key] as { '~standard'?: unknown } | undefined
    if (schema !== undefined && (!schema || typeof schema !== 'object' || !schema['~standard'])) throw bad(`${key} must be a zod schema (a Standard Schema)`)
  }
  if (s.requireAuthentication !== undefined && typeof s.requireAuthentication !== 'boolean') throw bad('requireAuthentication must be true or false')
  const directives: OperationDirectives = {}
  if (typeof s.requireAuthentication === 'boolean') directives.authentication = s.requireAuthentication
  let auth: OperationAuthRules | null = null
  if (s.rbac !== undefined) {
    const rbac = s.rbac as Record<string, unknown>
    if (!rbac || typeof rbac !== 'object' || Object.keys(rbac).some((k) => k !== 'requireMatchAny' && k !== 'requireMatchAll')) throw bad('rbac takes requireMatchAny and requireMatchAll')
    for (const k of ['requireMatchAny', 'requireMatchAll']) if (rbac[k] !== undefined && !isStringList(rbac[k])) throw bad(`rbac.${k} must be a non-empty list of role names`)
    if (!rbac.requireMatchAny && !rbac.requireMatchAll) throw bad('rbac needs requireMatchAny or requireMatchAll')
    if (s.requireAuthentication === false) throw bad('rbac needs a token: requireAuthentication cannot be false')
    auth = { requireAuthentication: true, requireMatchAny: (rbac.requireMatchAny as string[]) ?? null, requireMatchAll: (rbac.requireMatchAll as string[]) ?? null, fromClaim: {} }
  } else if (s.requireAuthentication === true) {
    auth = { requireAuthentication: true, requireMatchAny: null, requireMatchAll: null, fromClaim: {} }
  }
  if (s.fromClaim !== undefined) {
    const claims = s.fromClaim as Record<string, unknown>
    if (!claims || typeof claims !== 'object' || Array.isArray(claims) || Object.keys(claims).length === 0) throw bad('fromClaim must map input fields to claim names: { userId: "sub" }')
    for (const [field, claim] of Object.entries(claims)) {
      if (typeof claim !== 'string' || !claim) throw bad(`fromClaim.${field} must be a claim name (a key, or a dotted path such as "org.id")`)
    }
    if (s.requireAuthentication === false) throw bad('fromClaim needs a token: requireAuthentication cannot be false')
    auth = { ...(auth ?? { requireAuthentication: true, requireMatchAny: null, requireMatchAll: null }), fromClaim: Object.freeze({ ...(claims as Record<string, string>) }) }
  }
  if (s.cache !== undefined) {
    if (definition.kind !== 'query') throw bad('cache applies to queries only')
    if (s.cache === false) directives.cacheOff = true
    else {
      const c = s.cache as Record<string, unknown>
      if (!c || typeof c !== 'object') throw bad('cache must be an object or false')
      for (const k of Object.keys(c)) if (!['maxAge', 'staleWhileRevalidate', 'public', 'mustRevalidate'].includes(k)) throw bad(`unknown cache option "${k}" (maxAge, staleWhileRevalidate, public, mustRevalidate)`)
      if (c.maxAge !== undefined && !isCount(c.maxAge)) throw bad('cache.maxAge must be a whole number of seconds')
      if (c.staleWhileRevalidate !== undefined && !isCount(c.staleWhileRevalidate)) throw bad('cache.staleWhileRevalidate must be a whole number of seconds')
      directives.cache = { maxAge: (c.maxAge as number) ?? 0, ...(c.staleWhileRevalidate !== undefined ? { staleWhileRevalidate: c.staleWhileRevalidate as number } : {}), public: c.public !== false, mustRevalidate: c.mustRevalidate === true }
    }
  }
  if (s.live !== undefined) {
    if (definition.kind !== 'query') throw bad('live applies to queries only')
    if (s.live === false) directives.liveOff = true
    else {
      const l = s.live as Record<string, unknown>
      if (!l || typeof l !== 'object' || Object.keys(l).some((k) => k !== 'intervalMs')) throw bad('live must be { intervalMs } or false')
      if (l.intervalMs !== undefined && !(isCount(l.intervalMs) && (l.intervalMs as number) >= 10)) throw bad('live.intervalMs must be a whole number of milliseconds, at least 10')
      if (l.intervalMs !== undefined) directives.liveIntervalMs = l.intervalMs as number
    }
  }
  return { directives, auth }
}

/**
 * Imports one TypeScript operation file (through tsx, as the config is: gateway/config/load.ts).
 * @param fresh load a new copy (development reload).
 * @throws OperationInvalidError `file:line:column: message` when it does not compile or run, or does
 *   not default-export an operation made by `createOperation`.
 */
export async function loadTypeScriptOperation(name: string, absFile: string, shown: string, fresh: boolean): Promise<TypeScriptStoredOperation> {
  let mod: Record<string, unknown>
  try {
    mod = await importModule(absFile, fresh)
  } catch (err) {
    throw new OperationInvalidError(`${importErrorLocation(err, absFile, shown)}: ${importErrorMessage(err)}`, { cause: err })
  }
  let definition = mod.default
  if (definition && !isTypeScriptOperation(definition) && isTypeScriptOperation((definition as { default?: unknown }).default)) definition = (definition as { default: unknown }).default
  if (!isTypeScriptOperation(definition)) {
    throw new OperationInvalidError(`${shown}:1:1: a TypeScript operation file must default-export createOperation.query(…), .mutation(…) or .subscription(…) from tributary-gateway`)
  }
  const { directives, auth } = typeScriptSettings(definition, shown)
  return {
    language: 'typescript',
    name,
    file: shown,
    source: await readFile(absFile, 'utf8'),
    definition,
    kind: definition.kind,
    internal: name === 'internal' || name.startsWith('internal/'),
    directives,
    auth,
  }
}

/**
 * Loads every `*.graphql` and TypeScript operation file under `dir` (recursively).
 * @param dir absolute path; a missing folder means no operations.
 * @param displayBase base for the paths shown in errors (the working directory).
 * @param fresh import TypeScript files afresh (development reload).
 * @throws OperationInvalidError for the first invalid file, naming its file, line and column.
 */
export async function loadOperations(dir: string, schema: GraphQLSchema, displayBase = process.cwd(), fresh = false): Promise<StoredOperation[]> {
  const files = await listOperationFiles(dir)
  const loaded: StoredOperation[] = []
  const seen = new Map<string, string>()
  for (const file of files) {
    const name = relative(dir, file).split(sep).join('/').replace(/\.(graphql|m?ts)$/, '')
    const shown = relative(displayBase, file)
    if (!/^[A-Za-z0-9_\-/]+$/.test(name)) {
      throw new OperationInvalidError(`${shown}:1:1: operation paths may only use letters, digits, "_", "-" and "/"`)
    }
    if (seen.has(name)) throw new OperationInvalidError(`${shown}:1:1: ${seen.get(name)} defines the operation ${name} already`)
    seen.set(name, shown)
    if (file.endsWith('.graphql')) {
      const source = await readFile(file, 'utf8')
      loaded.push(loadOperationSource(name, shown, source, schema))
    } else {
      loaded.push(await loadTypeScriptOperation(name, file, shown, fresh))
    }
  }
  return loaded
}

/**
 * An operation with `operations.defaults.<kind>` applied where it sets nothing of its own: the
 * `cache` of queries (not with `# @cache off` / `cache: false`), the live-query interval, `live: false`
 * (refuses `?live=true` unless the operation has `# @live …` or `live: {…}`), and `authentication`
 * (a token needed, unless `# @authentication off` / `requireAuthentication: false`;
 * `# @authentication on` asks for one without a default).
 */
export function withOperationDefaults(op: StoredOperation, defaults: TributaryConfig['operations']['defaults']): StoredOperation {
  const kindDefaults = op.kind === 'query' ? defaults.queries : op.kind === 'mutation' ? defaults.mutations : defaults.subscriptions
  const d: OperationDirectives = { ...op.directives }
  let auth = op.auth
  const wantsAuth = d.authentication ?? kindDefaults?.authentication ?? false
  if (wantsAuth && !auth) auth = { requireAuthentication: true, requireMatchAny: null, requireMatchAll: null, fromClaim: {} }
  if (op.kind === 'query') {
    const q = defaults.queries ?? {}
    if (!d.cache && !d.cacheOff && q.cache) d.cache = { maxAge: q.cache.maxAge, ...(q.cache.staleWhileRevalidate !== undefined ? { staleWhileRevalidate: q.cache.staleWhileRevalidate } : {}), public: q.cache.public !== false, mustRevalidate: q.cache.mustRevalidate === true }
    const ownLive = d.liveIntervalMs !== undefined || /^\s*#\s*@live\b/m.test(op.language === 'graphql' ? op.source : '') || (op.language === 'typescript' && !!op.definition.settings.live)
    if (!ownLive && !d.liveOff) {
      if (q.live === false) d.liveOff = true
      else if (q.live && typeof q.live === 'object' && q.live.intervalMs !== undefined) d.liveIntervalMs = q.live.intervalMs
    }
  }
  return { ...op, directives: d, auth }
}
