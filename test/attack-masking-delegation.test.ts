/**
 * Attack: an error the gateway did not write reaching a production client through graphql-tools
 * delegation (issue 22 item 10). A federation subgraph on 127.0.0.1 serves its real schema
 * (`@apollo/subgraph`) but answers data requests with a malformed result (`topProducts: "x"`, a string
 * where objects belong): graphql-tools throws a `TypeError` inside the gateway's in-process
 * supergraph execution ("Object.defineProperties called on non-object"), which it wrapped in two
 * GraphQL errors, and the formatter relayed as `TRB_ERR_GRAPHQL_FIELD`, verbatim and unlogged. Now
 * the client gets `TRB_ERR_INTERNAL` with an error id, and the log has the TypeError with the same
 * id, on /graphql, /operations and the WebSocket; an upstream's own error message keeps the
 * upstream contract (README "Origins, hosts, side services and upstream messages").
 */
import t, { type Test } from 'tap'
import { createServer } from 'node:http'
import { buildSubgraphSchema } from '@apollo/subgraph'
import { graphql, parse } from 'graphql'
import { federation, resolveConfig, type RunMode } from '../gateway/config/index.js'
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { run, upgrade } from './helpers/ws.js'
import { serveLoggedGateway } from './helpers/logged-gateway.js'

const LINK = 'extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])'
const TYPE_ERROR = 'Object.defineProperties called on non-object'

/** A subgraph whose schema reads are real and whose data answers are `topProducts: "x"`, or an upstream error for `product`. */
async function startBrokenSubgraph(t: Test): Promise<string> {
  const schema = buildSubgraphSchema({
    typeDefs: parse(`${LINK}\ntype Product @key(fields: "upc") { upc: String! name: String } type Query { topProducts: [Product!]! product: Product }`),
    resolvers: { Query: { topProducts: () => [], product: () => { throw new Error('subgraph says no') } } } as never,
  })
  const server = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    const { query, variables } = JSON.parse(body) as { query: string; variables?: Record<string, unknown> }
    const schemaRead = /_service|__schema|^\s*\{\s*__typename\s*\}\s*$/.test(query) || query.includes('product')
    const result = schemaRead ? await graphql({ schema, source: query, variableValues: variables }) : { data: { topProducts: 'x' } }
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify(result))
  })
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  t.teardown(() => new Promise<void>((ok) => (server.closeAllConnections(), server.close(() => ok()))))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/graphql`
}

async function startGateway(t: Test, mode: RunMode) {
  const url = await startBrokenSubgraph(t)
  const dir = mkdtempSync(join(tmpdir(), 'tributary-masking-'))
  mkdirSync(join(dir, 'operations'))
  writeFileSync(join(dir, 'operations', 'Top.graphql'), 'query Top { shop_topProducts { upc name } }\n')
  const config = resolveConfig({
    mode,
    datasources: [federation({ namespace: 'shop', timeoutMs: 2000, subgraphs: [{ name: 'products', url }] })],
    graphql: { allowArbitraryOperationsInProduction: true },
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
  })
  const { url: base, logs } = await serveLoggedGateway(t, config, dir)
  return { base, logs }
}

interface Err {
  message: string
  path?: string[]
  extensions: { code: string; errorId?: string; debug?: string }
}

/** The masked error's shape, and the log record with its id carrying the TypeError. */
function checkMasked(t: Test, err: Err | undefined, logs: Record<string, unknown>[], text: string) {
  t.equal(err?.extensions.code, 'TRB_ERR_INTERNAL')
  t.match(err?.message, /^Internal error \(id [0-9a-f-]{36}\)$/)
  t.notOk(text.includes(TYPE_ERROR), 'the TypeError message does not reach the client')
  const record = logs.find((r) => r.errorId === err?.extensions.errorId)
  t.ok(record, 'a log record with the same errorId')
  t.equal(record?.level, 50, 'logged as an error')
  t.equal((record?.err as { message?: string } | undefined)?.message, TYPE_ERROR, 'the log has the original message')
}

t.test('production: a TypeError inside delegation is masked and logged with its id', async (t) => {
  const { base, logs } = await startGateway(t, 'production')

  const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ shop_topProducts { upc name } }' }) })
  const text = await res.text()
  const body = JSON.parse(text) as { data: unknown; errors?: Err[] }
  t.same(body.data, null)
  t.same(body.errors?.[0].path, ['shop_topProducts'])
  checkMasked(t, body.errors?.[0], logs, text)

  const op = await fetch(`${base}/operations/Top`)
  const opText = await op.text()
  t.equal(op.status, 500, '/operations: the status of an internal error')
  checkMasked(t, (JSON.parse(opText) as { errors?: Err[] }).errors?.[0], logs, opText)

  const ws = await upgrade(base)
  if (!ws.open) throw new Error('upgrade refused')
  t.teardown(() => ws.socket.close())
  const result = await run(ws.socket, '{ shop_topProducts { upc } }')
  checkMasked(t, (result.errors as Err[] | undefined)?.[0], logs, JSON.stringify(result))

  // The upstream contract is unchanged: a subgraph's own error is the upstream's, its text logged.
  const upstream = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ shop_product { upc } }' }) })
  const upstreamBody = (await upstream.json()) as { errors?: Err[] }
  t.equal(upstreamBody.errors?.[0].extensions.code, 'TRB_ERR_UPSTREAM')
  t.equal(upstreamBody.errors?.[0].message, 'Upstream shop/products returned an error')
})

t.test('development: the same error is TRB_ERR_INTERNAL, its message in extensions.debug', async (t) => {
  const { base, logs } = await startGateway(t, 'development')
  const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ shop_topProducts { upc } }' }) })
  const err = ((await res.json()) as { errors?: Err[] }).errors?.[0]
  t.equal(err?.extensions.code, 'TRB_ERR_INTERNAL')
  t.equal(err?.extensions.debug, TYPE_ERROR)
  t.ok(logs.some((r) => r.errorId === err?.extensions.errorId), 'logged with its id')
})
