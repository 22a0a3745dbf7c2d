#!/usr/bin/env node
/**
 * Issue 30, `pg-peer`: Tributary on PostgreSQL against PostGraphile v4 (a bench-only dev dependency)
 * on the same database, the same machine and the same two reads:
 *
 *   pg-single  one artist by id, its name:
 *              Tributary   { chinook_findUniqueArtist(where: { artistId: $id }) { name } }
 *              PostGraphile { artistByArtistId(artistId: $id) { name } }
 *   pg-nested  20 artists → albums → tracks, ordered by id at each level (the `chinook` scenario's query):
 *              Tributary   { chinook_findManyArtist(take: 20, orderBy: [{ artistId: asc }]) { artistId name albums { … tracks { … } } } }
 *              PostGraphile { allArtists(first: 20, orderBy: ARTIST_ID_ASC) { nodes { … albumsByArtistId(orderBy: ALBUM_ID_ASC) { nodes { … tracksByAlbumId(orderBy: TRACK_ID_ASC) { nodes { … } } } } } } }
 *
 * Both are `POST /graphql` with a JSON body, on 127.0.0.1. The database is the Chinook schema the tests
 * load into PostgreSQL (`BENCH_PG_CHINOOK_URL`, default `TEST_POSTGRES_URL` + `?schema=chinook`; load it
 * with any PostgreSQL Chinook test, or test/helpers/chinook.ts `chinookPostgres()`).
 * - Tributary: `dist/gateway/cli.js start --config examples/chinook/config.ts` as `npm start` runs it,
 *   `CHINOOK_DATABASE_URL` = that URL with `application_name=trb-bench`.
 * - PostGraphile v4: its CLI (`postgraphile -c … --schema chinook --disable-query-log`, NODE_ENV
 *   production) in its own process, with `application_name=pgl-bench`, and
 *   bench/postgraphile/graphql15.cjs preloaded (its packages must all see graphql 15).
 *
 * Before measuring: each side runs once with its statement log on (Tributary `LOG_LEVEL=debug`,
 * msg "sql"; PostGraphile `DEBUG=postgraphile:postgres`), the statements of each read are captured and
 * printed; the answers are compared value by value (PostGraphile's `nodes` connections unwrapped).
 * `pg-single` is also sent 8 times at once, and the statements of those printed (Tributary batches
 * concurrent lookups into one statement: README "Batched lookups").
 * Then `rounds` A/B rounds (order alternating), autocannon `-c connections` in its own process; per run:
 * req/s, CPU µs per request of the server process (/proc/<pid>/stat, user + system) and of its
 * PostgreSQL backends (the server's processes whose pg_stat_activity.application_name is the side's;
 * readable when PostgreSQL runs on this machine). The ratio of a round is Tributary ÷ PostGraphile req/s.
 *
 *   node bench/pg-peer.mjs                      # R=3 rounds × D=10 s, C=50 connections, W=3 s warm-up
 *   ONLY=single node bench/pg-peer.mjs          # one of the two reads
 *   ONLY=single KEYS=100 node bench/pg-peer.mjs # pg-single over 100 different artists in turn (default 1: artist 90 only)
 *   R=0 OUT=/tmp/s.json node bench/pg-peer.mjs  # only capture the statements (written with the answers' sizes to OUT)
 *   BENCH_GATEWAY_NODE_ARGS='--max-semi-space-size=128' node bench/pg-peer.mjs  # node flags added to the gateway's (after npm start's)
 *   npm run bench -- --scenarios pg-peer        # the same from run.mjs (its --rounds/--duration/--connections)
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { cpuTimeOf, freePort, root, runLoad, startGateway, startNode } from './lib/processes.mjs'

/** Targets of issue 30 (Tributary req/s ÷ PostGraphile v4 req/s). */
export const PG_PEER_TARGETS = { single: 2.5, nested: 6 }

const ARTIST_ID = 90
const NESTED_TRACK_FIELDS = 'trackId name milliseconds unitPrice'

