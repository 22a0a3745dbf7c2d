/**
 * Loads an OpenAPI 3 or Swagger 2.0 document from a file (JSON; YAML when the `yaml` package is
 * installed) or an http(s) URL (fetched with undici, redirects followed within the origin or listed
 * hosts, cached for starts while the URL is down), and works out the upstream base URL from its `servers`.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Dispatcher } from 'undici'
import { undici } from '../../undici.js'
import { isObject, type OpenApiDocument } from './openapi.js'

/** A loaded document and where it came from. */
export interface LoadedDocument {
  document: OpenApiDocument
  /** The document's absolute location: its http(s) URL or a `file:` URL. */
  url: string
}

/** Thrown by {@link loadDocument} and {@link resolveBaseUrl}; the REST factory wraps it in `SourceLoadError`. */
export class DocumentError extends Error {
  override name = 'DocumentError'
}

async function parse(text: string, location: string): Promise<unknown> {
  const trimmed = text.trimStart()
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return JSON.parse(text) as unknown
    } catch (err) {
      throw new DocumentError(`${location} is not valid JSON: ${(err as Error).message}`)
    }
  }
  let yaml: { parse(src: string): unknown }
  try {
    yaml = (await import('yaml')) as { parse(src: string): unknown }
  } catch {
    throw new DocumentError(`${location} is not JSON, and YAML needs the "yaml" package (npm install yaml)`)
  }
  try {
    return yaml.parse(text)
  } catch (err) {
    throw new DocumentError(`${location} is not valid YAML: ${(err as Error).message}`)
  }
}

/** Options of {@link loadDocument}. */
export interface LoadOptions {
  /** Base directory of a relative file path. */
  cwd: string
  /** Headers and body timeout of the download, in milliseconds. */
  timeoutMs: number
  /** Where a remote document is cached (`generated/sources/<name>.openapi.json`); no cache when undefined. */
  cacheFile?: string
  /** Hosts (`host` or `host:port`) a redirect may lead to besides the document's own origin. */
  redirectHosts?: string[]
  /** Told when the cached copy is used because the URL failed. */
  warn?: (message: string) => void
}

/** Most redirects followed when fetching a document. */
const MAX_REDIRECTS = 5
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])

/**
 * GETs a document, following at most {@link MAX_REDIRECTS} redirects to the same origin or to a
 * listed host (any other target is refused: a document may not send the gateway elsewhere).
 * @throws DocumentError on a refused or endless redirect, a non-2xx answer, a network failure or a timeout.
 */
