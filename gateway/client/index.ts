/**
 * `tributary-gateway/client`: the runtime that every generated client (`generated/client.ts`) imports — the
 * `TributaryError` class, the option types and the HTTP transport for `/operations/*` (JSON over
 * GET/POST, Server-Sent Events for subscriptions and live queries). It depends on nothing but a
 * WHATWG `fetch` (Node ≥ 18, browsers, Deno, Bun), so generated clients run anywhere.
 */
// ----- shared scalars -----

/** `DateTime`: an ISO 8601 UTC date-time string, e.g. `2026-11-20T10:00:00.000Z`. */
export type DateTime = string
/** `BigInt`: a whole number as a decimal string (it may not fit a JS number). */
export type BigIntString = string
/** `Decimal`: an exact decimal number as a string. */
export type DecimalString = string
/** `Bytes`: base64. */
export type Base64String = string
/** `JSON` and unknown custom scalars: any JSON value. */
export type JSONValue = unknown

// ----- runtime -----

/** One error of a response (docs/architecture.md §5): `{ message, path?, extensions: { code } }`. */
export interface TributaryErrorItem {
  message: string
  path?: (string | number)[]
  locations?: { line: number; column: number }[]
  extensions?: { code?: string; [key: string]: unknown }
}

/** Thrown by every client call that fails: an HTTP status >= 400, or `errors` in a stream event. */
export class TributaryError extends Error {
  /** The HTTP status (200 for an error inside a stream event, 0 when no response was received). */
  readonly status: number
  /** The `errors` array of the response (at least one item). */
  readonly errors: TributaryErrorItem[]
  /** Partial data sent next to the errors, if any. */
  readonly data: unknown
  constructor(status: number, errors: TributaryErrorItem[], data?: unknown) {
    super(errors.map((e) => e.message).join('; ') || `HTTP ${status}`)
    this.name = 'TributaryError'
    this.status = status
    this.errors = errors
    this.data = data
  }
  /** The first error's `extensions.code` (`TRB_ERR_OPERATION_VARIABLES`...). */
  get code(): string | undefined {
    return this.errors[0]?.extensions?.code
  }
}

/** Headers, or a function returning them (called for every request: fresh tokens). */
export type HeadersOption = Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>)

/** Options of {@link createClient}. */
export interface ClientOptions {
  /** The gateway's base URL, e.g. `http://127.0.0.1:4000`. */
  baseUrl: string
  /** Headers sent with every request. */
  headers?: HeadersOption
  /**
   * A JWT sent as `Authorization: Bearer <token>` with every request (operations with
   * `@requireAuthentication`, `@rbac` or `@fromClaim`), or a function returning it (called for every
   * request: fresh tokens). Default: none.
   */
  token?: string | (() => string | Promise<string>)
  /** The fetch implementation. Default: the global `fetch`. */
  fetch?: (input: string, init?: RequestInit) => Promise<Response>
}

/** Per-call options. */
export interface CallOptions {
  /** Aborts the request (or closes the stream). */
  signal?: AbortSignal
  /** Extra headers for this call. */
  headers?: Record<string, string>
}

/** Where a stored operation is served, as the generated client describes it. */
export interface OperationInfo {
  path: string
  /** Variables sent as plain query params (scalars, enums and lists of them). */
  plain: readonly string[]
}

function isPlainValue(value: unknown): boolean {
  const scalar = (v: unknown) => typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))
  return Array.isArray(value) ? value.length > 0 && value.every(scalar) : scalar(value)
}

function queryString(info: OperationInfo, variables: object | undefined, live: boolean): string {
  const params = new URLSearchParams()
  const json: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(variables ?? {})) {
    if (value === undefined) continue
    if (info.plain.includes(key) && isPlainValue(value)) {
      for (const v of Array.isArray(value) ? value : [value]) params.append(key, String(v))
    } else {
      json[key] = value
    }
  }
  if (Object.keys(json).length > 0) params.set('variables', JSON.stringify(json))
  if (live) params.set('live', 'true')
  const s = params.toString()
  return s ? `?${s}` : ''
}

function errorsOf(body: unknown, status: number): TributaryErrorItem[] {
  const errors = (body as { errors?: unknown } | null | undefined)?.errors
  if (Array.isArray(errors) && errors.length > 0) return errors as TributaryErrorItem[]
  return [{ message: `HTTP ${status}`, extensions: { code: 'TRB_CLIENT_HTTP' } }]
}

