/**
 * File uploads on `POST /graphql` through the GraphQL multipart request spec
 * (https://github.com/jaydenseric/graphql-multipart-request-spec, v2.1): a `multipart/form-data`
 * body with an `operations` field (the usual JSON request, files as `null`), a `map` field
 * (`{ "<part>": ["variables.<path>", ...] }`) and one part per file. Each file is read (the whole body
 * is bounded by `server.bodyLimit`) and put at its paths as an `UploadedFile` (gateway/scalars.ts): its
 * base64 text, the form the `Bytes` scalar takes, with the part's file name and media type, so REST
 * operations with binary or multipart bodies receive it unchanged and a multipart upstream body
 * names and types the file part as the client did. The result is then handled like a JSON request.
 *
 * Refused with 400 `TRB_ERR_BAD_REQUEST`: a request without a CSRF preflight header
 * (`apollo-require-preflight`, `x-apollo-operation-name` or `graphql-require-preflight`: a
 * multipart form is a "simple" request that a foreign page could send), batched operations, more than
 * {@link MAX_FILES} files, a map path outside `variables` or through `__proto__`/`constructor`/
 * `prototype`, a path that does not exist in the variables, and a missing file part. Any other route
 * answers a multipart body with 415.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { BadRequestError } from '../errors.js'
import { assertSafeKey, parseJsonSafely } from '../safe-keys.js'
import { UploadedFile } from '../scalars.js'

/** Most files in one request. */
export const MAX_FILES = 20
const PREFLIGHT_HEADERS = ['apollo-require-preflight', 'x-apollo-operation-name', 'graphql-require-preflight']

function bad(message: string): Error {
  return new BadRequestError(`Multipart request: ${message}`)
}

function field(form: FormData, name: string): unknown {
  const value = form.get(name)
  if (typeof value !== 'string') throw bad(`the "${name}" field is missing`)
  try {
    return parseJsonSafely(value)
  } catch (err) {
    if (err instanceof SyntaxError) throw bad(`the "${name}" field is not valid JSON`)
    throw err
  }
}

/** Sets `value` at a `variables.a.0.b` path of `operations`, which must exist (as `null` or anything). */
function place(operations: Record<string, unknown>, path: string, value: UploadedFile): void {
  const segments = path.split('.')
  if (segments[0] !== 'variables' || segments.length < 2) throw bad(`map path "${path}" must start with "variables."`)
  let node: unknown = operations
  for (let i = 0; i < segments.length; i++) {
    const key = segments[i]!
    assertSafeKey(key, 'map path segment')
    const container = node as Record<string, unknown> | unknown[]
    if (typeof container !== 'object' || container === null) throw bad(`map path "${path}" does not exist in the operations`)
    const own = Array.isArray(container) ? /^\d+$/.test(key) && Number(key) < container.length : Object.hasOwn(container, key)
    if (!own) throw bad(`map path "${path}" does not exist in the operations`)
    if (i === segments.length - 1) (container as Record<string, unknown>)[key] = value
    else node = (container as Record<string, unknown>)[key]
  }
}

/**
 * Turns a parsed multipart form into GraphQL request parameters (see the file header).
 * @throws BadRequestError (400) for anything the spec or the limits refuse.
 */
export async function multipartToParams(form: FormData): Promise<Record<string, unknown>> {
  const operations = field(form, 'operations')
  if (Array.isArray(operations)) throw bad('batched operations are not supported')
  if (typeof operations !== 'object' || operations === null) throw bad('"operations" must be a JSON object')
  const map = field(form, 'map')
  if (typeof map !== 'object' || map === null || Array.isArray(map)) throw bad('"map" must be a JSON object')
  const entries = Object.entries(map as Record<string, unknown>)
  if (entries.length > MAX_FILES) throw bad(`at most ${MAX_FILES} files`)
  for (const [part, paths] of entries) {
    const file = form.get(part)
    if (file === null || typeof file === 'string') throw bad(`file part "${part}" is missing`)
    if (!Array.isArray(paths) || paths.length === 0 || !paths.every((p) => typeof p === 'string')) throw bad(`map entry "${part}" must be a list of paths`)
    const upload = new UploadedFile(Buffer.from(await file.arrayBuffer()).toString('base64'), file.name || part, file.type || 'application/octet-stream')
    for (const path of paths as string[]) place(operations as Record<string, unknown>, path, upload)
  }
  return operations as Record<string, unknown>
}

/** True for a `multipart/form-data` request (its body, if any, was made by the parser below). */
export function isMultipartRequest(request: FastifyRequest): boolean {
  return /^multipart\/form-data\s*(;|$)/i.test(request.headers['content-type'] ?? '')
}

/**
 * Registers the `multipart/form-data` body parser on `app` for `POST /graphql` (any other route
 * gets 415). The body is read up to `bodyLimit` bytes (fastify answers 413 beyond) and parsed with
 * the WHATWG `FormData` parser of Node's fetch.
 */
export function registerGraphQLMultipart(app: FastifyInstance, bodyLimit: number): void {
  app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer', bodyLimit }, async (request: FastifyRequest, body: Buffer) => {
    if (request.routeOptions.url !== '/graphql') throw Object.assign(new BadRequestError('multipart/form-data is accepted on POST /graphql only'), { statusCode: 415 })
    if (!PREFLIGHT_HEADERS.some((h) => typeof request.headers[h] === 'string' && request.headers[h] !== '')) {
      throw bad(`send one of the headers ${PREFLIGHT_HEADERS.join(', ')} (CSRF protection)`)
    }
    let form: FormData
    try {
      form = await new Response(body, { headers: { 'content-type': String(request.headers['content-type']) } }).formData()
    } catch {
      throw bad('the body is not valid multipart/form-data')
    }
    return multipartToParams(form)
  })
}
