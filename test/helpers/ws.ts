/** Test helper: a raw `ws` client speaking just enough graphql-transport-ws to run one operation. */
import WebSocket from 'ws'

/** An opened socket, or the HTTP answer that refused the upgrade. */
export type Upgrade =
  | { open: true; socket: WebSocket }
  | { open: false; status: number; body: { errors?: { message: string; extensions: { code: string } }[] } }

/** Opens a graphql-transport-ws socket with the given `Origin` (none when undefined) and `Host`. */
export function upgrade(url: string, headers: { origin?: string; host?: string } = {}): Promise<Upgrade> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws', {
      ...(headers.origin !== undefined ? { origin: headers.origin } : {}),
      ...(headers.host !== undefined ? { headers: { host: headers.host } } : {}),
    })
    socket.once('open', () => resolve({ open: true, socket }))
    socket.once('unexpected-response', (req, res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => (req.destroy(), resolve({ open: false, status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') })))
    })
    socket.once('error', (err) => reject(err))
  })
}

/** Runs one operation on an open socket (graphql-transport-ws) and returns its first result; `initPayload` is the `connection_init` payload (none when undefined). */
export function run(socket: WebSocket, query: string, variables?: Record<string, unknown>, initPayload?: Record<string, unknown>): Promise<{ data?: Record<string, unknown>; errors?: unknown[] }> {
  return new Promise((resolve, reject) => {
    socket.on('message', (raw: Buffer) => {
      const msg = JSON.parse(raw.toString()) as { type: string; payload?: unknown }
      if (msg.type === 'connection_ack') socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query, variables } }))
      else if (msg.type === 'next') resolve(msg.payload as { data?: Record<string, unknown> })
      else if (msg.type === 'error') resolve({ errors: msg.payload as unknown[] })
    })
    socket.once('close', (code) => reject(new Error(`closed ${code}`)))
    socket.send(JSON.stringify(initPayload === undefined ? { type: 'connection_init' } : { type: 'connection_init', payload: initPayload }))
  })
}

