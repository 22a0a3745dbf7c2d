/**
 * The REST connector: an OpenAPI 3.0/3.1 document becomes an executable GraphQL subschema whose
 * resolvers call the upstream through undici. Conversion rules: see `convert.ts`'s header; request
 * and error rules: see `request.ts`'s header.
 */
import { SourceLoadError } from '../../errors.js'
import type { ConnectorContext, LocalSubschema } from '../types.js'
import { convertOpenApi } from './convert.js'
import { DocumentError, loadDocument, resolveBaseUrl } from './load-document.js'
import { createUpstream } from './request.js'

/** Options of a REST data source (`rest({...})` in `datasources/<ns>/index.ts`). */
export interface RestSourceOptions {
  /** The OpenAPI 3.0/3.1 document: a file path (relative to cwd; JSON, or YAML when the `yaml` package is installed) or an http(s) URL. */
  openapi: string
  /** Base URL of the upstream; default: the document's `servers[0].url` (relative server URLs resolved against the document URL). */
  baseUrl?: string
  /** Per-request timeout in milliseconds for headers and body (undici headersTimeout/bodyTimeout), also used for connecting and for downloading the document. Default 5000. */
  timeoutMs?: number
  /** Headers sent with every upstream request. Default none. */
  headers?: Record<string, string>
  /** Request headers forwarded from the client request, by name (lower-case), e.g. ['authorization']. Default []. */
  forwardHeaders?: string[]
}

/** Default of {@link RestSourceOptions.timeoutMs}, in milliseconds. */
const DEFAULT_TIMEOUT_MS = 5000

/**
 * Loads the OpenAPI document, converts it (GET → Query fields, other methods → Mutation fields,
 * named by `operationId`) and opens one keep-alive undici Pool to the base URL. No namespace is
 * applied: `compose/` does that.
 * @returns a {@link LocalSubschema}: the executable schema, `health` (HEAD on the base URL: any HTTP
 *   answer is `up`, a connect failure or timeout `down`) and `close` (closes the pool).
 * @throws SourceLoadError (`TRB_ERR_SOURCE_LOAD`) when the document cannot be loaded or parsed, is not
 *   OpenAPI 3.x, yields no http(s) base URL, or cannot be converted.
 */
export async function createRestSource(options: RestSourceOptions, context: ConnectorContext): Promise<LocalSubschema> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  let loaded: Awaited<ReturnType<typeof loadDocument>>
  let baseUrl: string
  try {
    loaded = await loadDocument(options.openapi, context.cwd, timeoutMs)
    baseUrl = resolveBaseUrl(loaded.document, loaded.url, options.baseUrl)
  } catch (err) {
    if (err instanceof DocumentError) throw new SourceLoadError(context.sourceName, err.message)
    throw err
  }
  const upstream = createUpstream({
    baseUrl,
    timeoutMs,
    headers: options.headers ?? {},
    forwardHeaders: options.forwardHeaders ?? [],
    sourceName: context.sourceName,
  })
  try {
    const { schema, warnings } = convertOpenApi(loaded.document, { request: upstream.request })
    for (const warning of warnings) context.logger.warn({ openapi: options.openapi }, warning)
    context.logger.debug({ baseUrl, openapi: options.openapi }, 'REST source ready')
    return { kind: 'local', schema, health: () => upstream.health(), close: () => upstream.close() }
  } catch (err) {
    await upstream.close()
    throw new SourceLoadError(context.sourceName, `cannot convert ${options.openapi}: ${(err as Error).message}`)
  }
}