/** The two reads, each side's query and how its answer maps onto plain values. */
export const PG_PEER_READS = {
  single: {
    tributary: { query: 'query Artist($id: Int!) { chinook_findUniqueArtist(where: { artistId: $id }) { name } }', variables: { id: ARTIST_ID } },
    postgraphile: { query: 'query Artist($id: Int!) { artistByArtistId(artistId: $id) { name } }', variables: { id: ARTIST_ID } },
    /** Also captured: the statements of this many identical requests sent at once. */
    concurrent: 8,
    tributaryValues: (d) => d.chinook_findUniqueArtist,
    postgraphileValues: (d) => d.artistByArtistId,
  },
  nested: {
    tributary: { query: `{ chinook_findManyArtist(take: 20, orderBy: [{ artistId: asc }]) { artistId name albums { albumId title tracks { ${NESTED_TRACK_FIELDS} } } } }` },
    postgraphile: { query: `{ allArtists(first: 20, orderBy: ARTIST_ID_ASC) { nodes { artistId name albumsByArtistId(orderBy: ALBUM_ID_ASC) { nodes { albumId title tracksByAlbumId(orderBy: TRACK_ID_ASC) { nodes { ${NESTED_TRACK_FIELDS} } } } } } } }` },
    tributaryValues: (d) => d.chinook_findManyArtist,
    postgraphileValues: (d) =>
      d.allArtists.nodes.map((a) => ({ artistId: a.artistId, name: a.name, albums: a.albumsByArtistId.nodes.map((al) => ({ albumId: al.albumId, title: al.title, tracks: al.tracksByAlbumId.nodes })) })),
  },
}

/** `BENCH_PG_CHINOOK_URL`, else `TEST_POSTGRES_URL` (default postgres://postgres@127.0.0.1:5432/test) with `schema=chinook`. */
export function pgChinookUrl() {
  if (process.env.BENCH_PG_CHINOOK_URL) return process.env.BENCH_PG_CHINOOK_URL
  const u = new URL(process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
  u.searchParams.set('schema', 'chinook')
  return u.href
}

const withParam = (url, key, value) => {
  const u = new URL(url)
  u.searchParams.set(key, value)
  return u.href
}
const withoutParam = (url, key) => {
  const u = new URL(url)
  u.searchParams.delete(key)
  return u.href
}

/** Starts PostGraphile v4's CLI on 127.0.0.1 (its own process group); `debug` turns its statement log on. */
export async function startPostGraphile(url, { debug = false, onLine } = {}) {
  const schema = new URL(url).searchParams.get('schema') ?? 'public'
  const port = await freePort()
  const cli = join(root, 'node_modules/postgraphile/build/postgraphile/cli.js')
  const handle = await startNode({
    name: 'postgraphile',
    args: ['--require', join(root, 'bench/postgraphile/graphql15.cjs'), cli, '-c', withParam(withoutParam(url, 'schema'), 'application_name', 'pgl-bench'), '--schema', schema, '--host', '127.0.0.1', '--port', String(port), '--disable-query-log', '--disable-graphiql'],
    env: { ...process.env, NODE_ENV: 'production', DEBUG: debug ? 'postgraphile:postgres' : '' },
    ready: /server listening on port (\d+)/,
    timeoutMs: 60_000,
    onLine,
  })
  return { ...handle, url: `http://127.0.0.1:${port}` }
}

/** The PostgreSQL backends (pids) whose application_name is `app` (pg_stat_activity). */
async function backendsOf(pgClient, app) {
  const r = await pgClient.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [app])
  return r.rows.map((x) => x.pid)
}

function cpuOfPids(pids) {
  let ms = 0
  for (const p of pids) {
    try {
      ms += cpuTimeOf(p)
    } catch {
      // ended or not readable
    }
  }
  return ms
}

async function postJson(url, body) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`POST ${url} answered ${res.status}: ${text.slice(0, 500)}`)
  const json = JSON.parse(text)
  if (json.errors) throw new Error(`POST ${url}: ${JSON.stringify(json.errors).slice(0, 500)}`)
  return { json, bytes: Buffer.byteLength(text) }
}

/**
 * Runs the scenario. `options`: { rounds, duration, connections, warmup, only?: 'single'|'nested',
 * gatewayNodeArgs? }; `say(text)` prints a line, `progress(text)` a status line.
 * @returns a result object per read: queries, statements, runs, ratios, medians, CPU per request;
 *   `{ skipped: reason }` when PostgreSQL, the Chinook schema or PostGraphile is missing
 */
