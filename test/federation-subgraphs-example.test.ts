/**
 * examples/federation-subgraphs end to end: the Tributary database subgraph (`server.federation`)
 * and the example's two `@apollo/subgraph` services on 127.0.0.1, the checked-in supergraph compared
 * with a fresh composition (`compose.ts`, `@theguild/federation-composition`), then served by Hive
 * Gateway (`createGatewayRuntime`) answering the stored operation `TodoBoard` with its expected
 * answer: a query that spans the three subgraphs, Tributary's part of it through `_entities`
 * (one SQL statement for every todo the comments point at).
 */
import t from 'tap'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import { resolveConfig, type TributaryConfigInput } from '../gateway/config/index.js'
import { serveGateway } from './helpers/serve.js'
import { sqlLog } from './helpers/sql-log.js'
import { checkExpectedResponses } from './helpers/expected-responses.js'
import input from '../examples/federation-subgraphs/config.js'
import { SUBGRAPH_URLS, SUPERGRAPH_FILE, composeSupergraph } from '../examples/federation-subgraphs/compose.js'
import { serveSubgraph, subgraphs } from '../examples/federation-subgraphs/subgraphs/serve.js'

/**
 * Hive Gateway's runtime, imported by a computed name: its typings (graphql-tools utils 11) augment
 * graphql's `GraphQLResolveInfo` for the whole program, which the gateway's own code does not fit.
 */
const HIVE_GATEWAY = '@graphql-hive/gateway'
const { createGatewayRuntime } = (await import(HIVE_GATEWAY)) as {
  createGatewayRuntime(options: { supergraph: string; logging: boolean }): { fetch(url: string, init: RequestInit): Promise<Response>; dispose(): Promise<void> | void }
}

const dir = fileURLToPath(new URL('../examples/federation-subgraphs/', import.meta.url))
const root = fileURLToPath(new URL('..', import.meta.url))

t.test('the supergraph file is the fresh composition of the three subgraphs', async (t) => {
  t.equal(readFileSync(SUPERGRAPH_FILE, 'utf8'), await composeSupergraph(), 'run node --import tsx examples/federation-subgraphs/compose.ts after changing a subgraph')
})

t.test('Hive Gateway answers TodoBoard over the three subgraphs', async (t) => {
  const tmp = mkdtempSync(join(tmpdir(), 'tributary-subgraphs-example-'))
  const [source] = (input as TributaryConfigInput).datasources
  const { stream, statements } = sqlLog()
  const config = resolveConfig({ ...(input as TributaryConfigInput), datasources: [{ ...source!, url: `sqlite:${join(tmp, 'todos.sqlite')}` } as typeof source & {}], generatedDir: join(tmp, 'generated'), server: { federation: true, logLevel: 'debug' } })
  const todos = await serveGateway(t, config, { logger: pino({ level: 'debug' }, stream), cwd: root })
  const urls: Record<string, string> = { todos: `${todos.url}/graphql` }
  for (const [name, make] of Object.entries(subgraphs)) {
    const { server, url } = await serveSubgraph(make(), 0)
    t.teardown(() => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()) }))
    urls[name] = url
  }
  let supergraph = readFileSync(SUPERGRAPH_FILE, 'utf8')
  for (const [name, url] of Object.entries(SUBGRAPH_URLS)) supergraph = supergraph.replaceAll(`"${url}"`, `"${urls[name]}"`)
  const hive = createGatewayRuntime({ supergraph, logging: false })
  t.teardown(() => hive.dispose())

  const expected = JSON.parse(readFileSync(join(dir, 'operations/TodoBoard.expected.json'), 'utf8')) as { response: unknown }
  statements.length = 0
  const res = await hive.fetch('http://127.0.0.1/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query: readFileSync(join(dir, 'operations/TodoBoard.graphql'), 'utf8') }),
  })
  const body = await res.json()
  // UPDATE_EXPECTED=1 rewrites the expected answer after a deliberate change (review the diff), as for every stored operation.
  if (process.env.UPDATE_EXPECTED) writeFileSync(join(dir, 'operations/TodoBoard.expected.json'), JSON.stringify({ request: 'POST /graphql (Hive Gateway, supergraph.graphql)', response: body }, null, 2) + '\n')
  else t.same(body, expected.response)
  t.equal(res.status, 200)
  t.equal(statements.length, 2, `todo_findManyTodo, then ONE _entities statement for the 3 todos the comments point at: ${statements.join(' | ')}`)
  t.match(statements[1], /IN \(/, 'the _entities statement selects the todos by key')

  // The subgraph is still a whole gateway: its own stored operation answers as expected.
  await checkExpectedResponses(t, todos.app, join(dir, 'todos/operations'))
})
