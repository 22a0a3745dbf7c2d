/**
 * What a failed upstream call carries besides its code: where it went and what came back. The REST
 * and GraphQL connectors put it on the error's `extensions.upstream`; `http/format-error.ts` shows it
 * to clients in development only and, in production, replaces the upstream-provided message with
 * {@link publicUpstreamMessage} and logs the original.
 */
import { STATUS_CODES } from 'node:http'

/** `extensions.upstream` of an upstream error (a reserved extension key). */
export interface UpstreamDetails {
  /** The data source's name. */
  source: string
  /** The upstream request's HTTP method. */
  method: string
  /** The upstream URL's path, without the query string. */
  path: string
  /** The upstream's HTTP status. */
  status: number
  /** The start of the upstream's response body (see {@link bodyExcerpt}); absent when it had none. */
  body?: string
}

/** Longest body excerpt, in characters. */
export const MAX_BODY_EXCERPT = 500

/** The first {@link MAX_BODY_EXCERPT} characters of an upstream body, runs of whitespace and control characters as one space. */
export function bodyExcerpt(text: string): string | undefined {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\s\u0000-\u001f\u007f]+/g, ' ').trim()
  if (clean === '') return undefined
  return clean.length > MAX_BODY_EXCERPT ? `${clean.slice(0, MAX_BODY_EXCERPT)}…` : clean
}

/** Adds `details` as `extensions.upstream` to an error that has (or gets) `extensions`. */
export function withUpstreamDetails<E extends object>(err: E, details: UpstreamDetails): E {
  const holder = err as { extensions?: Record<string, unknown> }
  holder.extensions = { ...holder.extensions, upstream: details }
  return err
}

/** `extensions.upstream` when it is well formed, else undefined. */
export function upstreamDetailsOf(extensions: unknown): UpstreamDetails | undefined {
  const u = (extensions as { upstream?: unknown } | null | undefined)?.upstream
  if (typeof u !== 'object' || u === null) return undefined
  const d = u as Partial<UpstreamDetails>
  return typeof d.source === 'string' && typeof d.method === 'string' && typeof d.path === 'string' && typeof d.status === 'number'
    ? (d as UpstreamDetails)
    : undefined
}

/**
 * The message production clients get instead of an upstream-provided one: the source name and, for a
 * non-2xx answer, its status line (`Upstream system failed: 500 Internal Server Error`).
 */
export function publicUpstreamMessage(details: UpstreamDetails): string {
  return details.status >= 200 && details.status < 300
    ? `Upstream ${details.source} returned an error`
    : `Upstream ${details.source} failed: ${details.status} ${STATUS_CODES[details.status] ?? 'Unknown'}`
}
