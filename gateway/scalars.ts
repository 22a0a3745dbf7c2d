/**
 * The shared scalars. They keep their names across namespaces (docs/architecture.md §4): every source that
 * uses `DateTime`, `JSON`, `BigInt`, `Decimal` or `Bytes` gets these very instances after composition.
 */
import { GraphQLError, GraphQLScalarType, Kind, type ValueNode } from 'graphql'

function fail(scalar: string, message: string): never {
  throw new GraphQLError(`${scalar} cannot represent ${message}`, { extensions: { code: 'BAD_USER_INPUT' } })
}

/**
 * The output form of `DateTime` (`2026-11-20T10:00:00.000Z`), checked field by field but not against
 * the calendar: {@link toIsoDateTime} returns a string it matches unchanged. The SQLite direct plan's
 * `sqliteExactIsoDateTime` (connectors/database/compiler/direct-read.ts) is the same test in SQL.
 */
export const EXACT_ISO = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/

/**
 * Converts a Date, an epoch number (milliseconds) or a date string to an ISO 8601 UTC string
 * (`2026-11-20T10:00:00.000Z`). A string without a zone (`2026-11-20 10:00:00`, as SQLite and MySQL
 * return them) is read as UTC; a string {@link EXACT_ISO} matches is returned as it is.
 * @throws TypeError when the value is not a valid date.
 */
export function toIsoDateTime(value: unknown): string {
  // Already in the output form: nothing to convert (the common case for database values).
  if (typeof value === 'string' && EXACT_ISO.test(value)) return value
  let date: Date
  if (value instanceof Date) date = value
  else if (typeof value === 'number' || typeof value === 'bigint') date = new Date(Number(value))
  else if (typeof value === 'string') {
    const s = value.trim()
    // "2026-11-20 10:00:00" or "2026-11-20T10:00:00" without an offset: UTC.
    const bare = /^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$/.test(s)
    if (/^\d{4}-\d{2}-\d{2}$/.test(s)) date = new Date(`${s}T00:00:00.000Z`)
    else if (bare) date = new Date(`${s.replace(' ', 'T')}Z`)
    else if (/^\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(s)) date = new Date(`1970-01-01T${s}Z`)
    else if (/^-?\d+$/.test(s)) date = new Date(Number(s))
    else date = new Date(s.replace(' ', 'T'))
  } else throw new TypeError(`not a date: ${typeof value}`)
  if (Number.isNaN(date.getTime())) throw new TypeError(`not a date: ${String(value)}`)
  return date.toISOString()
}

/** `DateTime`: an ISO 8601 UTC string on output; accepts ISO 8601 strings on input (RFC 3339). */
export const DateTimeScalar = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  description: 'A date-time as an ISO 8601 UTC string, e.g. `2026-11-20T10:00:00.000Z` (RFC 3339).',
  specifiedByURL: 'https://scalars.graphql.org/andimarek/date-time',
  serialize(value) {
    try {
      return toIsoDateTime(value)
    } catch {
      return fail('DateTime', `value: ${String(value)}`)
    }
  },
  parseValue(value) {
    if (typeof value !== 'string' && !(value instanceof Date)) fail('DateTime', `non-string value: ${JSON.stringify(value)}`)
    try {
      return new Date(toIsoDateTime(value))
    } catch {
      return fail('DateTime', `value: ${JSON.stringify(value)}`)
    }
  },
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) fail('DateTime', 'a non-string literal')
    try {
      return new Date(toIsoDateTime(ast.value))
    } catch {
      return fail('DateTime', `value: ${JSON.stringify(ast.value)}`)
    }
  },
})

function literalToJson(ast: ValueNode, variables?: Record<string, unknown> | null): unknown {
  switch (ast.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return ast.value
    case Kind.INT:
    case Kind.FLOAT:
      return Number(ast.value)
    case Kind.NULL:
      return null
    case Kind.ENUM:
      return ast.value
    case Kind.LIST:
      return ast.values.map((v) => literalToJson(v, variables))
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, literalToJson(f.value, variables)]))
    case Kind.VARIABLE:
      return variables ? variables[ast.name.value] : undefined
  }
}

/** `JSON`: any JSON value, passed through unchanged. */
export const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  description: 'Any JSON value (ECMA-404).',
  specifiedByURL: 'https://www.ecma-international.org/publications-and-standards/standards/ecma-404/',
  serialize: (value) => (typeof value === 'string' && /^[[{]/.test(value) ? safeParse(value) : value),
  parseValue: (value) => value,
  parseLiteral: (ast, variables) => literalToJson(ast, variables),
})

