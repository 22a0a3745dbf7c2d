/**
 * Header templates of REST and remote GraphQL sources (README "Authentication", "Identity
 * upstream"): a source's `headers` values may hold placeholders, filled for each request from the
 * verified token and the incoming request:
 *
 * ```ts
 * headers: { 'x-user-id': '{{claims.sub}}', authorization: '{{request.headers.authorization}}', 'x-api-key': 'static' }
 * ```
 *
 * - `{{claims.<name>}}`: a claim of `context.auth` (a key, else a dotted path: `{{claims.org.id}}`);
 *   strings, numbers and booleans as text, objects and lists as JSON;
 * - `{{request.headers.<name>}}`: a header of the incoming request (name case-insensitive; repeated
 *   headers joined with `, `).
 *
 * A header whose placeholder has no value (an anonymous caller, a missing claim) is not sent, and
 * neither is a rendered value holding CR, LF or NUL (no header injection). Values without
 * placeholders are sent as they are. The functions here are pure and shared by every connector that
 * calls an upstream (REST, GraphQL, cross-source links): {@link compileHeaderTemplates} once per
 * source, {@link renderHeaderTemplates} per call.
 */
import type { IncomingHttpHeaders } from 'node:http'
import { claimValue } from './jwt.js'

/** One templated header value, split into literal text and placeholders. */
type Part = { text: string } | { claim: string } | { header: string }

/** A source's `headers`, compiled once: the static ones and the templated ones. */
export interface HeaderTemplates {
  /** Headers without placeholders, lower-case names. */
  readonly static: Readonly<Record<string, string>>
  /** Headers with placeholders, lower-case names → their parts. */
  readonly dynamic: readonly (readonly [string, readonly Part[]])[]
}

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g

/**
 * Compiles a source's `headers` option.
 * @throws Error naming the header for a placeholder other than `claims.<name>` or `request.headers.<name>`
 *   (the connector reports it as a source load error).
 */
export function compileHeaderTemplates(headers: Readonly<Record<string, string>> | undefined): HeaderTemplates {
  const fixed: Record<string, string> = {}
  const dynamic: (readonly [string, Part[]])[] = []
  for (const [rawName, value] of Object.entries(headers ?? {})) {
    const name = rawName.toLowerCase()
    if (!value.includes('{{')) {
      fixed[name] = value
      continue
    }
    const parts: Part[] = []
    let last = 0
    for (const m of value.matchAll(PLACEHOLDER)) {
      if (m.index > last) parts.push({ text: value.slice(last, m.index) })
      const expr = m[1]!
      if (/^claims\.[^.\s][^\s]*$/.test(expr)) parts.push({ claim: expr.slice(7) })
      else if (/^request\.headers\.[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(expr)) parts.push({ header: expr.slice(16).toLowerCase() })
      else throw new Error(`headers.${rawName}: unknown placeholder {{${expr}}} (use {{claims.<name>}} or {{request.headers.<name>}})`)
      last = m.index + m[0].length
    }
    if (last < value.length) parts.push({ text: value.slice(last) })
    dynamic.push([name, parts])
  }
  return { static: fixed, dynamic }
}

/** The GraphQL context fields the templates read: `auth` (gateway/auth/jwt.ts) and the incoming headers. */
interface TemplateContext {
  auth?: { claims: Readonly<Record<string, unknown>> } | null
  request?: { headers?: IncomingHttpHeaders }
  reply?: { request?: { headers?: IncomingHttpHeaders } }
  headers?: IncomingHttpHeaders
}

function text(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  return JSON.stringify(value)
}

/**
 * Renders the templated headers for one call.
 * @param context the GraphQL context of the call (`context.auth`, `context.request.headers` or `context.headers`).
 * @returns the headers that rendered completely (lower-case names); the static ones are not included.
 */
export function renderHeaderTemplates(templates: HeaderTemplates, context: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  if (templates.dynamic.length === 0) return out
  const ctx = (context && typeof context === 'object' ? context : {}) as TemplateContext
  const claims = ctx.auth?.claims
  const incoming = ctx.request?.headers ?? ctx.reply?.request?.headers ?? ctx.headers ?? {}
  for (const [name, parts] of templates.dynamic) {
    let value = ''
    let complete = true
    for (const part of parts) {
      const piece = 'text' in part
        ? part.text
        : 'claim' in part
          ? (claims ? text(claimValue(claims, part.claim)) : undefined)
          : text(Array.isArray(incoming[part.header]) ? (incoming[part.header] as string[]).join(', ') : incoming[part.header])
      if (piece === undefined) {
        complete = false
        break
      }
      value += piece
    }
    if (complete && !/[\r\n\0]/.test(value)) out[name] = value
  }
  return out
}
