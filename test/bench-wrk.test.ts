/**
 * bench/lib/wrk.mjs (issue 30: `npm run bench -- --client wrk`): a real wrk against a real
 * `node:http` server on 127.0.0.1. The server checks every request wrk sends (method, headers and a
 * body holding quotes, newlines and Lua's `]]`/`]=]` long-bracket closers) and counts them; the
 * runner's request count, non-2xx count and latency are checked against that. The body also holds a
 * leading newline, CR LF, a tab, a NUL, backslashes and non-ASCII text, each of which a Lua long string
 * or a careless escape would change. Skips with a message where wrk is not installed (`.ci/run`
 * installs Debian's `wrk`).
 */
import t from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

const { runWrk, wrkAvailable } = await import('../bench/lib/wrk.mjs')

/** A server answering 200, or 404 to every second request when `alternate`; counts what it got. */
async function server(check: (req: IncomingMessage, body: string) => string | undefined, alternate = false) {
  const seen = { requests: 0, bad: [] as string[], notFound: 0 }
  const s = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      seen.requests++
      const problem = check(req, Buffer.concat(chunks).toString('utf8'))
      if (problem && seen.bad.length < 5) seen.bad.push(problem)
      const status = alternate && seen.requests % 2 === 0 ? 404 : 200
      if (status === 404) seen.notFound++
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end('{"ok":true}')
    })
  })
  await new Promise<void>((ok) => s.listen(0, '127.0.0.1', ok))
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/path?x=1`, seen, close: () => new Promise((ok) => s.close(ok)) }
}

t.test('bench/lib/wrk.mjs', { skip: wrkAvailable() ? false : 'wrk is not installed (Debian: apt-get install -y wrk)' }, async (t) => {
  t.test('a POST with headers and an awkward body arrives intact, every time; counts agree', async (t) => {
    // A leading newline, CR LF, a tab, a NUL, backslashes, quotes, Lua's long-bracket closers and non-ASCII text.
    const body = `\n${JSON.stringify({ query: 'query Q($id: Int!) { a(b: "]]") { c } }', variables: { id: 1, s: 'x]=]y\n"z"\\', e: 'é ü 漢' } })}\r\n\t\u0000end`
    const srv = await server((req, got) => {
      if (req.method !== 'POST') return `method ${req.method}`
      if (req.url !== '/path?x=1') return `url ${req.url}`
      if (req.headers['content-type'] !== 'application/json') return `content-type ${req.headers['content-type']}`
      if (req.headers['x-quoted'] !== 'a "b" ]] c') return `x-quoted ${req.headers['x-quoted']}`
      return got === body ? undefined : `body ${got}`
    })
    t.teardown(srv.close)
    const r = await runWrk({ label: 'test', url: srv.url, method: 'POST', headers: { 'content-type': 'application/json', 'x-quoted': 'a "b" ]] c' }, body, duration: 1, connections: 4 })
    t.same(srv.seen.bad, [], 'every request as asked')
    t.ok(r.requests.total > 100, `wrk completed ${r.requests.total} requests`)
    // wrk counts completed responses; a request in flight when it stopped reached the server only.
    t.ok(srv.seen.requests >= r.requests.total && srv.seen.requests <= r.requests.total + 4, `server saw ${srv.seen.requests}`)
    t.equal(r.non2xx, 0)
    t.equal(r.errors, 0)
    t.equal(r.client, 'wrk')
    t.ok(r.duration > 0.9 && r.duration < 2, `measured duration ${r.duration} s`)
    t.ok(Math.abs(r.reqPerSec - r.requests.total / r.duration) < 1e-6, 'req/s = requests ÷ duration')
    t.ok(r.latency.p50 > 0 && r.latency.p99 >= r.latency.p50 && r.latency.average > 0, `latency p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, average ${r.latency.average} ms`)
    t.ok(r.clientCpuPct >= 1 && r.clientCpuPct <= 100, `wrk's CPU ${r.clientCpuPct} %`)
  })

  t.test('non-2xx answers are counted (a run with them is invalid in run.mjs)', async (t) => {
    const srv = await server((req) => (req.method === 'GET' ? undefined : `method ${req.method}`), true)
    t.teardown(srv.close)
    const r = await runWrk({ label: 'test', url: srv.url, duration: 1, connections: 2 })
    t.same(srv.seen.bad, [])
    t.ok(r.non2xx > 0, `${r.non2xx} non-2xx`)
    t.ok(Math.abs(r.non2xx - srv.seen.notFound) <= 2, `wrk ${r.non2xx}, server ${srv.seen.notFound}`)
  })

  t.test('refused: another host, bounds, what wrk cannot do', async (t) => {
    t.throws(() => runWrk({ label: 'x', url: 'http://10.0.0.1:80/', duration: 1, connections: 1 }), /only http:\/\/127\.0\.0\.1/)
    t.throws(() => runWrk({ label: 'x', url: 'http://localhost:80/', duration: 1, connections: 1 }), /only http:\/\/127\.0\.0\.1/)
    t.throws(() => runWrk({ label: 'x', url: 'http://127.0.0.1:1/', duration: 601, connections: 1 }), /duration/)
    t.throws(() => runWrk({ label: 'x', url: 'http://127.0.0.1:1/', duration: 1, connections: 1001 }), /connections/)
    t.throws(() => runWrk({ label: 'x', url: 'http://127.0.0.1:1/', duration: 1, connections: 1, rate: 100 }), /fixed rate/)
    t.throws(() => runWrk({ label: 'x', url: 'http://127.0.0.1:1/', duration: 1, connections: 1, bodies: ['a'] }), /bodies/)
  })

  t.test('a server that is not there: the run fails with wrk\'s own words', async (t) => {
    const srv = await server(() => undefined)
    const url = srv.url
    await srv.close()
    await t.rejects(runWrk({ label: 'gone', url, duration: 1, connections: 1 }), /wrk run "gone"|connect/)
  })
})
