/**
 * Test helpers for remote GraphQL sources: a GraphQL-over-HTTP server on 127.0.0.1 (node:http +
 * graphql-js) for any executable schema — a plain GraphQL API or an Apollo Federation subgraph built
 * with `@apollo/subgraph` — that records every request, and a gateway listening on a real port.
 */
import { createServer } from 'node:http'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { graphql, type GraphQLSchema } from 'graphql'
import { pino } from 'pino'
import { resolveConfig, type TributaryConfigInput } from '../../gateway/config/index.js'
import { createGateway, type Gateway } from '../../gateway/runtime.js'
import { buildApp } from '../../gateway/http/app.js'

interface Teardown {
  teardown(fn: () => unknown): void
}

/** One request an upstream received. */
export interface SeenRequest {
  query: string
  variables?: Record<string, unknown>
  headers: Record<string, string | string[] | undefined>
}

/** A running upstream. */
export interface GraphQLUpstream {
  url: string
  /** Every request received, in order. */
  requests: SeenRequest[]
  /** Requests other than the gateway's schema reads and probes (`_service`, introspection, `__typename`). */
  dataRequests(): SeenRequest[]
  /** Delay before answering, in milliseconds (0: none). */
  delayMs: number
  close(): Promise<void>
}

/** Starts `schema` on 127.0.0.1:0 (POST JSON, GraphQL over HTTP). Closed at teardown. */
export async function startGraphQLUpstream(t: Teardown, schema: GraphQLSchema): Promise<GraphQLUpstream> {
  const requests: SeenRequest[] = []
  const server = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    const { query, variables, operationName } = JSON.parse(body) as { query: string; variables?: Record<string, unknown>; operationName?: string }
    requests.push({ query, variables, headers: req.headers })
    if (upstream.delayMs) await sleep(upstream.delayMs)
    const result = await graphql({ schema, source: query, variableValues: variables, operationName, contextValue: { headers: req.headers } })
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify(result))
  })
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  let closed: Promise<void> | undefined
  const upstream: GraphQLUpstream = {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/graphql`,
    requests,
    dataRequests: () => requests.filter((r) => !/^\s*(\{\s*_service|query IntrospectionQuery|\{\s*__typename\s*\})/.test(r.query)),
    delayMs: 0,
    close: () =>
      (closed ??= new Promise<void>((ok) => {
        server.close(() => ok())
        server.closeAllConnections()
      })),
  }
  t.teardown(() => upstream.close())
  return upstream
}

/** A gateway over `datasources` listening on 127.0.0.1:0, with stored operations written from `operations` (name → document). */
export async function startGateway(
  t: Teardown,
  input: Omit<TributaryConfigInput, 'operations' | 'generatedDir'> & { operations?: Record<string, string>; dir?: string },
): Promise<{ base: string; gateway: Gateway; dir: string; close(): Promise<void> }> {
  const dir = input.dir ?? mkdtempSync(join(tmpdir(), 'tributary-remote-'))
  const opsDir = join(dir, 'ops')
  mkdirSync(opsDir, { recursive: true })
  for (const [name, doc] of Object.entries(input.operations ?? {})) writeFileSync(join(opsDir, `${name}.graphql`), doc)
  const { operations: _ops, dir: _dir, ...rest } = input
  const config = resolveConfig({ ...rest, operations: { dir: opsDir }, generatedDir: join(dir, 'generated') })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  const app = await buildApp(gateway, { logger: false })
  await app.listen({ host: '127.0.0.1', port: 0 })
  let closed: Promise<void> | undefined
  const close = () => (closed ??= app.close().then(() => gateway.close()))
  t.teardown(close)
  return { base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, gateway, dir, close }
}

/** POSTs a GraphQL request to `<base>/graphql` over HTTP. */
export async function postGraphQL(base: string, query: string, variables?: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...headers },
    body: JSON.stringify({ query, variables }),
  })
  return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown> | null; errors?: { message: string; path?: (string | number)[]; extensions: Record<string, unknown> }[] } }
}

/** GETs a stored operation over HTTP. */
export async function getOperation(base: string, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/operations/${path}`, { headers })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { errors?: { message: string; path?: (string | number)[]; extensions: Record<string, unknown> }[] } }
}
