/**
 * Composes the subgraphs example's supergraph with `@theguild/federation-composition` and writes
 * `supergraph.graphql` (what Hive Gateway or Apollo Router serve):
 *
 *   node --import tsx examples/federation-subgraphs/compose.ts
 *
 * Each subgraph's SDL is its answer to `{ _service { sdl } }`, read in process: the Tributary
 * subgraph is built from `config.ts` on a scratch copy of its database (the SDL does not depend on
 * the rows), the Apollo subgraphs from their modules. The subgraph URLs are the example's ports
 * (4301 to 4303); `test/federation-subgraphs-example.test.ts` checks that the file is fresh.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { graphql, parse, type GraphQLSchema } from 'graphql'
import { composeServices } from '@theguild/federation-composition'
import { pino } from 'pino'
import { resolveConfig, type TributaryConfigInput } from '../../gateway/config/index.js'
import { createGateway } from '../../gateway/runtime.js'
import { usersSubgraph } from './subgraphs/users.js'
import { commentsSubgraph } from './subgraphs/comments.js'
import input from './config.js'

/** The supergraph file. */
export const SUPERGRAPH_FILE = fileURLToPath(new URL('./supergraph.graphql', import.meta.url))

/** The subgraphs' names and URLs as the supergraph records them. */
export const SUBGRAPH_URLS = {
  todos: 'http://127.0.0.1:4301/graphql',
  users: 'http://127.0.0.1:4302/graphql',
  comments: 'http://127.0.0.1:4303/graphql',
} as const

async function sdlOf(schema: GraphQLSchema): Promise<string> {
  const result = await graphql({ schema, source: '{ _service { sdl } }' })
  const sdl = (result.data as { _service?: { sdl?: string } } | null)?._service?.sdl
  if (!sdl) throw new Error(`no _service.sdl: ${JSON.stringify(result.errors)}`)
  return sdl
}

/** The Tributary subgraph's SDL, built from `config.ts` on a scratch database. */
export async function todosSdl(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-subgraph-sdl-'))
  try {
    const [source] = (input as TributaryConfigInput).datasources
    const config = resolveConfig({ ...(input as TributaryConfigInput), datasources: [{ ...source!, url: `sqlite:${join(dir, 'todos.sqlite')}` } as typeof source & {}], generatedDir: join(dir, 'generated') })
    const gateway = await createGateway(config, { logger: pino({ level: 'silent' }), cwd: fileURLToPath(new URL('../..', import.meta.url)) })
    try {
      return await sdlOf(gateway.schema)
    } finally {
      await gateway.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Composes the three subgraphs.
 * @returns the supergraph SDL
 * @throws Error with the composition errors when they do not compose
 */
export async function composeSupergraph(): Promise<string> {
  const sdls = { todos: await todosSdl(), users: await sdlOf(usersSubgraph()), comments: await sdlOf(commentsSubgraph()) }
  const composed = composeServices(Object.entries(sdls).map(([name, sdl]) => ({ name, url: SUBGRAPH_URLS[name as keyof typeof SUBGRAPH_URLS], typeDefs: parse(sdl) })))
  if (composed.errors) throw new Error(`the subgraphs do not compose: ${composed.errors.map((e) => e.message).join('; ')}`)
  return composed.supergraphSdl.trimEnd() + '\n'
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(SUPERGRAPH_FILE, await composeSupergraph())
  console.log(`wrote ${SUPERGRAPH_FILE}`)
}
