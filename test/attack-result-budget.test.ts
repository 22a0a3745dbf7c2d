/**
 * Attack: a document whose database results are far larger than `server.maxResponseBytes` (issue 7
 * items 5 and 9). The request's result budget stops it where the text is produced: a SQLite worker
 * process drops the oversized result instead of sending it into the gateway, and the field fails
 * with 400-class `TRB_ERR_GRAPHQL_LIMIT` at its path; smaller requests on the same gateway still work.
 * Real HTTP against the Chinook SQLite database.
 */
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { database, resolveConfig } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { chinookSqlite } from './helpers/chinook.js'

interface Body {
  data?: Record<string, unknown> | null
  errors?: { message: string; path?: (string | number)[]; extensions: { code: string } }[]
}

t.test('the result budget of one request', async (t) => {
  const db = await chinookSqlite()
  t.teardown(() => db.cleanup())
  const dir = mkdtempSync(join(tmpdir(), 'trb-budget-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = resolveConfig({
    datasources: [database({ namespace: 'chinook', url: db.url })],
    operations: { dir },
    generatedDir: join(dir, 'generated'),
    server: { maxResponseBytes: 50_000 },
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }), cwd: dir })
  t.teardown(() => gateway.close())
  const app = await buildApp(gateway, { logger: false })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const a = app.server.address()
  const url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}/graphql`
  const post = async (query: string) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' }, body: JSON.stringify({ query }) })
    return { status: res.status, body: (await res.json()) as Body }
  }

  t.test('one list larger than the budget fails at its path before it reaches the gateway', async (t) => {
    // 1,000 tracks with name and composer: about 90,000 characters of JSON text.
    const res = await post('{ chinook_findManyTrack(orderBy: [{ trackId: asc }]) { name composer album { title } } }')
    t.equal(res.body.errors?.[0]?.extensions.code, 'TRB_ERR_GRAPHQL_LIMIT')
    t.same(res.body.errors?.[0]?.path, ['chinook_findManyTrack'], JSON.stringify(res))
    t.match(res.body.errors?.[0]?.message, /maxResponseBytes/)
    t.notMatch(JSON.stringify(res.body), /TRB_ERR_INTERNAL|SELECT|json_/i, 'no internal error, no SQL text')
  })

  t.test('aliases share one budget: each fits, together they do not', async (t) => {
    const one = '(take: 300, orderBy: [{ trackId: asc }]) { name composer }'
    const single = await post(`{ a: chinook_findManyTrack${one} }`)
    t.equal(single.status, 200, 'one alias fits')
    t.equal((single.body.data?.a as unknown[]).length, 300)
    const many = await post(`{ ${Array.from({ length: 6 }, (_, i) => `a${i}: chinook_findManyTrack${one}`).join(' ')} }`)
    const codes = (many.body.errors ?? []).map((e) => e.extensions.code)
    t.ok(codes.length > 0 && codes.every((c) => c === 'TRB_ERR_GRAPHQL_LIMIT'), `over the budget: ${codes.join(', ')}`)
  })

  t.test('a normal request on the same gateway still works', async (t) => {
    const res = await post('{ chinook_findManyArtist(take: 2, orderBy: [{ artistId: asc }]) { name } }')
    t.same(res.body, { data: { chinook_findManyArtist: [{ name: 'AC/DC' }, { name: 'Accept' }] } })
  })
})