function safeParse(s: string): unknown {
  try {
    return JSON.parse(s)
  } catch {
    return s
  }
}

const INTEGER = /^-?\d+$/

/**
 * An integer literal of an upstream's JSON answer that a JS number cannot hold exactly (outside
 * ±(2^53 − 1)), kept as its digits by {@link parseJsonExact}. `BigInt` and `Decimal` serialise it
 * exactly; everywhere else it acts as the (rounded) number it was before: `valueOf` for `Int`,
 * `Float` and `String`, `toJSON` inside a `JSON` value.
 */
export class ExactInteger {
  constructor(readonly digits: string) {}
  valueOf(): number {
    return Number(this.digits)
  }
  toJSON(): number {
    return Number(this.digits)
  }
}

const LONG_DIGITS = /\d{16}/
const JSON_TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/g
const EXACT_MARK = `\u0000exact${Math.random().toString(36).slice(2)}:`

/**
 * `JSON.parse` (RFC 8259) that keeps integer literals outside the safe range exact, as
 * {@link ExactInteger}s (an upstream's int64 ids, counters, amounts). Text without a run of 16 digits
 * takes the plain `JSON.parse` path.
 * @throws SyntaxError as `JSON.parse` does.
 */
export function parseJsonExact(text: string): unknown {
  if (!LONG_DIGITS.test(text)) return JSON.parse(text)
  let marked = false
  const replaced = text.replace(JSON_TOKEN, (token) => {
    if (token.startsWith('"') || /[.eE]/.test(token) || Number.isSafeInteger(Number(token))) return token
    marked = true
    return JSON.stringify(EXACT_MARK + token)
  })
  if (!marked) return JSON.parse(text)
  return JSON.parse(replaced, (_key, value: unknown) =>
    typeof value === 'string' && value.startsWith(EXACT_MARK) ? new ExactInteger(value.slice(EXACT_MARK.length)) : value,
  )
}

/**
 * `BigInt`: a 64-bit integer, serialised as a string so that no precision is lost in JSON. Accepts a
 * string of digits or a safe integer; the parsed value is the canonical digit string (not a JS
 * `bigint`: graphql-jit inlines parsed literals with `JSON.stringify`, which cannot hold a bigint).
 */
export const BigIntScalar = new GraphQLScalarType<string, string>({
  name: 'BigInt',
  description: 'A signed 64-bit integer, serialised as a decimal string.',
  serialize(value) {
    if (typeof value === 'bigint') return value.toString()
    if (typeof value === 'number' && Number.isInteger(value)) return String(value)
    if (typeof value === 'string' && INTEGER.test(value)) return value
    if (value instanceof ExactInteger) return value.digits
    return fail('BigInt', `value: ${String(value)}`)
  },
  parseValue(value) {
    if ((typeof value === 'number' && Number.isSafeInteger(value)) || (typeof value === 'string' && INTEGER.test(value))) return BigInt(value).toString()
    return fail('BigInt', `value: ${JSON.stringify(value)}`)
  },
  parseLiteral(ast) {
    if ((ast.kind === Kind.INT) || (ast.kind === Kind.STRING && INTEGER.test(ast.value))) return BigInt(ast.value).toString()
    return fail('BigInt', 'a non-integer literal')
  },
})

const DECIMAL = /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/

/** `Decimal`: an exact decimal number, serialised as a string with no loss of precision. */
export const DecimalScalar = new GraphQLScalarType<string, string>({
  name: 'Decimal',
  description: 'An exact decimal number, serialised as a string (e.g. `"0.99"`).',
  serialize(value) {
    if (typeof value === 'string' && DECIMAL.test(value)) return value
    if (typeof value === 'number' && Number.isFinite(value)) return String(value)
    if (typeof value === 'bigint') return value.toString()
    if (value instanceof ExactInteger) return value.digits
    return fail('Decimal', `value: ${String(value)}`)
  },
  parseValue(value) {
    if (typeof value === 'string' && DECIMAL.test(value)) return value
    if (typeof value === 'number' && Number.isFinite(value)) return String(value)
    return fail('Decimal', `value: ${JSON.stringify(value)}`)
  },
  parseLiteral(ast) {
    if ((ast.kind === Kind.INT || ast.kind === Kind.FLOAT || ast.kind === Kind.STRING) && DECIMAL.test(ast.value)) return ast.value
    return fail('Decimal', 'a non-numeric literal')
  },
})

