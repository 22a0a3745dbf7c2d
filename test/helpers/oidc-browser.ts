/**
 * Test helper: a browser for the cookie login with OpenID Connect (README "Cookie login with OpenID
 * Connect"), played by fetch with one cookie jar per origin, following redirects by hand and filling
 * in the development login and consent forms of a real `oidc-provider` (`devInteractions`).
 * Used by test/auth-oidc.test.ts, test/rest-oauth-caller.test.ts and test/example-wundergraph-style.test.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'

/** Cookies by origin, then by name. */
export type Jar = Map<string, Map<string, string>>

/** Records the `Set-Cookie` lines of `res` (an answer from `url`) in `jar`; `Max-Age=0` or an empty value deletes. */
export function store(jar: Jar, url: string, res: Response): void {
  const origin = new URL(url).origin
  let cookies = jar.get(origin)
  if (!cookies) jar.set(origin, (cookies = new Map()))
  for (const line of res.headers.getSetCookie()) {
    const [pair, ...attrs] = line.split(';')
    const eq = pair.indexOf('=')
    const name = pair.slice(0, eq).trim()
    const value = pair.slice(eq + 1).trim()
    if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === '') cookies.delete(name)
    else cookies.set(name, value)
  }
}

/** One request with the jar's cookies of `url`'s origin; redirects are not followed. */
export async function browse(jar: Jar, url: string, init: RequestInit = {}): Promise<Response> {
  const cookies = jar.get(new URL(url).origin)
  const headers = new Headers(init.headers)
  if (cookies?.size) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '))
  const res = await fetch(url, { ...init, headers, redirect: 'manual' })
  store(jar, url, res)
  return res
}

/** The value of cookie `name` the jar holds for `origin` (a URL whose origin is used), or undefined. */
export function cookieOf(jar: Jar, origin: string, name: string): string | undefined {
  return jar.get(new URL(origin).origin)?.get(name)
}

/** What {@link loginAtProvider} needs. */
export interface LoginOptions {
  /** The gateway's base URL, e.g. `http://127.0.0.1:4000`. */
  gateway: string
  /** The `auth.oidc.providers[].id`. */
  providerId: string
  /** Login name typed into the provider's form. */
  user: string
  /** `redirect_uri` of the authorize route; none when undefined. */
  redirectUri?: string
  /** Runs after the gateway's authorize answer, before the provider is visited. */
  beforeProvider?: () => Promise<void>
}

/**
 * Starts a login at the gateway and completes the provider's login and consent forms (any password).
 * @returns the callback URL the provider sends the browser to (not yet followed).
 * @throws Error when a step answers unexpectedly or after 20 redirects.
 */
export async function loginAtProvider(jar: Jar, o: LoginOptions): Promise<string> {
  const callbackUrl = `${o.gateway}/auth/cookie/callback/${o.providerId}`
  const query = o.redirectUri ? `?redirect_uri=${encodeURIComponent(o.redirectUri)}` : ''
  const start = await browse(jar, `${o.gateway}/auth/cookie/authorize/${o.providerId}${query}`)
  if (start.status !== 302) throw new Error(`authorize answered ${start.status}: ${await start.text()}`)
  if (o.beforeProvider) await o.beforeProvider()
  let next: string = start.headers.get('location')!
  for (let hops = 0; hops < 20; hops++) {
    if (next.startsWith(callbackUrl)) return next
    const res = await browse(jar, next)
    if (res.status >= 300 && res.status < 400) {
      next = new URL(res.headers.get('location')!, next).href
      continue
    }
    const html = await res.text()
    if (res.status !== 200) throw new Error(`provider answered ${res.status}: ${html.slice(0, 300)}`)
    const action = new URL(/<form[^>]*action="([^"]+)"/.exec(html)![1], next).href
    const prompt = /name="prompt" value="(\w+)"/.exec(html)![1]
    const body = prompt === 'login' ? new URLSearchParams({ prompt, login: o.user, password: 'any' }) : new URLSearchParams({ prompt })
    const posted = await browse(jar, action, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    next = new URL(posted.headers.get('location')!, action).href
  }
  throw new Error('too many redirects')
}

/** An OpenID provider's HTTP server on 127.0.0.1 before the provider exists (its issuer URL is needed to build it). */
export interface ProviderServer {
  /** `http://127.0.0.1:<port>` */
  issuer: string
  server: Server
  /** Sets the request handler (the provider's `callback()`); until then every request answers 503. */
  serve(handler: (req: IncomingMessage, res: ServerResponse) => void): void
}

/** Starts a {@link ProviderServer}, closed (its keep-alive sockets cut) at `t`'s teardown. */
export async function startProviderServer(t: { teardown(fn: () => unknown): void }): Promise<ProviderServer> {
  const server = createServer()
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(503).end()
  server.on('request', (req, res) => handler(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  return { issuer: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server, serve: (h) => { handler = h } }
}
