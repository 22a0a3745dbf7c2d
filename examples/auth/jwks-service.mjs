/**
 * The example's identity provider stand-in: serves the JSON Web Key Set of `keys.mjs` at
 * `GET /.well-known/jwks.json` on 127.0.0.1:`JWKS_PORT` (4002). Started by the gateway as a side
 * service (examples/auth/config.ts `services`).
 */
import { createServer } from 'node:http'
import { loadKey } from './keys.mjs'

const port = Number(process.env.JWKS_PORT || 4002)
const { publicJwk } = await loadKey()
const body = JSON.stringify({ keys: [publicJwk] })
createServer((req, res) => {
  if (req.url !== '/.well-known/jwks.json') return res.writeHead(404).end()
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' }).end(body)
}).listen(port, '127.0.0.1', () => console.log(`JWKS http://127.0.0.1:${port}/.well-known/jwks.json`))