async function readJson(res: Response): Promise<unknown> {
  const text = await res.text()
  if (text === '') return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    throw new TributaryError(res.status, [{ message: `The response is not JSON (HTTP ${res.status})`, extensions: { code: 'TRB_CLIENT_BAD_RESPONSE' } }])
  }
}

/** Reads a Server-Sent Events body (HTML Living Standard §9.2.6) and yields the `data` of each event. */
async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string, void, undefined> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  let data: string[] = []
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      buffer += decoder.decode(value, { stream: true })
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buffer)
        if (!m || (m[0] === '\r' && m.index === buffer.length - 1)) break
        const line = buffer.slice(0, m.index)
        buffer = buffer.slice(m.index + m[0].length)
        if (line === '') {
          if (data.length > 0) yield data.join('\n')
          data = []
        } else if (line.startsWith('data')) {
          const v = line.slice(4)
          if (v === '' || v.startsWith(':')) data.push(v.startsWith(': ') ? v.slice(2) : v.slice(1))
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
}

/** The client returned by {@link createClient}, before the per-operation methods are bound. */
export class Transport {
  private readonly base: string
  private readonly fetchImpl: (input: string, init?: RequestInit) => Promise<Response>
  private readonly headersOption: HeadersOption | undefined
  private readonly tokenOption: ClientOptions['token']

  constructor(options: ClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '')
    const f = options.fetch ?? globalThis.fetch
    if (typeof f !== 'function') throw new TypeError('No fetch implementation: pass options.fetch')
    this.fetchImpl = (input, init) => f(input, init)
    this.headersOption = options.headers
    this.tokenOption = options.token
  }

  private async headers(extra: Record<string, string>, call: CallOptions | undefined): Promise<Record<string, string>> {
    const common = typeof this.headersOption === 'function' ? await this.headersOption() : (this.headersOption ?? {})
    const token = typeof this.tokenOption === 'function' ? await this.tokenOption() : this.tokenOption
    return { ...common, ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra, ...(call?.headers ?? {}) }
  }

  private async send(url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.fetchImpl(url, init)
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err
      throw new TributaryError(0, [{ message: `Request failed: ${(err as Error).message}`, extensions: { code: 'TRB_CLIENT_NETWORK' } }])
    }
  }

  async query(info: OperationInfo, variables: object | undefined, call: CallOptions | undefined): Promise<unknown> {
    const res = await this.send(this.base + info.path + queryString(info, variables, false), {
      method: 'GET',
      headers: await this.headers({ accept: 'application/json' }, call),
      signal: call?.signal ?? null,
    })
    return this.result(res)
  }

  async mutate(info: OperationInfo, variables: object | undefined, call: CallOptions | undefined): Promise<unknown> {
    const res = await this.send(this.base + info.path, {
      method: 'POST',
      headers: await this.headers({ accept: 'application/json', 'content-type': 'application/json' }, call),
      body: JSON.stringify(variables ?? {}),
      signal: call?.signal ?? null,
    })
    return this.result(res)
  }

  private async result(res: Response): Promise<unknown> {
    const body = await readJson(res)
    if (!res.ok) throw new TributaryError(res.status, errorsOf(body, res.status), (body as { data?: unknown } | undefined)?.data)
    return body
  }

  async *stream(info: OperationInfo, variables: object | undefined, live: boolean, call: CallOptions | undefined): AsyncGenerator<unknown, void, undefined> {
    const controller = new AbortController()
    const abort = () => controller.abort()
    call?.signal?.addEventListener('abort', abort)
    try {
      const res = await this.send(this.base + info.path + queryString(info, variables, live), {
        method: 'GET',
        headers: await this.headers({ accept: 'text/event-stream' }, call),
        signal: controller.signal,
      })
      if (!res.ok || !res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
        const body = await readJson(res)
        throw new TributaryError(res.status, errorsOf(body, res.status))
      }
      for await (const text of sseData(res.body)) {
        let event: { data?: unknown; errors?: TributaryErrorItem[] }
        try {
          event = JSON.parse(text) as { data?: unknown; errors?: TributaryErrorItem[] }
        } catch {
          throw new TributaryError(res.status, [{ message: 'An event is not JSON', extensions: { code: 'TRB_CLIENT_BAD_RESPONSE' } }])
        }
        if (event.errors && event.errors.length > 0) throw new TributaryError(res.status, event.errors, event.data)
        yield event.data
      }
    } finally {
      call?.signal?.removeEventListener('abort', abort)
      controller.abort()
    }
  }
}
