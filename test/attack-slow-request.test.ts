/**
 * Attack: slow requests (issue 7 item 6). A real TCP client sends the headers of a POST and then
 * trickles its body one byte at a time, which resets every idle timer; `server.requestTimeoutMs`
 * must still end the request (Node answers 408 and closes) within about the timeout, not 30 s later.
 */
import t from 'tap'
import { connect } from 'node:net'
import { startDemo } from './helpers/demo.js'

/** Opens a raw connection, sends `head`, then one byte of body every `everyMs`; resolves when the server closes it. */
function trickle(port: number, head: string, everyMs: number, byte = ' '): Promise<{ ms: number; response: string }> {
  return new Promise((resolve, reject) => {
    const start = Date.now()
    const socket = connect(port, '127.0.0.1')
    let response = ''
    let timer: NodeJS.Timeout | undefined
    socket.on('connect', () => {
      socket.write(head)
      timer = setInterval(() => socket.write(byte), everyMs)
    })
    socket.on('data', (d) => (response += d.toString()))
    socket.on('error', () => undefined)
    socket.on('close', () => {
      clearInterval(timer)
      resolve({ ms: Date.now() - start, response })
    })
    setTimeout(() => {
      clearInterval(timer)
      socket.destroy()
      reject(new Error('the connection was still open after 10 s'))
    }, 10_000).unref()
  })
}

t.test('a trickled body is cut off by requestTimeoutMs', async (t) => {
  const { app, url } = await startDemo(t, { listen: true, override: { server: { requestTimeoutMs: 1000 } } })
  const port = Number(new URL(url).port)
  const body = '{"query":"{ todo_findManyTodo(take: 1) { id } }"}'
  const head = `POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 100000}\r\n\r\n`
  const { ms, response } = await trickle(port, head, 100)
  t.ok(ms < 3500, `closed after ${ms} ms (timeout 1000 ms, checked every second)`)
  t.match(response, /^HTTP\/1\.1 408/, 'answered 408 Request Timeout')

  const slowHeaders = await trickle(port, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', 100, 'a')
  t.ok(slowHeaders.ms >= 900 && slowHeaders.ms < 3500, `trickled headers closed after ${slowHeaders.ms} ms`)
  t.match(slowHeaders.response, /^HTTP\/1\.1 408/)

  const res = await app.inject({ method: 'POST', url: '/graphql', payload: JSON.parse(body) })
  t.same(res.json(), { data: { todo_findManyTodo: [{ id: 1 }] } }, 'a normal request still works')
  const real = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  t.equal(real.status, 200, 'and over HTTP')
})
