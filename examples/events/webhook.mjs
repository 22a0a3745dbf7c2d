/**
 * The example's local webhook service (examples/events/README.md "Event trigger to a local webhook
 * service"): an HTTP server on 127.0.0.1:`WEBHOOK_PORT` (4010) that answers every POST with 200 and
 * prints each delivery on stdout as one JSON line, `{"idempotencyKey":"…","body":{…}}` (the
 * `Idempotency-Key` header and the JSON body the gateway's event trigger sent). Its address goes to
 * stderr once it listens. Run it from the repository root:
 *   node examples/events/webhook.mjs
 */
import { createServer } from 'node:http'

const port = Number(process.env.WEBHOOK_PORT || 4010)
/** Largest body read, in bytes (the gateway's own `eventsDelivery.maxPayloadBytes` default). */
const MAX_BODY = 1024 * 1024

createServer((req, res) => {
  if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end()
  const chunks = []
  let size = 0
  req.on('data', (c) => {
    size += c.length
    if (size > MAX_BODY) return void req.destroy()
    chunks.push(c)
  })
  req.on('end', () => {
    let body
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    } catch {
      return void res.writeHead(400).end('not JSON')
    }
    process.stdout.write(JSON.stringify({ idempotencyKey: req.headers['idempotency-key'] ?? null, body }) + '\n')
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
  })
}).listen(port, '127.0.0.1', () => console.error(`webhook listening on http://127.0.0.1:${port}/orders`))
