/**
 * Test helper for observability (README "Observability"): a gateway over three real sources — a
 * SQLite file (`db`), a REST upstream (`up`) and a remote GraphQL API (`gql`), both node:http servers
 * on 127.0.0.1 that record the `traceparent` they receive — and a local schema (`local`: `now`, and a
 * `tick` subscription every 50 ms), with stored operations that touch each.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { buildSchema, graphql } from 'graphql'
import { setTimeout as sleep } from 'node:timers/promises'
import { pino } from 'pino'
import type { FastifyInstance } from 'fastify'
import { resolveConfig, type TributaryConfigInput } from '../../gateway/config/index.js'
import { createGateway, type Gateway } from '../../gateway/runtime.js'
import { buildApp, type BuildAppOptions } from '../../gateway/http/app.js'

interface Teardown {
  teardown(fn: () => unknown): void
}

/** What {@link startObservedGateway} returns. */
export interface ObservedGateway {
  app: FastifyInstance
  gateway: Gateway
  /** `traceparent` headers the REST upstream received (undefined when none was sent), in order. */
  restTraceparents: (string | undefined)[]
  /** `traceparent` headers the GraphQL upstream received for queries (not introspection), in order. */
  graphqlTraceparents: (string | undefined)[]
}

async function listen(t: Teardown, server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  server.unref()
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => (text += c))
    req.on('end', () => resolve(text))
    req.on('error', reject)
  })
}

/**
 * Starts the upstreams and a gateway (`buildApp`, not listening) with `overrides` merged into its
 * config. Stored operations: `Items` (db only), `Mixed` (db, REST and GraphQL), `Broken` (a REST
 * call answered 503), `Hello` (GraphQL only), `Ticks` (subscription), `Now` (local query).
 */
export async function startObservedGateway(t: Teardown, overrides: Partial<TributaryConfigInput> = {}, appOptions: BuildAppOptions = { logger: false }): Promise<ObservedGateway> {
  const restTraceparents: (string | undefined)[] = []
  const graphqlTraceparents: (string | undefined)[] = []
  const restUrl = await listen(t, createServer((req, res) => {
    restTraceparents.push(req.headers.traceparent as string | undefined)
    if (req.url === '/broken') {
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"message":"maintenance"}')
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"value":"fine"}')
  }))
  const upstreamSchema = buildSchema('type Query { hello: String }')
  const gqlUrl = await listen(t, createServer((req, res) => {
    void readBody(req).then(async (text) => {
      const body = JSON.parse(text) as { query: string; variables?: Record<string, unknown> }
      if (!body.query.includes('__schema')) graphqlTraceparents.push(req.headers.traceparent as string | undefined)
      const result = await graphql({ schema: upstreamSchema, source: body.query, variableValues: body.variables, rootValue: { hello: 'world' } })
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result))
    })
  }))

  const dir = mkdtempSync(join(tmpdir(), 'tributary-observe-'))
  const file = join(dir, 'items.sqlite')
  const sqlite = new Database(file)
  sqlite.exec('CREATE TABLE Item (id INTEGER PRIMARY KEY, name TEXT NOT NULL); INSERT INTO Item (name) VALUES (\'one\'), (\'two\');')
  sqlite.close()
  const ok = { '200': { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Value' } } } } }
  writeFileSync(join(dir, 'openapi.json'), JSON.stringify({
    openapi: '3.0.3',
    info: { title: 'up', version: '1' },
    servers: [{ url: restUrl }],
    paths: { '/ok': { get: { operationId: 'getOk', responses: ok } }, '/broken': { get: { operationId: 'getBroken', responses: ok } } },
    components: { schemas: { Value: { type: 'object', required: ['value'], properties: { value: { type: 'string' } } } } },
  }))
  mkdirSync(join(dir, 'ops'))
  writeFileSync(join(dir, 'ops/Items.graphql'), 'query Items { db_findManyItem(orderBy: { id: asc }) { id name } }\n')
  writeFileSync(join(dir, 'ops/Mixed.graphql'), 'query Mixed { db_findManyItem(orderBy: { id: asc }) { id name } up_getOk { value } gql_hello }\n')
  writeFileSync(join(dir, 'ops/Broken.graphql'), 'query Broken { up_getBroken { value } }\n')
  writeFileSync(join(dir, 'ops/Hello.graphql'), 'query Hello { gql_hello }\n')
  writeFileSync(join(dir, 'ops/Ticks.graphql'), 'subscription Ticks { local_tick }\n')
  writeFileSync(join(dir, 'ops/Now.graphql'), 'query Now { local_now }\n')

  const config = resolveConfig({
    datasources: [
      { kind: 'database', namespace: 'db', url: `sqlite:${file}` },
      { kind: 'rest', namespace: 'up', openapi: join(dir, 'openapi.json'), timeoutMs: 2000, retry: { retries: 0 }, circuitBreaker: false },
      { kind: 'graphql', namespace: 'gql', url: `${gqlUrl}/graphql`, timeoutMs: 2000 },
      {
        kind: 'schema',
        namespace: 'local',
        typeDefs: 'type Query { now: String } type Subscription { tick: Int }',
        resolvers: {
          Query: { now: () => 'now' },
          Subscription: {
            tick: {
              subscribe: async function* ticks() {
                for (let i = 0; ; i++) {
                  yield { tick: i }
                  await sleep(50)
                }
              },
            },
          },
        },
      },
    ],
    operations: { dir: join(dir, 'ops') },
    generatedDir: join(dir, 'generated'),
    ...overrides,
  } as TributaryConfigInput)
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  const app = await buildApp(gateway, appOptions)
  t.teardown(async () => {
    await app.close()
    await gateway.close()
  })
  return { app, gateway, restTraceparents, graphqlTraceparents }
}
