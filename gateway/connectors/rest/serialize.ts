/**
 * Parameter and form-body serialization of the REST connector (OpenAPI 3.1 §4.8.12.4 "Style Values",
 * §4.8.15 "Encoding Object"): query parameters by `style`/`explode`, and
 * `application/x-www-form-urlencoded` bodies by each property's `encoding`.
 */
import { isObject } from './openapi.js'

const BIGINT_MARKER = `\u0000bigint${Math.random().toString(36).slice(2)}:`
const BIGINT_MARKED = new RegExp(`"\\\\u0000${BIGINT_MARKER.slice(1)}(-?\\d+)"`, 'g')

/** A JSON value to text; Dates as ISO strings, Buffers as base64, bigints as exact JSON numbers. */
export function toJson(value: unknown): string {
  let hasBig = false
  const marker = BIGINT_MARKER
  const text = JSON.stringify(value, function replacer(this: unknown, key: string, v: unknown) {
    const raw = (this as Record<string, unknown>)[key]
    if (typeof v === 'bigint') { hasBig = true; return `${marker}${v.toString()}` }
    if (Buffer.isBuffer(raw)) return raw.toString('base64')
    return v
  })
  return hasBig ? text.replace(BIGINT_MARKED, '$1') : text
}

/** A scalar as parameter text (Dates ISO 8601, Buffers base64); objects and arrays as JSON. */
export function toText(value: unknown): string {
  if (typeof value === 'string') return value
  if (value instanceof Date) return value.toISOString()
  if (Buffer.isBuffer(value)) return value.toString('base64')
  if (typeof value === 'object' && value !== null) return toJson(value)
  return String(value)
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => isObject(v) && !(v instanceof Date) && !Buffer.isBuffer(v)

/**
 * Appends one query parameter (or form property) to `out` by OpenAPI `style` and `explode`:
 * arrays repeated (`form`, explode) or joined with `,` / space / `|`; objects as `name[k]=v`
 * (`deepObject`, nested objects and arrays included: {@link appendDeep}), `k=v` pairs (`form`,
 * explode) or `name=k,v,k,v`; `json` sends the value as JSON text (`content: application/json`).
 */
export function serializeQuery(out: Array<[string, string]>, name: string, value: unknown, style: string, explode: boolean, json: boolean): void {
  if (json) {
    out.push([name, toJson(value)])
    return
  }
  if (style === 'deepObject' && (isPlainObject(value) || Array.isArray(value))) {
    appendDeep(out, name, value)
    return
  }
  if (Array.isArray(value)) {
    const items = value.filter((v) => v !== null && v !== undefined).map(toText)
    if (explode && style === 'form') for (const v of items) out.push([name, v])
    else out.push([name, items.join(style === 'spaceDelimited' ? ' ' : style === 'pipeDelimited' ? '|' : ',')])
    return
  }
  if (isPlainObject(value)) {
    const entries = Object.entries(value).filter(([, v]) => v !== null && v !== undefined)
    if (explode) for (const [k, v] of entries) out.push([k, toText(v)])
    else out.push([name, entries.map(([k, v]) => `${k},${toText(v)}`).join(',')])
    return
  }
  out.push([name, toText(value)])
}

/**
 * The bracket notation of nested values (Stripe, Rails, PHP, `qs`), which OpenAPI leaves open for
 * `deepObject` beyond one level: `name[k]=v` for object members, `name[]=v` for an array of scalars,
 * `name[i][k]=v` for an array of objects or arrays (the index keeps each item's members together).
 * Null members are left out.
 */
function appendDeep(out: Array<[string, string]>, name: string, value: unknown): void {
  if (value === null || value === undefined) return
  if (Array.isArray(value)) {
    const nested = value.some((v) => isPlainObject(v) || Array.isArray(v))
    value.forEach((v, i) => appendDeep(out, nested ? `${name}[${i}]` : `${name}[]`, v))
  } else if (isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) appendDeep(out, `${name}[${k}]`, v)
  } else out.push([name, toText(value)])
}

/** How one property of a form body is serialized (an OpenAPI Encoding Object, defaults applied). */
export interface FormEncoding {
  /** `form` (the default), `spaceDelimited`, `pipeDelimited` or `deepObject`. */
  style: string
  /** Default true for `form`, else false. */
  explode: boolean
  /** The property's `contentType` is JSON: the value is sent as JSON text. */
  json: boolean
}

/**
 * Reads a media type's `encoding` map (OpenAPI §4.8.15) into {@link FormEncoding}s by raw property name;
 * properties without an entry use the defaults (`style: form`, `explode: true`).
 */
export function formEncodings(encoding: unknown): Record<string, FormEncoding> {
  const out: Record<string, FormEncoding> = Object.create(null)
  if (!isObject(encoding)) return out
  for (const [prop, e] of Object.entries(encoding)) {
    if (!isObject(e)) continue
    const style = typeof e.style === 'string' ? e.style : 'form'
    const explode = typeof e.explode === 'boolean' ? e.explode : style === 'form'
    const json = typeof e.contentType === 'string' && /^application\/([\w.+-]+\+)?json\b/i.test(e.contentType)
    out[prop] = { style, explode, json }
  }
  return out
}

const DEFAULT_ENCODING: FormEncoding = { style: 'form', explode: true, json: false }

/**
 * An `application/x-www-form-urlencoded` body: each top-level property serialized like a query
 * parameter by its encoding ({@link serializeQuery}): by default arrays repeat (`tag=a&tag=b`) and an
 * object's members become pairs of their own (`order=1`); `deepObject` gives `metadata[order]=1`,
 * `expand[]=a` and `items[0][price]=x`. Null properties are left out.
 */
export function formEncode(value: unknown, encodings: Readonly<Record<string, FormEncoding>> = {}): string {
  const pairs: Array<[string, string]> = []
  if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (v === null || v === undefined) continue
      const e = encodings[k] ?? DEFAULT_ENCODING
      serializeQuery(pairs, k, v, e.style, e.explode, e.json)
    }
  }
  return new URLSearchParams(pairs).toString()
}
