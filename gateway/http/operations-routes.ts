/**
 * `/operations/*` and the custom REST routes of the config: stored operations served as REST
 * endpoints (DESIGN.md §5). No GraphQL is parsed or validated at request time: variables are
 * coerced and checked by ajv, the operation runs through graphql-jit, and the data object is
 * serialised by fast-json-stringify from the operation's response schema.
 */
import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ExecutionResult, GraphQLFormattedError } from 'graphql'
import type { CompiledOperation, Variables, VariablesError } from '../operations/compile.js'
import { formatGraphQLErrors } from './format-error.js'
import type { GatewayHolder } from './app.js'
import { LivePollers } from './live.js'

type Query = Record<string, string | string[] | undefined>

function json(reply: FastifyReply, status: number, body: unknown) {
  return reply.code(status).header('cache-control', 'no-store').type('application/json; charset=utf-8').send(JSON.stringify(body))
}

function errorBody(code: string, message: string, extra: Record<string, unknown> = {}) {
  return { errors: [{ message, extensions: { code, ...extra } }] }
}

/** A weak ETag of a body (RFC 9110 §8.8.3). */
export function weakEtag(body: string): string {
  return `W/"${createHash('sha1').update(body).digest('base64url')}"`
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false
  if (header.trim() === '*') return true
  const bare = etag.replace(/^W\//, '')
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === bare)
}

/** Cache-Control of a successful GET (ANCHORS: WunderGraph defaults; private when the request carries credentials). */
function cacheControl(op: CompiledOperation, request: FastifyRequest): string {
  const c = op.stored.directives.cache
  const credentialed = request.headers.authorization !== undefined || request.headers.cookie !== undefined
  if (!c) return `${credentialed ? 'private' : 'public'}, max-age=0, must-revalidate`
  const parts = [credentialed || !c.public ? 'private' : 'public', `max-age=${c.maxAge}`]
  if (c.staleWhileRevalidate !== undefined) parts.push(`stale-while-revalidate=${c.staleWhileRevalidate}`)
  if (c.mustRevalidate) parts.push('must-revalidate')
  return parts.join(', ')
}

function variablesProblem(reply: FastifyReply, err: VariablesError) {
  return json(reply, 400, {
    errors: err.problems.map((p) => ({
      message: `Variable "${p.path.slice(1).replace(/\//g, '.') || p.variable}" ${p.message}`,
      path: p.path ? p.path.slice(1).split('/') : undefined,
      extensions: { code: 'TRB_ERR_OPERATION_VARIABLES', variable: p.variable, instancePath: p.path, schemaPath: p.schemaPath },
    })),
  })
}

/** Runs a query or mutation and sends its data (200), its errors (4xx/5xx) or 304. */
async function respond(op: CompiledOperation, variables: Variables, request: FastifyRequest, reply: FastifyReply, holder: GatewayHolder, notFoundWhenNull: boolean) {
  const result = await op.execute(variables, { reply, request, headers: request.headers })
  if (result.errors?.length) {
    const { errors, status } = formatGraphQLErrors(result.errors, { mode: holder.current.config.mode, logger: request.log })
    const body: { errors: GraphQLFormattedError[]; data?: unknown } = { errors }
    if (result.data) body.data = result.data
    return json(reply, status, body)
  }
  const data = result.data ?? {}
  // A custom REST route whose every root field came back null found nothing: 404.
  if (notFoundWhenNull && Object.values(data).every((v) => v === null)) {
    return json(reply, 404, errorBody('TRB_ERR_DB_NOT_FOUND', `No result for ${request.method} ${request.url}`))
  }
  const body = op.stringifyData(data)
  if (request.method === 'GET') {
    const etag = weakEtag(body)
    reply.header('etag', etag).header('cache-control', cacheControl(op, request))
    if (etagMatches(request.headers['if-none-match'], etag)) return reply.code(304).send()
  } else {
    reply.header('cache-control', 'no-store')
  }
  return reply.code(200).type('application/json; charset=utf-8').send(body)
}

function startSse(request: FastifyRequest, reply: FastifyReply): { send(result: ExecutionResult | string): void; close(): void; onClose(fn: () => void): void } {
  reply.hijack()
  const res = reply.raw
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  })
  res.write(': stream opened\n\n')
  const heartbeat = setInterval(() => res.write(': ping\n\n'), 15_000)
  const closers: (() => void)[] = []
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    clearInterval(heartbeat)
    for (const fn of closers) fn()
    if (!res.writableEnded) res.end()
  }
  request.raw.on('close', close)
  return {
    send(result) {
      if (!closed) res.write(`data: ${typeof result === 'string' ? result : JSON.stringify(result)}\n\n`)
    },
    close,
    onClose(fn) {
      closers.push(fn)
    },
  }
}

