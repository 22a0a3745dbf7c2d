/**
 * docs/architecture.md §5 on /operations/*: an upstream that fails gives 502 with the partial data and the
 * upstream's status; one that times out gives 504. Real upstream HTTP server on 127.0.0.1.
 */
import t from 'tap'
import Fastify from 'fastify'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { pino } from 'pino'
import { resolveConfig } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'

t.test('upstream failures on /operations', async (t) => {
  const upstream = Fastify()
  upstream.get('/ok', async () => ({ value: 'fine' }))
  upstream.get('/broken', async (_req, reply) => reply.code(503).send({ message: 'maintenance' }))
  upstream.get('/slow', async () => {
    await sleep(2500)
    return { value: 'late' }
  })
  await upstream.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => upstream.close())
  const base = `http://127.0.0.1:${(upstream.server.address() as { port: number }).port}`

  const dir = mkdtempSync(join(tmpdir(), 'tributary-upstream-'))
  const response = { '200': { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Value' } } } } }
  writeFileSync(
    join(dir, 'openapi.json'),
    JSON.stringify({
      openapi: '3.0.3',
      info: { title: 'up', version: '1' },
      servers: [{ url: base }],
      paths: {
        '/ok': { get: { operationId: 'getOk', responses: response } },
        '/broken': { get: { operationId: 'getBroken', responses: response } },
        '/slow': { get: { operationId: 'getSlow', responses: response } },
      },
      components: { schemas: { Value: { type: 'object', required: ['value'], properties: { value: { type: 'string' } } } } },
    }),
  )
  mkdirSync(join(dir, 'ops'))
  writeFileSync(join(dir, 'ops/Partial.graphql'), 'query Partial { up_getOk { value } up_getBroken { value } }\n')
  writeFileSync(join(dir, 'ops/Slow.graphql'), 'query Slow { up_getSlow { value } }\n')
  const config = resolveConfig({
    datasources: [{ kind: 'rest', namespace: 'up', openapi: join(dir, 'openapi.json'), timeoutMs: 300 }],
    operations: { dir: join(dir, 'ops') },
    generatedDir: join(dir, 'generated'),
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  const app = await buildApp(gateway, { logger: false })
  t.teardown(async () => {
    await app.close()
    await gateway.close()
  })

  const partial = await app.inject({ method: 'GET', url: '/operations/Partial' })
  t.equal(partial.statusCode, 502)
  t.equal(partial.headers['cache-control'], 'no-store')
  const body = partial.json()
  t.same(body.data, { up_getOk: { value: 'fine' }, up_getBroken: null }, 'partial data is included')
  t.equal(body.errors[0].extensions.code, 'TRB_ERR_UPSTREAM')
  t.equal(body.errors[0].extensions.http.status, 503, 'the upstream status is passed through')
  t.same(body.errors[0].path, ['up_getBroken'])

  const slow = await app.inject({ method: 'GET', url: '/operations/Slow' })
  t.equal(slow.statusCode, 504)
  t.equal(slow.json().errors[0].extensions.code, 'TRB_ERR_UPSTREAM_TIMEOUT')
})
