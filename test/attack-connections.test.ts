/**
 * A flood of idle TCP connections cannot take every file descriptor: past `server.maxConnections`
 * Node closes each new connection as soon as it is accepted (`net.Server#maxConnections`), while the
 * connections already held keep working, and a closed one frees its place. Closing the server does
 * not wait for connections that never sent a byte, and ends WebSockets with 1001. Raw sockets and a
 * `ws` client against the demo on 127.0.0.1.
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { connect, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { startDemo } from './helpers/demo.js'
import { eventually } from './helpers/eventually.js'
import { run, upgrade } from './helpers/ws.js'

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket))
    socket.once('error', reject)
  })
}

/** Resolves true when the server ends `socket` within `ms`, false otherwise. */
function endedByServer(socket: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (socket.readableEnded || socket.destroyed) return resolve(true)
    const timer = setTimeout(() => resolve(false), ms)
    const done = () => {
      clearTimeout(timer)
      resolve(true)
    }
    socket.once('end', done)
    socket.once('close', done)
    socket.once('error', done)
    socket.resume()
  })
}

/** One keep-alive HTTP/1.1 GET on `socket`; resolves with the status code once the whole body arrived. */
function exchange(socket: Socket, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let data = Buffer.alloc(0)
    const onData = (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      const head = data.indexOf('\r\n\r\n')
      if (head < 0) return
      const headers = data.subarray(0, head).toString('latin1')
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(headers)?.[1] ?? 0)
      if (data.length - head - 4 < length) return
      socket.off('data', onData)
      resolve(Number(headers.split(' ')[1]))
    }
    socket.on('data', onData)
    socket.once('error', reject)
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)
  })
}

t.test('past server.maxConnections a new connection is closed at once; the held ones are served', async (t) => {
  const { url } = await startDemo(t, { listen: true, override: { server: { maxConnections: 3 } } })
  const port = Number(new URL(url).port)
  const held: Socket[] = []
  t.teardown(() => held.forEach((s) => s.destroy()))
  for (let i = 0; i < 3; i++) {
    const socket = await open(port)
    held.push(socket)
    // A full exchange proves the server accepted it (and counts it).
    t.equal(await exchange(socket, '/health'), 200, `connection ${i + 1} is served`)
  }

  const extra = await open(port)
  held.push(extra)
  t.ok(await endedByServer(extra, 5000), 'the fourth connection is closed by the server without an answer')

  t.equal(await exchange(held[0]!, '/operations/TodoById?id=1'), 200, 'a held connection still gets answers')

  // A client leaves: its place is free for a new connection.
  held[1]!.destroy()
  t.ok(
    await eventually(async () => {
      const socket = await open(port)
      held.push(socket)
      const ended = endedByServer(socket, 300)
      const status = await Promise.race([exchange(socket, '/health').catch(() => 0), ended.then(() => 0)])
      return status === 200
    }, 5000, 50),
    'a new connection is served once one closed',
  )
})

t.test('close() does not wait for connections that never sent a byte; a request in flight still finishes', async (t) => {
  const { app, url } = await startDemo(t, { listen: true })
  const port = Number(new URL(url).port)
  const silent = await open(port)
  const used = await open(port)
  t.teardown(() => [silent, used].forEach((s) => s.destroy()))
  t.equal(await exchange(used, '/health'), 200, 'a keep-alive connection, idle after one exchange')
  // A slow request is in flight while the server closes: a GET whose headers end after close() began.
  const serverSide = new Map<number, Socket>()
  app.server.on('connection', (s: Socket) => serverSide.set(s.remotePort!, s))
  const inFlight = await open(port)
  t.teardown(() => inFlight.destroy())
  inFlight.write('GET /operations/TodoById?id=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n')
  t.ok(await eventually(async () => (serverSide.get(inFlight.localPort!)?.bytesRead ?? 0) > 0, 5000, 10), 'the server has read the start of the request')

  const started = Date.now()
  const closed = app.close()
  t.ok(await endedByServer(silent, 2000), 'the connection that never sent a byte is closed at once')
  t.ok(await endedByServer(used, 2000), 'the idle keep-alive connection is closed at once')
  let answer = ''
  inFlight.on('data', (c: Buffer) => (answer += c.toString('latin1')))
  inFlight.write('\r\n')
  await closed
  t.ok(Date.now() - started < 3000, `close() took ${Date.now() - started} ms (it waited for the silent connection until the headers timeout, 30 s)`)
  t.ok(await endedByServer(inFlight, 5000), 'the connection of the request in flight ends after its answer')
  t.match(answer, /^HTTP\/1\.1 (200|503) [^]*\r\n\r\n\{/, 'the request that had started got a whole answer (fastify answers 503 while closing), not a reset')
  t.ok(await endedByServer(await open(port).catch(() => inFlight), 500), 'no new connection is served once closed')
})

t.test('close() ends WebSockets with 1001 Going Away, so graphql-ws clients reconnect elsewhere', async (t) => {
  const { app, url } = await startDemo(t, { listen: true })
  const opened = await upgrade(url)
  if (!opened.open) throw new Error(`the upgrade was refused: ${opened.status}`)
  const socket = opened.socket
  t.teardown(() => socket.terminate())
  const first = await run(socket, 'subscription { messageCreated { id } }')
  t.ok(first.data?.['messageCreated'], 'a subscription is running')
  const closedWith = new Promise<[number, string]>((resolve) => socket.once('close', (code, reason) => resolve([code, reason.toString()])))
  await app.close()
  t.same(await closedWith, [1001, 'The server is shutting down'], 'RFC 6455 §7.4.1: the endpoint is going away')
})

t.test('server.maxConnections is validated: 0 or a fraction fails at startup', async (t) => {
  for (const value of [0, 2.5]) {
    await t.rejects(startDemo(t, { override: { server: { maxConnections: value } } }), { code: 'TRB_ERR_CONFIG_INVALID', message: /maxConnections/ }, String(value))
  }
})

t.test('the default is 10000, or 80 % of the open-file limit when that is lower', async (t) => {
  const script = "import('./gateway/config/index.ts').then((m) => console.log(m.defaultMaxConnections(), m.resolveConfig({ datasources: [m.database({ namespace: 'db', url: 'sqlite::memory:' })] }).server.maxConnections))"
  const run = (limit: number) => spawnSync('bash', ['-c', `ulimit -n ${limit} && exec "${process.execPath}" --import tsx -e "${script}"`], { encoding: 'utf8', cwd: fileURLToPath(new URL('..', import.meta.url)) })
  const low = run(500)
  t.equal(low.stdout.trim(), '400 400', `ulimit -n 500: ${low.stderr.slice(0, 300)}`)
  const high = run(20000)
  t.equal(high.stdout.trim(), '10000 10000', `ulimit -n 20000: ${high.stderr.slice(0, 300)}`)
})
