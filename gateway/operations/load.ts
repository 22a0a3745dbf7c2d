/**
 * Loads stored operations from `operations/`: one named operation per `.graphql` file (fragments may
 * sit beside it), parsed and validated once against the composed schema. Sub-folders become URL
 * segments; files under `internal/` are loaded (callable from code) but not served over HTTP.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
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
import { extractOperationDirectives, type OperationDirectiveRules } from './directives.js'

/** Per-operation settings read from `# @cache ...` and `# @live ...` comment lines of its file. */
export interface OperationDirectives {
  /** `# @cache maxAge=60 staleWhileRevalidate=30 public|private mustRevalidate`: Cache-Control of GET responses. */
  cache?: { maxAge: number; staleWhileRevalidate?: number; public: boolean; mustRevalidate: boolean }
  /** `# @live interval=2000`: live-query poll interval in milliseconds. */
  liveIntervalMs?: number
}

/** One stored operation as loaded from its file. */
export interface StoredOperation {
  /** URL name: the file's path under `operations/` without `.graphql`, with `/` separators (`users/GetUser`). */
  name: string
  /** Absolute path of the file. */
  file: string
  /** The file's text. */
  source: string
  /** The parsed document: the operation and the fragments it uses, without its auth directives. */
  document: DocumentNode
  /** The operation definition itself. */
  operation: OperationDefinitionNode
  /** `query`, `mutation` or `subscription`. */
  kind: 'query' | 'mutation' | 'subscription'
  /** True for files under `internal/` and operations marked `@internalOperation`: never served over HTTP. */
  internal: boolean
  directives: OperationDirectives
  /** What the data directives declare (`@internal`, `@inject…`, `@jsonSchema`, `@export`/`_join`, `@transform`...; ./directives.ts). */
  rules: OperationDirectiveRules
  /** What `@requireAuthentication`, `@rbac` and `@fromClaim` require (gateway/auth/directives.ts); null when it uses none. */
  auth: OperationAuthRules | null
}

async function listGraphQLFiles(dir: string): Promise<string[]> {
  let entries
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.graphql'))
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

/** Parses `# @cache` / `# @live` comment lines. Unknown keys are an error, so typos do not pass silently. */
export function parseDirectives(source: string, file: string): OperationDirectives {
  const directives: OperationDirectives = {}
  const lines = source.split('\n')
  lines.forEach((line, i) => {
    const m = /^\s*#\s*@(cache|live)\b(.*)$/.exec(line)
    if (!m) return
    const where = `${file}:${i + 1}:1`
    const args = m[2].trim().split(/\s+/).filter(Boolean)
    const num = (v: string | undefined, key: string) => {
      if (v === undefined || !/^\d+$/.test(v)) throw new OperationInvalidError(`${where}: @${m[1]} ${key} must be a whole number`)
      return Number(v)
    }
    if (m[1] === 'cache') {
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
export function loadOperationSource(name: string, file: string, source: string, schema: GraphQLSchema): StoredOperation {
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
 * Loads every `*.graphql` file under `dir` (recursively).
 * @param dir absolute path; a missing folder means no operations.
 * @param displayBase base for the paths shown in errors (the working directory).
 * @throws OperationInvalidError for the first invalid file, naming its file, line and column.
 */
export async function loadOperations(dir: string, schema: GraphQLSchema, displayBase = process.cwd()): Promise<StoredOperation[]> {
  const files = await listGraphQLFiles(dir)
  const loaded: StoredOperation[] = []
  for (const file of files) {
    const name = relative(dir, file).split(sep).join('/').replace(/\.graphql$/, '')
    if (!/^[A-Za-z0-9_\-/]+$/.test(name)) {
      throw new OperationInvalidError(`${relative(displayBase, file)}:1:1: operation paths may only use letters, digits, "_", "-" and "/"`)
    }
    const source = await readFile(file, 'utf8')
    loaded.push(loadOperationSource(name, relative(displayBase, file), source, schema))
  }
  return loaded
}
