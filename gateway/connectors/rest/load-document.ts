/**
 * Loads an OpenAPI 3 document from a file (JSON; YAML when the `yaml` package is installed) or an
 * http(s) URL (fetched with undici), and works out the upstream base URL from its `servers`.
 */
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { request } from 'undici'
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

/**
 * Reads and parses an OpenAPI 3.0 or 3.1 document.
 * @param source a path (relative to `cwd`) or an http(s) URL.
 * @param timeoutMs headers and body timeout of the download, in milliseconds.
 * @throws DocumentError when the document cannot be read, fetched (non-2xx, network, timeout) or parsed, or is not OpenAPI 3.x.
 */
export async function loadDocument(source: string, cwd: string, timeoutMs: number): Promise<LoadedDocument> {
  let text: string
  let url: string
  if (/^https?:\/\//i.test(source)) {
    url = source
    try {
      const res = await request(source, { headers: { accept: 'application/json, application/yaml;q=0.9, */*;q=0.1' }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
      if (res.statusCode < 200 || res.statusCode >= 300) {
        await res.body.dump()
        throw new DocumentError(`GET ${source} answered ${res.statusCode}`)
      }
      text = await res.body.text()
    } catch (err) {
      if (err instanceof DocumentError) throw err
      const code = isObject(err) && typeof err.code === 'string' ? ` (${err.code})` : ''
      throw new DocumentError(`cannot fetch ${source}${code}`)
    }
  } else {
    const path = resolve(cwd, source)
    url = pathToFileURL(path).href
    try {
      text = await readFile(path, 'utf8')
    } catch (err) {
      throw new DocumentError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
  }
  const document = await parse(text, source)
  if (!isObject(document)) throw new DocumentError(`${source} is not an OpenAPI document (not an object)`)
  if (typeof document.swagger === 'string') throw new DocumentError(`${source} is Swagger ${document.swagger}; only OpenAPI 3.x is supported`)
  if (typeof document.openapi !== 'string' || !/^3\./.test(document.openapi)) throw new DocumentError(`${source} is not an OpenAPI 3.x document (openapi: ${JSON.stringify(document.openapi)})`)
  return { document: document as unknown as OpenApiDocument, url }
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
