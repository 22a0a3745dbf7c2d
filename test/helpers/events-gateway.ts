/**
 * Test helper for the events connector (README "Events (message brokers)"): a gateway over one events
 * source (`shop`) and a real SQLite database (`db`, table `customer`: 1 Ada, 2 Bo) linked by
 * `shop_Order.customer`, listening on 127.0.0.1; subscriptions over graphql-ws and Server-Sent Events
 * (stored operations), and the broker's port checked so that a test skips when the broker is down.
 * `EVENTS_DEBUG=1` prints the app's error log lines (e.g. the cause of a `TRB_ERR_INTERNAL`).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import WebSocket from 'ws'
import { createClient, type Client } from 'graphql-ws'
import { EventSource } from 'eventsource'
import { pino } from 'pino'
import { resolveConfig, type LinkDefinition, type TributaryConfigInput, type EventsSourceOptions } from '../../gateway/config/index.js'
import { createGateway, type Gateway } from '../../gateway/runtime.js'
import { buildApp } from '../../gateway/http/app.js'

interface Teardown {
  teardown(fn: () => unknown): void
}

/** True when something listens on the URL's host and port. */
export function portOpen(url: string, defaultPort: number): Promise<boolean> {
  const u = new URL(url)
  return new Promise((resolve) => {
    const s = connect({ host: u.hostname, port: Number(u.port || defaultPort) })
    s.once('connect', () => (s.destroy(), resolve(true)))
    s.once('error', () => resolve(false))
    s.setTimeout(1000, () => (s.destroy(), resolve(false)))
  })
}

/** A unique suffix for subjects, streams and queues of one test run. */
export const unique = () => `t${process.pid}x${Math.random().toString(36).slice(2, 8)}`

/** Polls `check` every 10 ms until it holds or `ms` passed; returns its last value. */
export async function until(check: () => boolean, ms = 15000): Promise<boolean> {
  const end = Date.now() + ms
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
  return check()
}

/** The link of every events test: an order's `customerId` gives `customer` from the database, batched. */
export const customerLink: LinkDefinition = {
  on: 'shop_Order', field: 'customer', target: 'db_findManyCustomer',
  args: { where: { id: { in: '$keys' } } }, batch: { key: 'customerId', match: 'id' },
}

/** A running subscription's results. */
export interface Received {
  events: { data?: Record<string, any> | null; errors?: { message: string; extensions?: { code?: string } }[] }[]
  done: boolean
  error: unknown
  close(): void
}

/** What {@link startEventsGateway} returns. */
export interface EventsGateway {
  url: string
  gateway: Gateway
  /** Warning lines logged by the gateway (`msg`). */
  warnings: string[]
  /** POSTs a document to /graphql. */
  query(query: string, variables?: Record<string, unknown>): Promise<{ status: number; body: any }>
  /** Runs a subscription over graphql-ws. */
  ws(query: string, variables?: Record<string, unknown>): Received
  /** Opens a stored subscription over Server-Sent Events. */
  sse(path: string): Received
  /** The value of `tributary_events_rejected_total` for a field (0 when absent). */
  rejected(field: string): Promise<number>
  close(): Promise<void>
}

/**
 * Starts a gateway over `shop` (the events source) and `db`.
 * @param options.operations stored operations (name → document), served under /operations/<name>
 * @param options.pubsub the cluster's Redis (README "Running several instances"); default in memory
 */
export async function startEventsGateway(t: Teardown, events: EventsSourceOptions & Record<string, unknown>, options: { operations?: Record<string, string>; dir?: string; pubsub?: { redisUrl: string; keyPrefix: string } } = {}): Promise<EventsGateway> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'tributary-events-'))
  const dbFile = join(dir, 'shop.sqlite')
  const db = new Database(dbFile)
  db.exec('create table if not exists customer (id integer primary key, name text not null); insert or ignore into customer values (1, \'Ada\'), (2, \'Bo\')')
  db.close()
  const ops = join(dir, 'operations')
  mkdirSync(ops, { recursive: true })
  for (const [name, text] of Object.entries(options.operations ?? {})) writeFileSync(join(ops, `${name}.graphql`), text)
  const input: TributaryConfigInput = {
    datasources: [
      { kind: 'database', namespace: 'db', url: `sqlite:${dbFile}` },
      { kind: 'events', namespace: 'shop', ...events },
    ],
    links: [customerLink],
    operations: { dir: ops },
    generatedDir: join(dir, 'generated'),
    ...(options.pubsub ? { pubsub: options.pubsub } : {}),
  }
  const warnings: string[] = []
  const logger = pino({ level: 'warn' }, { write: (s: string) => void warnings.push((JSON.parse(s) as { msg: string }).msg) })
  const gateway = await createGateway(resolveConfig(input), { logger })
  const app = await buildApp(gateway, { logger: process.env['EVENTS_DEBUG'] ? pino({ level: 'error' }) : false })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const clients: Client[] = []
  const sources: EventSource[] = []
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    for (const c of clients) await c.dispose()
    for (const s of sources) s.close()
    await app.close()
    await gateway.close()
  }
  t.teardown(close)
  return {
    url,
    gateway,
    warnings,
    async query(query, variables) {
      const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) })
      return { status: res.status, body: await res.json() }
    },
    ws(query, variables) {
      const client = createClient({ url: `${url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true })
      clients.push(client)
      const r: Received = { events: [], done: false, error: undefined, close: () => void client.dispose() }
      client.subscribe({ query, ...(variables ? { variables } : {}) }, {
        next: (m) => void r.events.push(m as Received['events'][number]),
        error: (e) => ((r.error = e), (r.done = true)),
        complete: () => void (r.done = true),
      })
      return r
    },
    sse(path) {
      const es = new EventSource(`${url}${path}`)
      sources.push(es)
      const r: Received = { events: [], done: false, error: undefined, close: () => es.close() }
      es.onmessage = (e) => void r.events.push(JSON.parse(e.data as string))
      es.onerror = (e) => void (r.error = e)
      return r
    },
    async rejected(field) {
      const text = await (await fetch(`${url}/metrics`)).text()
      const line = text.split('\n').find((l) => l.startsWith('tributary_events_rejected_total{') && l.includes(`field="${field}"`))
      return line ? Number(line.split(' ').pop()) : 0
    },
    close,
  }
}

/** The events of `r` without the warm-up ones (`id: 'warm'` in the root field `field`). */
export function real(r: Received, field: string): Received['events'] {
  return r.events.filter((e) => (e.data?.[field] as { id?: string } | undefined)?.id !== 'warm')
}

/**
 * Publishes warm-up messages (`warm()`) every 25 ms until the subscription receives one, then empties
 * its events: the broker subscription is known to run, without a sleep.
 */
export async function warmUp(r: Received, warm: () => Promise<unknown>, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms
  while (r.events.length === 0 && !r.done && Date.now() < end) {
    await warm()
    await until(() => r.events.length > 0 || r.done, 25)
  }
  const ok = r.events.length > 0
  // Warm-ups published just before the first arrived may still come: wait until none has arrived
  // for 150 ms (at most 3 s; a loaded machine delivers them late), then empty the events.
  for (let seen = -1, quietEnd = Date.now() + 3000; ok && seen !== r.events.length && Date.now() < quietEnd; ) {
    seen = r.events.length
    await new Promise((res) => setTimeout(res, 150))
  }
  r.events.length = 0
  return ok
}