/**
 * The bytes of a parsed `Bytes` value: a Buffer or Uint8Array, or the JSON form of a Buffer,
 * `{ type: 'Buffer', data: number[] }`, which is what graphql-jit makes of a `Bytes` literal (it
 * inlines parsed literals as JSON). Undefined for anything else.
 */
export function bytesOf(value: unknown): Buffer | undefined {
  if (Buffer.isBuffer(value)) return value
  if (value instanceof Uint8Array) return Buffer.from(value)
  if (typeof value === 'object' && value !== null) {
    const { type, data } = value as { type?: unknown; data?: unknown }
    if (type === 'Buffer' && Array.isArray(data) && data.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) return Buffer.from(data as number[])
  }
  return undefined
}

/** The name and media type of an uploaded file, as its multipart part declared them. */
export interface FileInfo {
  /** The part's `filename` (RFC 7578 §4.2), e.g. `cat.png`. */
  filename: string
  /** The part's `Content-Type`, lower-case, e.g. `image/png`; `application/octet-stream` when the client sent none. */
  contentType: string
}

/**
 * A file of a GraphQL multipart request (gateway/http/graphql-multipart.ts), put in the variables
 * where the `map` says: its bytes as base64 (the `Bytes` wire form, so `JSON.stringify` of the
 * variables gives what a base64 variable would) plus its name and media type. `Bytes.parseValue`
 * turns it into a Buffer whose {@link fileInfoOf} is that name and type, so a REST source's multipart
 * body sends the file part as the client named and typed it.
 */
export class UploadedFile {
  constructor(readonly base64: string, readonly filename: string, readonly contentType: string) {}
  toJSON(): string {
    return this.base64
  }
}

const fileInfos = new WeakMap<object, FileInfo>()

/** The name and media type of a parsed `Bytes` value that came from an uploaded file; undefined for any other value. */
export function fileInfoOf(value: unknown): FileInfo | undefined {
  return typeof value === 'object' && value !== null ? fileInfos.get(value) : undefined
}

/** `Bytes`: binary data as a base64 string (RFC 4648 §4); an {@link UploadedFile} is accepted as input too. */
export const BytesScalar = new GraphQLScalarType<Buffer, string>({
  name: 'Bytes',
  description: 'Binary data, serialised as a base64 string (RFC 4648).',
  serialize(value) {
    const bytes = bytesOf(value)
    if (bytes) return bytes.toString('base64')
    if (typeof value === 'string') return value
    return fail('Bytes', `value of type ${typeof value}`)
  },
  parseValue(value) {
    if (value instanceof UploadedFile) {
      const bytes = Buffer.from(value.base64, 'base64')
      fileInfos.set(bytes, { filename: value.filename, contentType: value.contentType })
      return bytes
    }
    if (typeof value !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) fail('Bytes', 'a non-base64 value')
    return Buffer.from(value, 'base64')
  },
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING || !/^[A-Za-z0-9+/]*={0,2}$/.test(ast.value)) fail('Bytes', 'a non-base64 literal')
    return Buffer.from(ast.value, 'base64')
  },
})

/** Every shared scalar by name. `compose/` swaps any same-named scalar of a source for these instances. */
export const sharedScalars: Readonly<Record<string, GraphQLScalarType>> = Object.freeze({
  DateTime: DateTimeScalar,
  JSON: JSONScalar,
  BigInt: BigIntScalar,
  Decimal: DecimalScalar,
  Bytes: BytesScalar,
})

/**
 * The wire form of one parsed value of the shared scalar `scalarName`, for sending it to another
 * GraphQL server: a DateTime's Date as its ISO string, a Bytes value as base64 (see {@link bytesOf});
 * every other value (digit strings of BigInt and Decimal, JSON values) is already in wire form.
 */
export function toWireValue(scalarName: string, value: unknown): unknown {
  if (value instanceof Date) return toIsoDateTime(value)
  if (scalarName === 'Bytes') return bytesOf(value)?.toString('base64') ?? value
  return value
}

/** The SDL declarations of the shared scalars, for connectors that build schemas from SDL. */
export const sharedScalarsSDL = Object.keys(sharedScalars)
  .map((name) => `scalar ${name}`)
  .join('\n')
