/**
 * Writes `generated/`: the composed SDL (`schema.graphql`), the standard introspection result
 * (`introspection.json`), the operations manifest (`operations.json`), the operations' OpenAPI 3.1
 * document (`openapi.json`), the typed fetch client (`client.ts`), the declaration merging that types
 * TypeScript operations' in-process client (`operations.ts`) and, when `codegen.react` is true,
 * TanStack Query hooks over it (`react.ts`). Files are rewritten only when their content changes.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { getIntrospectionQuery, graphqlSync, lexicographicSortSchema, printSchema } from 'graphql'
import type { Gateway } from '../runtime.js'
import { buildOpenApiDocument } from './openapi.js'
import { renderClient, renderOperationRegistry } from './client.js'
import { renderReactHooks } from './react.js'

/** The generated files, by name relative to `generated/`, with their contents. */
export function renderGenerated(gateway: Gateway): Record<string, string> {
  const sorted = lexicographicSortSchema(gateway.schema)
  const introspection = graphqlSync({ schema: sorted, source: getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, inputValueDeprecation: true }) })
  const manifest = {
    operations: [...gateway.operations.values()]
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((op) => ({
        name: op.name,
        kind: op.kind,
        file: op.stored.file,
        internal: op.stored.internal,
        path: op.stored.internal ? null : `/operations/${op.name}`,
        methods: op.stored.internal ? [] : op.kind === 'query' ? ['GET', 'POST'] : op.kind === 'mutation' ? ['POST'] : ['GET'],
        cache: op.stored.directives.cache ?? null,
        liveIntervalMs: op.stored.directives.liveIntervalMs ?? null,
        auth: op.stored.auth,
        variablesSchema: op.variablesSchema,
        responseSchema: op.responseSchema,
      })),
    routes: gateway.config.routes,
  }
  return {
    'schema.graphql': printSchema(sorted) + '\n',
    'introspection.json': JSON.stringify(introspection.data, null, 2) + '\n',
    'operations.json': JSON.stringify(manifest, null, 2) + '\n',
    'openapi.json': JSON.stringify(buildOpenApiDocument(gateway), null, 2) + '\n',
    'client.ts': renderClient(gateway),
    'operations.ts': renderOperationRegistry(gateway),
    ...(gateway.config.codegen.react ? { 'react.ts': renderReactHooks(gateway) } : {}),
  }
}

/**
 * Writes the generated files under `<cwd>/<config.generatedDir>`.
 * @returns the names of the files that changed.
 */
export async function writeGenerated(gateway: Gateway, cwd = process.cwd()): Promise<string[]> {
  const dir = resolve(cwd, gateway.config.generatedDir)
  await mkdir(dir, { recursive: true })
  const changed: string[] = []
  for (const [name, content] of Object.entries(renderGenerated(gateway))) {
    const file = join(dir, name)
    const previous = await readFile(file, 'utf8').catch(() => null)
    if (previous !== content) {
      await writeFile(file, content)
      changed.push(name)
    }
  }
  return changed
}
