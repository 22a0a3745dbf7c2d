/**
 * Each stored operation of the demo and of the Chinook example has its expected response beside it:
 * `<Name>.expected.json` = `{ "request": "GET /operations/...", "body"?: {...}, "status": 200, "response": {...} }`.
 * Run with `UPDATE_EXPECTED=1` to rewrite them after a deliberate change (and review the diff).
 * A value written `"<date-time>"` in an expected response matches any ISO 8601 UTC date-time (for
 * values the database sets, such as `createdAt` of a new row).
 */
import t, { type Test } from 'tap'
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import type { FastifyInstance } from 'fastify'
import { resolveConfig, type TributaryConfigInput } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { startDemo } from './helpers/demo.js'

const root = fileURLToPath(new URL('..', import.meta.url))

interface Expected {
  request: string
  body?: unknown
  status: number
  response: unknown
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** Replaces the date-times of `actual` that `expected` writes as `"<date-time>"`. */
function normalise(actual: unknown, expected: unknown): unknown {
  if (expected === '<date-time>' && typeof actual === 'string' && ISO.test(actual)) return '<date-time>'
  if (Array.isArray(actual) && Array.isArray(expected)) return actual.map((v, i) => normalise(v, expected[i]))
  if (actual && expected && typeof actual === 'object' && typeof expected === 'object') {
    return Object.fromEntries(Object.entries(actual).map(([k, v]) => [k, normalise(v, (expected as Record<string, unknown>)[k])]))
  }
  return actual
}

async function check(t: Test, app: FastifyInstance, dir: string) {
  const files = readdirSync(dir).filter((f) => f.endsWith('.expected.json'))
  t.ok(files.length > 0, `${dir} has expected responses`)
  for (const file of files) {
    const path = join(dir, file)
    const expected = JSON.parse(readFileSync(path, 'utf8')) as Expected
    const [method, url] = expected.request.split(' ')
    const res = await app.inject({ method: method as 'GET', url, ...(expected.body !== undefined ? { payload: expected.body as object } : {}) })
    if (process.env.UPDATE_EXPECTED) {
      writeFileSync(path, JSON.stringify({ ...expected, status: res.statusCode, response: normalise(res.json(), expected.response) }, null, 2) + '\n')
      continue
    }
    t.equal(res.statusCode, expected.status, `${file}: status`)
    t.same(normalise(res.json(), expected.response), expected.response, `${file}: response`)
  }
  for (const op of readdirSync(dir).filter((f) => f.endsWith('.graphql'))) {
    const base = op.replace(/\.graphql$/, '')
    t.ok(existsSync(join(dir, `${base}.expected.json`)) || base === 'MessageCreated', `${op} has an expected response`)
  }
}

t.test('demo operations', async (t) => {
  const { app } = await startDemo(t)
  await check(t, app, join(root, 'operations'))
})

t.test('Chinook example operations', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-chinook-'))
  copyFileSync(join(root, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
  process.env.CHINOOK_DATABASE_URL = `sqlite:${join(dir, 'chinook.sqlite')}`
  const input = (await import('../examples/chinook/config.js')).default as TributaryConfigInput
  const config = resolveConfig({ ...input, operations: { dir: join(root, 'examples/chinook/operations') }, generatedDir: join(dir, 'generated') })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  const app = await buildApp(gateway, { logger: false })
  t.teardown(async () => {
    await app.close()
    await gateway.close()
  })
  await check(t, app, join(root, 'examples/chinook/operations'))
})
