/**
 * Test helper: checks every `<Name>.expected.json` of an operations folder against a running app:
 * `{ "request": "GET /operations/...", "body"?: {...}, "status": 200, "response": {...} }`.
 * `UPDATE_EXPECTED=1` rewrites them after a deliberate change (review the diff). A value written
 * `"<date-time>"` matches any ISO 8601 UTC date-time (values the database sets, such as `createdAt`).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import type { FastifyInstance } from 'fastify'

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

/** Runs the requests of every expected-response file in `dir`, in name order, and compares. */
export async function checkExpectedResponses(t: Test, app: FastifyInstance, dir: string) {
  const files = readdirSync(dir).filter((f) => f.endsWith('.expected.json')).sort()
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