export async function pgPeerScenario({ rounds = 3, duration = 10, connections = 50, warmup = 3, only, keys = 1, gatewayNodeArgs = [], say = console.log, progress } = {}) {
  const url = pgChinookUrl()
  const pg = (await import('pg')).default
  const result = { url: url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@'), reads: {} }
  // Skipped (not failed) without PostgreSQL, the Chinook schema or PostGraphile, as `health` skips its PostgreSQL half.
  const skip = (why) => {
    say(`\n[pg-peer] skipped: ${why}`)
    return { ...result, skipped: why }
  }
  if (!existsSync(join(root, 'node_modules/postgraphile/build/postgraphile/cli.js'))) return skip('postgraphile is not installed (a devDependency: npm install)')
  const admin = new pg.Client({ connectionString: withoutParam(url, 'schema') })
  try {
    await admin.connect()
  } catch (err) {
    return skip(`PostgreSQL at ${result.url} is unreachable (${err.message})`)
  }
  const reads = Object.entries(PG_PEER_READS).filter(([name]) => !only || only === name)
  try {
    const probe = await admin.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'artist'`, [new URL(url).searchParams.get('schema') ?? 'public'])
    if (probe.rows[0].n !== 1) return skip(`no Chinook artist table at ${result.url} (load it: a PostgreSQL Chinook test, or test/helpers/chinook.ts chinookPostgres())`)
    const trbUrl = withParam(url, 'application_name', 'trb-bench')
    const config = 'examples/chinook/config.ts'

    // 1. The statements each side sends for each read (statement logs on), and the answers.
    say(`\n[pg-peer] capturing the statements: Tributary (LOG_LEVEL=debug) and PostGraphile v4 (DEBUG=postgraphile:postgres) on ${result.url}`)
    let capture = null
    const trbLog = (line) => {
      if (!capture || !line.startsWith('{')) return
      try {
        const o = JSON.parse(line)
        if (o.msg === 'sql') capture.push({ sql: o.sql, bindings: o.bindings })
      } catch {
        // not a log line
      }
    }
    // PostGraphile's debug lines: "<time> postgraphile:postgres <statement, possibly several lines>".
    let pglBuffer = null
    const pglLog = (line) => {
      if (!capture) return
      const plain = line.replace(/\x1b\[[0-9;]*m/g, '')
      const m = /postgraphile:postgres (.*)$/.exec(plain)
      if (m) {
        pglBuffer = { sql: m[1] }
        capture.push(pglBuffer)
      } else if (pglBuffer && !/^\s*\S+ postgraphile:/.test(plain)) pglBuffer.sql += `\n${plain}`
    }
    const answers = {}
    const statements = {}
    const concurrentStatements = {}
    for (const side of ['tributary', 'postgraphile']) {
      const server = side === 'tributary'
        ? await startGateway({ config, env: { CHINOOK_DATABASE_URL: trbUrl, LOG_LEVEL: 'debug' }, onLine: trbLog })
        : await startPostGraphile(url, { debug: true, onLine: pglLog })
      try {
        for (const [name, read] of reads) {
          await postJson(`${server.url}/graphql`, JSON.stringify(read[side])) // first run: plans, caches
          await new Promise((ok) => setTimeout(ok, 400)) // its log lines (pino writes asynchronously)
          capture = []
          pglBuffer = null
          const { json, bytes } = await postJson(`${server.url}/graphql`, JSON.stringify(read[side]))
          await new Promise((ok) => setTimeout(ok, 400))
          ;(statements[name] ??= {})[side] = capture.map((s) => ({ ...s, sql: s.sql.trim() }))
          capture = null
          ;(answers[name] ??= {})[side] = { values: read[`${side}Values`](json.data), bytes }
          if (read.concurrent) {
            // The same request `concurrent` times at once: Tributary batches concurrent lookups (README "Batched lookups").
            const body = JSON.stringify(read[side])
            await Promise.all(Array.from({ length: read.concurrent }, () => postJson(`${server.url}/graphql`, body))) // opens the keep-alive connections
            await new Promise((ok) => setTimeout(ok, 400))
            capture = []
            pglBuffer = null
            const many = await Promise.all(Array.from({ length: read.concurrent }, () => postJson(`${server.url}/graphql`, JSON.stringify(read[side]))))
            await new Promise((ok) => setTimeout(ok, 400))
            ;(concurrentStatements[name] ??= {})[side] = capture.map((s) => ({ ...s, sql: s.sql.trim() }))
            capture = null
            for (const m of many) if (!isDeepStrictEqual(m.json, json)) throw new Error(`pg-peer ${name}: ${side} answers concurrent requests differently: ${JSON.stringify(m.json).slice(0, 400)}`)
          }
        }
      } finally {
        await server.stop()
      }
    }
    for (const [name] of reads) {
      const a = answers[name]
      if (!isDeepStrictEqual(a.tributary.values, a.postgraphile.values)) {
        throw new Error(`pg-peer ${name}: Tributary and PostGraphile answer different values:\n tributary:    ${JSON.stringify(a.tributary.values).slice(0, 400)}\n postgraphile: ${JSON.stringify(a.postgraphile.values).slice(0, 400)}`)
      }
      const s = statements[name]
      say(`[pg-${name}] same values from both (${a.tributary.bytes} / ${a.postgraphile.bytes} bytes); statements: Tributary ${s.tributary.length}, PostGraphile ${s.postgraphile.length}`)
      for (const side of ['tributary', 'postgraphile']) for (const st of s[side]) say(`  ${side}: ${st.sql.replace(/\s+/g, ' ').slice(0, 240)}${st.sql.length > 240 ? ' …' : ''}`)
      const c = concurrentStatements[name]
      if (c) {
        say(`[pg-${name}] ${PG_PEER_READS[name].concurrent} requests at once (same answers): statements Tributary ${c.tributary.length}, PostGraphile ${c.postgraphile.length}`)
        for (const st of c.tributary) say(`  tributary: ${st.sql.replace(/\s+/g, ' ').slice(0, 400)}${st.sql.length > 400 ? ' …' : ''}  bindings ${JSON.stringify(st.bindings)}`)
      }
      result.reads[name] = { queries: { tributary: PG_PEER_READS[name].tributary, postgraphile: PG_PEER_READS[name].postgraphile }, bytes: { tributary: a.tributary.bytes, postgraphile: a.postgraphile.bytes }, statements: s, ...(c ? { concurrentStatements: c } : {}) }
    }

    // 2. A/B rounds (none with rounds 0: the statements and answers only).
    if (rounds === 0) return result
    const gw = await startGateway({ config, env: { CHINOOK_DATABASE_URL: trbUrl }, nodeArgs: gatewayNodeArgs })
    let pgl
    try {
      pgl = await startPostGraphile(url)
      say(`[pg-peer] Tributary ${gw.url} (pid ${gw.pid}) vs PostGraphile v4 ${pgl.url} (pid ${pgl.pid}); ${rounds} round(s) × ${duration} s, -c ${connections}${keys > 1 ? `, pg-single over ${keys} artists in turn` : ''}`)
      const sides = {
        tributary: { pid: gw.pid, url: `${gw.url}/graphql`, app: 'trb-bench' },
        postgraphile: { pid: pgl.pid, url: `${pgl.url}/graphql`, app: 'pgl-bench' },
      }
      const one = async (label, name, side, seconds) => {
        const s = sides[side]
        const read = PG_PEER_READS[name][side]
        const body = JSON.stringify(read)
        // KEYS > 1 (pg-single): the requests look up KEYS different artists in turn (id 1 + (7·i mod 275), i < KEYS: all present, distinct up to 275).
        const bodies = keys > 1 && read.variables?.id !== undefined ? Array.from({ length: keys }, (_, i) => JSON.stringify({ ...read, variables: { ...read.variables, id: 1 + ((i * 7) % 275) } })) : undefined
        const pids0 = await backendsOf(admin, s.app)
        const before = new Map(pids0.map((p) => [p, cpuOfPids([p])]))
        const c0 = cpuTimeOf(s.pid)
        const r = await runLoad({ label, url: s.url, method: 'POST', headers: { 'content-type': 'application/json' }, body, ...(bodies ? { bodies } : {}), duration: seconds, connections, progress })
        const c1 = cpuTimeOf(s.pid)
        const pids1 = await backendsOf(admin, s.app)
        // Backends opened during the run count from 0; CPU of ones that ended during it is lost (pools keep theirs).
        const backendMs = pids1.reduce((sum, p) => sum + cpuOfPids([p]) - (before.get(p) ?? 0), 0)
        if (r.non2xx || r.errors || r.timeouts) throw new Error(`${label}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts: the run is invalid`)
        const n = r.requests.total
        return {
          reqPerSec: Math.round(r.reqPerSec), total: n, latencyMs: { p50: r.latency.p50, p99: r.latency.p99 },
          serverCpuUsPerReq: +(((c1 - c0) * 1000) / n).toFixed(1),
          backendCpuUsPerReq: +((backendMs * 1000) / n).toFixed(1),
          backends: pids1.length, newBackends: pids1.filter((p) => !before.has(p)).length, clientCpuPct: r.clientCpuPct,
          loadavg1: +readFileSync('/proc/loadavg', 'utf8').split(' ')[0],
        }
      }
      for (const [name] of reads) {
        const target = PG_PEER_TARGETS[name]
        say(`\n[pg-${name}] warm-up ${warmup} s each`)
        await one(`pg-${name} warm-up tributary`, name, 'tributary', warmup)
        await one(`pg-${name} warm-up postgraphile`, name, 'postgraphile', warmup)
        const runs = []
        const ratios = []
        const cpuRatios = []
        for (let round = 1; round <= rounds; round++) {
          const order = round % 2 ? ['postgraphile', 'tributary'] : ['tributary', 'postgraphile']
          const got = {}
          for (const side of order) {
            got[side] = await one(`pg-${name} round ${round}/${rounds} ${side}`, name, side, duration)
            runs.push({ round, side, ...got[side] })
            const g = got[side]
            say(`  round ${round} ${side.padEnd(12)} ${String(g.reqPerSec).padStart(6)} req/s  p50 ${g.latencyMs.p50} ms p99 ${g.latencyMs.p99} ms  CPU µs/req: server ${g.serverCpuUsPerReq}, PostgreSQL backends ${g.backendCpuUsPerReq} (${g.backends})  load ${g.loadavg1}`)
          }
          const ratio = got.tributary.reqPerSec / got.postgraphile.reqPerSec
          const cpuRatio = got.postgraphile.serverCpuUsPerReq / got.tributary.serverCpuUsPerReq
          ratios.push(+ratio.toFixed(3))
          cpuRatios.push(+cpuRatio.toFixed(3))
          say(`  round ${round} ratio Tributary ÷ PostGraphile: req/s ${ratio.toFixed(3)}, server CPU per request (PostGraphile ÷ Tributary) ${cpuRatio.toFixed(3)}`)
        }
        const med = (xs) => {
          const s = [...xs].sort((x, y) => x - y)
          return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
        }
        const medianRatio = +med(ratios).toFixed(3)
        const medianCpuRatio = +med(cpuRatios).toFixed(3)
        const pass = medianRatio >= target
        say(`[pg-${name}] median ratio ${medianRatio} (target ≥ ${target}) ${pass ? 'PASS' : 'MISS'}; server CPU per request PostGraphile ÷ Tributary ${medianCpuRatio}`)
        Object.assign(result.reads[name], { runs, ratios, medianRatio, cpuRatios, medianCpuRatio, target, pass })
      }
    } finally {
      await pgl?.stop()
      await gw.stop()
    }
  } finally {
    await admin.end()
  }
  return result
}

// Standalone: node bench/pg-peer.mjs
if (import.meta.url === `file://${process.argv[1]}`) {
  const env = (k, d) => Number(process.env[k] ?? d)
  const r = await pgPeerScenario({ rounds: env('R', 3), duration: env('D', 10), connections: env('C', 50), warmup: env('W', 3), only: process.env.ONLY, keys: env('KEYS', 1), gatewayNodeArgs: (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean), progress: undefined })
  if (process.env.OUT) (await import('node:fs')).writeFileSync(process.env.OUT, JSON.stringify(r, null, 2))
  process.exit(0)
}