async function streamSubscription(op: CompiledOperation, variables: Variables, request: FastifyRequest, reply: FastifyReply, holder: GatewayHolder) {
  const stream = startSse(request, reply)
  const format = (r: ExecutionResult) => {
    const out: { data?: unknown; errors?: GraphQLFormattedError[] } = { data: r.data }
    if (r.errors?.length) out.errors = formatGraphQLErrors(r.errors, { mode: holder.current.config.mode, logger: request.log }).errors
    return out
  }
  const iterator = await op.subscribe(variables, { request, headers: request.headers })
  if (!(Symbol.asyncIterator in iterator)) {
    stream.send(JSON.stringify(format(iterator)))
    stream.close()
    return
  }
  stream.onClose(() => void iterator.return?.())
  try {
    for await (const result of iterator) stream.send(JSON.stringify(format(result)))
  } catch (err) {
    request.log.error({ err }, 'subscription failed')
  } finally {
    stream.close()
  }
}

/**
 * Registers `/operations/*` and the config's custom routes.
 * - queries: GET (variables from the query string) and POST (JSON body);
 * - mutations: POST only (405 with `Allow: POST` otherwise);
 * - subscriptions, and queries with `?live=true`: GET with `Accept: text/event-stream`.
 */
export function registerOperationRoutes(app: FastifyInstance, holder: GatewayHolder): void {
  const live = new LivePollers(holder)
  app.addHook('onClose', async () => live.close())

  async function serve(name: string, request: FastifyRequest, reply: FastifyReply, pathParams: Record<string, string> = {}) {
    const op = holder.current.operations.get(name)
    if (!op || op.stored.internal) return json(reply, 404, errorBody('TRB_ERR_OPERATION_NOT_FOUND', `Unknown operation: ${name}`))
    const method = request.method
    const wantsStream = (request.headers.accept ?? '').includes('text/event-stream')
    const allowed = op.kind === 'mutation' ? ['POST'] : op.kind === 'subscription' ? ['GET'] : ['GET', 'POST']
    const viaCustomRoute = Object.keys(pathParams).length > 0 || request.routeOptions.url !== '/operations/*'
    if (!viaCustomRoute && !allowed.includes(method)) {
      reply.header('allow', allowed.join(', '))
      return json(reply, 405, errorBody('TRB_ERR_OPERATION_METHOD', `Method ${method} is not allowed for ${op.kind} ${name}; allowed: ${allowed.join(', ')}`))
    }
    let variables: Variables
    try {
      if (method === 'GET' || method === 'DELETE') {
        const { live: liveParam, ...rest } = request.query as Query
        variables = op.variablesFromQuery({ ...rest, ...pathParams })
        if (liveParam !== undefined && liveParam !== 'false') {
          if (op.kind !== 'query') return json(reply, 400, errorBody('TRB_ERR_BAD_REQUEST', 'live=true applies to queries only'))
          if (!wantsStream) return json(reply, 406, errorBody('TRB_ERR_BAD_REQUEST', 'Live queries need Accept: text/event-stream'))
          const stream = startSse(request, reply)
          stream.onClose(live.subscribe(op, variables, (body) => stream.send(body)))
          return reply
        }
      } else {
        const body = request.body
        const fromBody = body === undefined || body === null ? {} : body
        variables = op.variablesFromBody(
          Object.keys(pathParams).length && typeof fromBody === 'object' && !Array.isArray(fromBody)
            ? { ...(fromBody as object), ...coercePathParams(op, pathParams) }
            : fromBody,
        )
      }
    } catch (err) {
      if ((err as { code?: string }).code === 'TRB_ERR_OPERATION_VARIABLES') return variablesProblem(reply, err as VariablesError)
      throw err
    }
    if (op.kind === 'subscription') {
      if (!wantsStream) return json(reply, 406, errorBody('TRB_ERR_BAD_REQUEST', 'Subscriptions need Accept: text/event-stream'))
      await streamSubscription(op, variables, request, reply, holder)
      return reply
    }
    return respond(op, variables, request, reply, holder, viaCustomRoute)
  }

  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/operations/*',
    handler: (request, reply) => serve((request.params as { '*': string })['*'].replace(/\/+$/, ''), request, reply),
  })

  for (const route of holder.current.config.routes) {
    app.route({
      method: route.method,
      url: route.path,
      handler: (request, reply) => serve(route.operation, request, reply, request.params as Record<string, string>),
    })
  }
}

/** Path params are strings; for a JSON-body route they are coerced to their variables' JSON types. */
function coercePathParams(op: CompiledOperation, params: Record<string, string>): Variables {
  const out: Variables = {}
  for (const [key, value] of Object.entries(params)) {
    const schema = op.variablesSchema.properties?.[key]
    if (!schema) continue
    const types = Array.isArray(schema.type) ? schema.type : [schema.type]
    if ((types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?$/.test(value)) out[key] = Number(value)
    else if (types.includes('boolean') && (value === 'true' || value === 'false')) out[key] = value === 'true'
    else out[key] = value
  }
  return out
}