async function fetchText(source: string, timeoutMs: number, redirectHosts: string[]): Promise<string> {
  const origin = new URL(source).origin
  let current = source
  for (let hops = 0; ; hops++) {
    let res: Dispatcher.ResponseData
    try {
      res = await undici().request(current, { headers: { accept: 'application/json, application/yaml;q=0.9, */*;q=0.1' }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
    } catch (err) {
      const code = isObject(err) && typeof err.code === 'string' ? ` (${err.code})` : ''
      throw new DocumentError(`cannot fetch ${current}${code}`)
    }
    const location = res.headers.location
    if (REDIRECT_STATUSES.has(res.statusCode) && typeof location === 'string') {
      await res.body.dump()
      if (hops >= MAX_REDIRECTS) throw new DocumentError(`GET ${source}: more than ${MAX_REDIRECTS} redirects`)
      let next: URL
      try {
        next = new URL(location, current)
      } catch {
        throw new DocumentError(`GET ${current} redirects to an invalid URL`)
      }
      const allowed = (next.protocol === 'http:' || next.protocol === 'https:') && (next.origin === origin || redirectHosts.includes(next.host) || redirectHosts.includes(next.hostname))
      if (!allowed) throw new DocumentError(`GET ${current} redirects to ${next.origin}, which is neither the document's origin nor listed in redirectHosts`)
      current = next.href
      continue
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      await res.body.dump()
      throw new DocumentError(`GET ${current} answered ${res.statusCode}`)
    }
    try {
      return await res.body.text()
    } catch (err) {
      const code = isObject(err) && typeof err.code === 'string' ? ` (${err.code})` : ''
      throw new DocumentError(`cannot fetch ${current}${code}`)
    }
  }
}

/**
 * Checks the version and converts Swagger 2.0 to OpenAPI 3.0 with `swagger2openapi` (patching small
 * mistakes, as GraphQL Mesh does).
 * @throws DocumentError when the document is neither Swagger 2.0 nor OpenAPI 3.x, or cannot be converted.
 */
async function toOpenApi3(document: unknown, source: string): Promise<OpenApiDocument> {
  if (!isObject(document)) throw new DocumentError(`${source} is not an OpenAPI document (not an object)`)
  if (document.swagger !== undefined) {
    if (document.swagger !== '2.0') throw new DocumentError(`${source} is Swagger ${String(document.swagger)}; only Swagger 2.0 and OpenAPI 3.x are supported`)
    const { convertObj } = await import('swagger2openapi')
    try {
      const out = await convertObj(document as never, { patch: true, warnOnly: true, resolve: false })
      return out.openapi as unknown as OpenApiDocument
    } catch (err) {
      throw new DocumentError(`${source}: Swagger 2.0 conversion failed: ${(err as Error).message}`)
    }
  }
  if (typeof document.openapi !== 'string' || !/^3\./.test(document.openapi)) throw new DocumentError(`${source} is not an OpenAPI 3.x document (openapi: ${JSON.stringify(document.openapi)})`)
  return document as unknown as OpenApiDocument
}

/**
 * Reads and parses an OpenAPI 3.0/3.1 or Swagger 2.0 document (2.0 is converted to 3.0).
 * A remote document is cached in `options.cacheFile` after each successful load; when the URL
 * fails (network, timeout, non-2xx, refused redirect, unparsable answer) and a cached copy exists,
 * that copy is used and `options.warn` is told.
 * @param source a path (relative to `cwd`) or an http(s) URL.
 * @throws DocumentError when the document cannot be read, fetched or parsed (and no cached copy
 *   exists), or is not Swagger 2.0 / OpenAPI 3.x.
 */
export async function loadDocument(source: string, options: LoadOptions): Promise<LoadedDocument> {
  if (/^https?:\/\//i.test(source)) {
    let raw: unknown
    try {
      raw = await parse(await fetchText(source, options.timeoutMs, options.redirectHosts ?? []), source)
    } catch (err) {
      if (!(err instanceof DocumentError) || options.cacheFile === undefined) throw err
      let cached: string
      try {
        cached = await readFile(options.cacheFile, 'utf8')
      } catch {
        throw err
      }
      options.warn?.(`${err.message}; starting from the cached copy ${options.cacheFile}`)
      return { document: await toOpenApi3(await parse(cached, options.cacheFile), source), url: source }
    }
    const document = await toOpenApi3(raw, source)
    if (options.cacheFile !== undefined) {
      await mkdir(dirname(options.cacheFile), { recursive: true })
      const tmp = `${options.cacheFile}.${process.pid}.tmp`
      await writeFile(tmp, `${JSON.stringify(raw, null, 2)}\n`)
      await rename(tmp, options.cacheFile)
    }
    return { document, url: source }
  }
  const path = resolve(options.cwd, source)
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    throw new DocumentError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  return { document: await toOpenApi3(await parse(text, source), source), url: pathToFileURL(path).href }
}

/**
 * The upstream base URL: `explicit` when given, else the document's `servers[0].url` with its
 * `{variables}` replaced by their defaults, resolved against the document's URL when relative
 * (OpenAPI §4.8.5). A document without `servers` means `/` (OpenAPI §4.8.1).
 * @throws DocumentError when the result is not an absolute http(s) URL (e.g. a relative server URL in a local file).
 */
export function resolveBaseUrl(document: OpenApiDocument, documentUrl: string, explicit?: string): string {
  let raw = explicit
  if (raw === undefined) {
    const server = Array.isArray(document.servers) ? document.servers[0] : undefined
    raw = server && typeof server.url === 'string' ? server.url : '/'
    for (const [name, variable] of Object.entries(server?.variables ?? {})) raw = raw.split(`{${name}}`).join(String(variable.default))
  }
  let url: URL
  try {
    url = new URL(raw, documentUrl)
  } catch {
    throw new DocumentError(`invalid base URL ${raw}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new DocumentError(`no http(s) base URL: servers[0].url is ${JSON.stringify(raw)} and the document is a file; set baseUrl`)
  }
  return url.href
}
