#!/usr/bin/env node
/**
 * The floor of the `cache` scenario (issue 30): a bare `node:http` server, no framework, answering every
 * request with one fixed response — the status, headers and body a cache hit of the gateway sends,
 * captured by bench/cache-scenario.mjs. What it costs per request is what Node's HTTP server and the
 * kernel's socket work cost for those bytes: no server written in Node answers them for less, so its
 * ratio to the hand-written route bounds what a cache hit can reach on the machine.
 *
 *   node bench/floor-server.mjs --port <n> --response <json file>
 *
 * The response file: `{ "status": 200, "headers": [name, value, …], "body": "<text>" }` (headers as
 * the flat list `writeHead` takes; Node adds `Date`, `Connection` and `Keep-Alive` as it does for the
 * gateway). `keepAliveTimeout` is the gateway's (72 s, fastify's default). Prints
 * `floor listening http://127.0.0.1:<port>` once it listens.
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'

const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? undefined : process.argv[i + 1]
}
const port = Number(arg('port'))
const file = arg('response')
if (!Number.isInteger(port) || port <= 0 || !file) {
  console.error('usage: node bench/floor-server.mjs --port <n> --response <json file>')
  process.exit(2)
}
const { status, headers, body } = JSON.parse(readFileSync(file, 'utf8'))
const bytes = Buffer.from(body)
const server = createServer((_req, res) => {
  res.writeHead(status, headers)
  res.end(bytes)
})
server.keepAliveTimeout = 72_000
server.listen(port, '127.0.0.1', () => console.log(`floor listening http://127.0.0.1:${port}`))
