/**
 * Test helper for the REST connector: a raw node:http upstream on 127.0.0.1 whose handler a test
 * programs (hang, drop, throttle, flood, fail N times...), counting requests and sockets, plus a
 * small OpenAPI 3 document for it and a `createRestSource` wrapper that executes GraphQL.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Socket } from 'node:net'
import { execute, parse, type ExecutionResult } from 'graphql'
import { pino, type Logger } from 'pino'
import { createRestSource, type RestSourceOptions } from '../../gateway/connectors/rest/index.js'
import { resolveConfig, type TributaryConfigInput } from '../../gateway/config/index.js'
import { createGateway } from '../../gateway/runtime.js'
import { buildApp } from '../../gateway/http/app.js'
import type { ConnectorContext, LocalSubschema } from '../../gateway/connectors/types.js'

interface Teardown {
  teardown(fn: () => unknown): void
}

/** A programmable upstream. `hits` counts requests by `METHOD path` (and in total), `sockets` the connections opened. */
export interface TestUpstream {
  url: string
  port: number
  hits: Map<string, number>
  total(): number
  sockets(): number
  /** Most requests being handled at the same time. */
  maxConcurrent(): number
  handler: (req: IncomingMessage, res: ServerResponse, n: number) => void
}

/** Starts a node:http server on 127.0.0.1:0 calling `upstream.handler(req, res, n)` (n = 1-based count of this `METHOD path`). */
export async function startUpstream(t: Teardown, handler: TestUpstream['handler']): Promise<TestUpstream> {
  const hits = new Map<string, number>()
  let total = 0
  let sockets = 0
  let concurrent = 0
  let maxConcurrent = 0
  const open = new Set<Socket>()
  const upstream: TestUpstream = {
    url: '',
    port: 0,
    hits,
    total: () => total,
    sockets: () => sockets,
    maxConcurrent: () => maxConcurrent,
    handler,
  }
  const server = createServer((req, res) => {
    const key = `${req.method} ${req.url}`
    const n = (hits.get(key) ?? 0) + 1
    hits.set(key, n)
    total++
    concurrent++
    maxConcurrent = Math.max(maxConcurrent, concurrent)
    res.on('close', () => { concurrent-- })
    upstream.handler(req, res, n)
  })
  server.on('connection', (socket: Socket) => {
    sockets++
    open.add(socket)
    socket.on('close', () => open.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  upstream.port = typeof address === 'object' && address ? address.port : 0
  upstream.url = `http://127.0.0.1:${upstream.port}`
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of open) s.destroy()
    server.close(() => resolve())
  }))
  return upstream
}

/** Sends a JSON answer. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers })
  res.end(text)
}

/** The OpenAPI 3.0 document of the test upstream: items (GET list, GET/PUT by id, POST) and a free-form `GET /big`. */
export const itemsDocument = {
  openapi: '3.0.3',
  info: { title: 'items', version: '1' },
  paths: {
    '/items': {
      get: { operationId: 'listItems', responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Item' } } } } } } },
      post: {
        operationId: 'createItem',
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } },
        responses: { 201: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } } },
      },
    },
    '/items/{id}': {
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      get: { operationId: 'getItem', responses: { 200: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } } } },
      put: {
        operationId: 'putItem',
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } },
        responses: { 200: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } } },
      },
    },
    '/big': { get: { operationId: 'big', responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object' } } } } } } },
  },
  components: { schemas: { Item: { type: 'object', required: ['id'], properties: { id: { type: 'string' }, name: { type: 'string' } } } } },
}

/** A pino logger that keeps its lines (parsed) in `lines`. */
export function memoryLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const logger = pino({ level: 'debug' }, { write: (s: string) => { lines.push(JSON.parse(s) as Record<string, unknown>) } })
  return { logger, lines }
}

/** A connector context in a fresh temporary directory (`cacheDir` inside it). */
export function testContext(t: Teardown, logger: Logger = pino({ level: 'silent' }), sourceName = 'items'): ConnectorContext {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-rest-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return { namespace: sourceName, sourceName, logger, mode: 'development', cacheDir: join(dir, 'sources'), cwd: dir }
}

/** A REST source over `document` (written to a file) pointing at `upstream`; closed at teardown. */
export async function itemsSource(t: Teardown, upstream: TestUpstream, options: Partial<RestSourceOptions> = {}, context = testContext(t), document: object = itemsDocument): Promise<LocalSubschema & { run(query: string): Promise<ExecutionResult> }> {
  const file = join(context.cwd, 'openapi.json')
  writeFileSync(file, JSON.stringify(document))
  const source = await createRestSource({ openapi: file, baseUrl: upstream.url, ...options }, context)
  t.teardown(() => source.close())
  return { ...source, run: async (query: string) => execute({ schema: source.schema, document: parse(query), contextValue: {} }) as Promise<ExecutionResult> }
}

/**
 * A listening gateway (development mode) with one REST source `namespace` over `document` (written
 * to a file in `context.cwd`), pointing at `upstream`; `operations/` in `context.cwd` holds `operations`
 * (name → GraphQL text). Closed at teardown. Resolves with its `http://127.0.0.1:<port>` URL.
 */
export async function startRestGateway(
  t: Teardown,
  upstream: TestUpstream,
  options: { context: ConnectorContext; namespace: string; document: object; source?: Partial<RestSourceOptions>; operations?: Record<string, string>; bodyLimit?: number; config?: Partial<TributaryConfigInput> },
): Promise<string> {
  const { context } = options
  mkdirSync(join(context.cwd, 'operations'), { recursive: true })
  for (const [name, text] of Object.entries(options.operations ?? {})) writeFileSync(join(context.cwd, 'operations', `${name}.graphql`), text)
  const file = join(context.cwd, `${options.namespace}.openapi-source.json`)
  writeFileSync(file, JSON.stringify(options.document))
  const config = resolveConfig({
    mode: 'development',
    ...(options.bodyLimit ? { server: { bodyLimit: options.bodyLimit } } : {}),
    datasources: [{ kind: 'rest', namespace: options.namespace, openapi: file, baseUrl: upstream.url, ...options.source }],
    generatedDir: join(context.cwd, 'generated'),
    ...options.config,
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }), cwd: context.cwd })
  t.teardown(() => gateway.close())
  const app = await buildApp(gateway, { logger: false })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
}
