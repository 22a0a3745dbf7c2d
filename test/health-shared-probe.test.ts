/**
 * `/health` and `/health/ready` share each source's probe: a flood of health requests (a load
 * balancer with many checkers, or a client hammering the endpoint) makes at most one probe per source
 * at a time, so it cannot multiply into database load. Real HTTP, the shipped Chinook SQLite database;
 * the source's real `health()` is wrapped to count its calls and to last 2 s, so that the requests
 * overlap (with 150 ms, a loaded machine sent the 50 over several probes' time).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { database, resolveConfig } from '../gateway/config/index.js'
import { serveGateway } from './helpers/serve.js'
import { chinookSqlite } from './helpers/chinook.js'

t.test('50 concurrent health requests make one probe of the database, and each gets its answer', async (t) => {
  const db = await chinookSqlite()
  t.teardown(db.cleanup)
  const dir = mkdtempSync(join(tmpdir(), 'tributary-health-shared-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = resolveConfig({
    datasources: [database({ url: db.url, namespace: 'chinook' })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    server: { healthTimeoutMs: 10_000 },
  })
  const { url, gateway } = await serveGateway(t, config)
  const subschema = gateway.sources[0]!.subschema
  const real = subschema.health.bind(subschema)
  let probes = 0
  subschema.health = async () => {
    probes++
    await new Promise((r) => setTimeout(r, 2000))
    return real()
  }

  for (const path of ['/health', '/health/ready']) {
    probes = 0
    const answers = await Promise.all(Array.from({ length: 50 }, () => fetch(`${url}${path}`).then(async (r) => ({ status: r.status, body: (await r.json()) as { sources: Record<string, { status: string }> } }))))
    t.equal(probes, 1, `${path}: one probe for 50 requests`)
    t.same(new Set(answers.map((a) => a.status)), new Set([200]), `${path}: every request answered 200`)
    t.ok(answers.every((a) => a.body.sources['chinook']?.status === 'up'), `${path}: every answer reports the source up`)
    // Once the probe has settled, the next request probes again (shared while in flight, not cached).
    await fetch(`${url}${path}`).then((r) => r.arrayBuffer())
    t.equal(probes, 2, `${path}: a later request makes a new probe`)
  }
})
