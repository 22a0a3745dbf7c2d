/**
 * The wundergraph-style example's REST API (examples/wundergraph-style/README.md): play counts of
 * Chinook albums. A fastify app whose OpenAPI 3 document is generated from its route schemas by
 * @fastify/swagger and served at `GET /openapi.json`.
 *
 * Routes:
 * - `GET /albums/{albumId}/stats` (`getAlbumStats`) → `{ albumId, plays, via }`: `plays` is made up
 *   from the id (stable answers for the README), `via` echoes the request's `x-example-via` header
 *   (set by the gateway's `onOriginRequest` hook; `null` when absent);
 * - `GET /openapi.json` → the OpenAPI 3.0 document, `servers[0].url` the address it listens on.
 *
 * As a script it listens on `CHARTS_PORT` (default 4013) at 127.0.0.1.
 */
import Fastify, { type FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import { listenIfMain } from '../../federation/services/listen.js'

/** What the API saw of one request: for tests and the README's "what the service saw". */
export interface ChartsRequest {
  url: string
  /** The `x-example-via` header, or undefined. */
  via: string | undefined
}

/**
 * Builds the API. It does not listen: call `app.listen()` or use `app.inject()`.
 * @param options.onRequest called with each stats request (to count upstream calls in tests).
 */
export async function createChartsService(options: { onRequest?: (r: ChartsRequest) => void } = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  await app.register(swagger, {
    openapi: { openapi: '3.0.3', info: { title: 'Charts', description: 'Play counts of Chinook albums (Tributary wundergraph-style example).', version: '1.0.0' } },
  })
  app.get<{ Params: { albumId: number } }>('/albums/:albumId/stats', {
    schema: {
      operationId: 'getAlbumStats',
      summary: 'Play counts of one album.',
      params: { type: 'object', required: ['albumId'], properties: { albumId: { type: 'integer', minimum: 1 } } },
      response: {
        200: {
          description: 'The album\'s counts.',
          type: 'object',
          required: ['albumId', 'plays'],
          properties: {
            albumId: { type: 'integer' },
            plays: { type: 'integer', description: 'Plays this month.' },
            via: { type: 'string', nullable: true, description: 'The x-example-via request header, echoed.' },
          },
        },
      },
    },
  }, async (req) => {
    const via = typeof req.headers['x-example-via'] === 'string' ? req.headers['x-example-via'] : undefined
    options.onRequest?.({ url: req.url, via })
    const id = req.params.albumId
    return { albumId: id, plays: (id * 37) % 100 + 100, via: via ?? null }
  })
  app.get('/openapi.json', { schema: { hide: true } }, async () => {
    const doc = app.swagger() as unknown as Record<string, unknown>
    const address = app.server.address()
    const url = address && typeof address === 'object' ? `http://127.0.0.1:${address.port}` : 'http://127.0.0.1:4013'
    return { ...doc, servers: [{ url }] }
  })
  return app
}

await listenIfMain(import.meta.url, createChartsService, 'CHARTS_PORT', 4013, 'charts API')
