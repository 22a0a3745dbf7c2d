/**
 * Test helpers for the database connector: a connector context with a logger that records the SQL
 * statements sent (the connector logs each one at debug level with msg "sql"), and a runner that
 * executes GraphQL with graphql-js `execute` or graphql-jit `compileQuery`.
 */
import { Writable } from 'node:stream'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Kind, execute, parse, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql'
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit'
import pino from 'pino'
import type { ConnectorContext } from '../../gateway/connectors/types.js'
import { isJitSafe } from '../../gateway/operations/jit-safety.js'

/** The statements a source sent, as logged. */
export interface SqlLog {
  statements: { sql: string; bindings: unknown[] }[]
  /** Forgets what was recorded. */
  clear(): void
}

/** A connector context in a fresh temp directory, with an SQL-recording debug logger. */
export function testContext(sourceName = 'test'): { ctx: ConnectorContext; log: SqlLog; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'trb-db-'))
  const log: SqlLog = {
    statements: [],
    clear() {
      this.statements.length = 0
    },
  }
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) {
        if (!line) continue
        const o = JSON.parse(line) as { msg?: string; sql?: string; bindings?: unknown[] }
        if (o.msg === 'sql' && o.sql) log.statements.push({ sql: o.sql, bindings: o.bindings ?? [] })
      }
      cb()
    },
  })
  const logger = pino({ level: 'debug' }, stream)
  return { ctx: { namespace: sourceName, sourceName, logger, mode: 'development', cacheDir: dir, cwd: dir }, log, dir }
}

/** How a test executes GraphQL. */
export type ExecMode = 'execute' | 'jit'

/** Both executors, for `for (const mode of EXEC_MODES)` loops. */
export const EXEC_MODES: readonly ExecMode[] = ['execute', 'jit']

const jitCache = new WeakMap<GraphQLSchema, Map<string, CompiledQuery | null>>()
const docCache = new Map<string, DocumentNode>()

/**
 * Runs a document against a schema. The document is parsed once per text (like mercurius' cache);
 * in `jit` mode it is compiled once per schema and text (like a stored operation).
 */
export async function run(schema: GraphQLSchema, mode: ExecMode, source: string, variables?: Record<string, unknown>): Promise<ExecutionResult> {
  let document = docCache.get(source)
  if (!document) {
    document = parse(source)
    docCache.set(source, document)
  }
  if (mode === 'execute') return execute({ schema, document, ...(variables ? { variableValues: variables } : {}) })
  let bySchema = jitCache.get(schema)
  if (!bySchema) {
    bySchema = new Map()
    jitCache.set(schema, bySchema)
  }
  let compiled = bySchema.get(source)
  if (compiled === undefined) {
    // graphql-jit 0.8 cannot compile variables of recursive input types (a whole `where: $w`): the
    // gateway runs those with graphql-js (gateway/operations/jit-safety.ts); so does this helper.
    const safe = document.definitions.every((d) => d.kind !== Kind.OPERATION_DEFINITION || isJitSafe(schema, document, d))
    const c = safe ? compileQuery(schema, document) : null
    compiled = c && isCompiledQuery(c) ? c : null
    bySchema.set(source, compiled)
  }
  if (compiled === null) return execute({ schema, document, ...(variables ? { variableValues: variables } : {}) })
  return compiled.query(undefined, {}, variables ?? {}) as Promise<ExecutionResult>
}

/** JSON round trip of a result's data (drops prototypes such as graphql-js' null-prototype objects). */
export function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value ?? null))
}
