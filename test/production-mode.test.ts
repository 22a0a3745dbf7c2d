/**
 * Production mode (`mode: 'production'`): `/graphql` runs only persisted operations (by
 * `extensions.persistedQuery.sha256Hash`, `documentId`, or the exact stored text) and refuses others
 * with `TRB_ERR_PERSISTED_ONLY`; introspection and the playground are off; errors are masked (a code
 * and an id; no SQL, no stack). Also checks the WebSocket path.
 *
 * Subtests marked `todo` document bugs outside this test's files (gateway/http/app.ts and
 * graphql-endpoint.ts); remove the `todo` once the fixes in the issue-4 report are applied.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { print, parse, getIntrospectionQuery } from 'graphql'
import { createClient } from 'graphql-ws'
import WebSocket from 'ws'
import { pino } from 'pino'
import { resolveConfig, schema } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { startDemo } from './helpers/demo.js'

const dir = fileURLToPath(new URL('./fixtures/operations-demo', import.meta.url))
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')
const todoByIdText = readFileSync(join(dir, 'TodoById.graphql'), 'utf8')
const SQL = 'SELECT secret_column FROM nowhere_table'
const leaks = (body: string) => /secret_column|nowhere_table|SELECT|SQLITE|\n\s+at /i.test(body)

/** Runs one operation over graphql-transport-ws and collects what comes back. */
async function overSocket(url: string, query: string, max = 1): Promise<{ next: unknown[]; error?: unknown }> {
  const client = createClient({ url: url.replace(/^http/, 'ws') + '/graphql', webSocketImpl: WebSocket, retryAttempts: 0, lazy: true })
  const out: { next: unknown[]; error?: unknown } = { next: [] }
  await new Promise<void>((resolve) => {
    const stop = client.subscribe({ query }, {
      next: (value) => {
        out.next.push(value)
        if (out.next.length >= max) {
          stop()
          resolve()
        }
      },
      error: (err) => {
        out.error = err
        resolve()
      },
      complete: () => resolve(),
    })
  })
  await client.dispose()
  return out
}

t.test('production mode on the demo', async (t) => {
  const { app, url, config } = await startDemo(t, { listen: true, override: { mode: 'production', operations: { dir } } })
  t.equal(config.mode, 'production')
  t.equal(config.graphql.introspection, false)
  t.equal(config.graphql.playground, false)
  const post = async (payload: Record<string, unknown>) => {
    const res = await app.inject({ method: 'POST', url: '/graphql', payload })
    return { status: res.statusCode, body: res.json(), text: res.body }
  }

  t.test('a persisted operation runs: exact text, sha256 of the file, sha256 of the printed document, documentId', async (t) => {
    const byText = await post({ query: todoByIdText, variables: { id: 2 } })
    t.equal(byText.status, 200)
    t.equal(byText.body.data.todo_findUniqueTodo.id, 2)
    const byHash = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: sha256(todoByIdText) } }, variables: { id: 3 } })
    t.equal(byHash.status, 200, byHash.text)
    t.equal(byHash.body.data.todo_findUniqueTodo.id, 3)
    const byPrinted = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: sha256(print(parse(todoByIdText))) } } })
    t.equal(byPrinted.body.data.todo_findUniqueTodo.id, 1)
    const byDocumentId = await post({ documentId: 'TodoById', variables: { id: 4 } })
    t.equal(byDocumentId.body.data.todo_findUniqueTodo.id, 4)
    const get = await app.inject({ method: 'GET', url: `/graphql?extensions=${encodeURIComponent(JSON.stringify({ persistedQuery: { version: 1, sha256Hash: sha256(todoByIdText) } }))}` })
    t.equal(get.statusCode, 200)
    t.equal(get.json().data.todo_findUniqueTodo.id, 1)
    const unknownHash = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: sha256('nope') } } })
    t.equal(unknownHash.status, 400)
    t.equal(unknownHash.body.errors[0].extensions.code, 'TRB_ERR_PERSISTED_NOT_FOUND')
    t.equal(unknownHash.body.errors[0].message, 'PersistedQueryNotFound', 'the message Apollo clients look for')
  })

  t.test('any other document is refused with TRB_ERR_PERSISTED_ONLY', async (t) => {
    for (const query of ['{ todo_findManyTodo { id title } }', todoByIdText.replace('title', 'title\n    completed')]) {
      const res = await post({ query })
      t.equal(res.status, 400)
      t.equal(res.body.errors[0].extensions.code, 'TRB_ERR_PERSISTED_ONLY')
      t.notOk(res.body.data)
    }
    const get = await app.inject({ method: 'GET', url: `/graphql?query=${encodeURIComponent('{ todo_findManyTodo { id } }')}` })
    t.equal(get.statusCode, 400)
    t.equal(get.json().errors[0].extensions.code, 'TRB_ERR_PERSISTED_ONLY')
  })

  t.test('a made-up hash next to an arbitrary query does not bypass the allowlist', async (t) => {
    const res = await post({ query: '{ todo_findManyTodo { id title } }', extensions: { persistedQuery: { version: 1, sha256Hash: 'deadbeef' } } })
    t.equal(res.status, 400)
    t.equal(res.body.errors?.[0]?.extensions?.code, 'TRB_ERR_PERSISTED_ONLY')
  })

  t.test('internal operations are not reachable over /graphql', async (t) => {
    const res = await post({ documentId: 'internal/Secret' })
    t.equal(res.status, 400)
    t.notOk(res.body.data)
  })

  t.test('introspection and the playground are off', async (t) => {
    const res = await post({ query: getIntrospectionQuery() })
    t.equal(res.status, 400)
    t.notOk(res.body.data)
    const playground = await app.inject({ method: 'GET', url: '/graphql', headers: { accept: 'text/html' } })
    t.equal(playground.statusCode, 404)
    t.notMatch(playground.body, /<html/i)
  })

  t.test('a database error on /operations is masked: code, no SQL, no stack', async (t) => {
    const res = await app.inject({ method: 'GET', url: `/operations/RawQuery?sql=${encodeURIComponent(SQL)}` })
    t.equal(res.statusCode, 400)
    t.equal(res.headers['cache-control'], 'no-store')
    const body = res.json()
    t.equal(body.errors[0].extensions.code, 'TRB_ERR_DB_RAW')
    t.notOk(body.errors[0].extensions.debug)
    t.notOk(leaks(res.body), `no SQL text or stack: ${res.body}`)
  })

  t.test('a database error on /graphql (persisted) leaks no SQL', async (t) => {
    const res = await post({ documentId: 'RawQuery', variables: { sql: SQL } })
    t.ok(res.body.errors?.length)
    t.notOk(leaks(res.text), `no SQL text or stack: ${res.text}`)
  })

  t.test('a database error on /graphql keeps its code', async (t) => {
    const res = await post({ documentId: 'RawQuery', variables: { sql: SQL } })
    t.equal(res.body.errors?.[0]?.extensions?.code, 'TRB_ERR_DB_RAW')
  })

  t.test('WebSocket: a persisted subscription runs', async (t) => {
    const text = readFileSync(join(dir, 'MessageCreated.graphql'), 'utf8')
    const out = await overSocket(url, text, 1)
    t.notOk(out.error)
    t.ok((out.next[0] as { data?: { messageCreated?: { id: string } } }).data?.messageCreated?.id)
  })

  t.test('WebSocket: introspection is refused', async (t) => {
    const out = await overSocket(url, '{ __schema { queryType { name } } }')
    t.ok(out.error, 'an error message for the operation')
    t.same(out.next, [])
  })

  t.test('WebSocket: a non-persisted document is refused', async (t) => {
    const out = await overSocket(url, '{ todo_findManyTodo { id title } }')
    t.same(out.next, [], 'no data')
    t.match(JSON.stringify(out.error ?? null), /TRB_ERR_PERSISTED_ONLY/)
  })
})

t.test('production masks unexpected errors with a code and an id', async (t) => {
  const typeDefs = 'type Query { boom: String, hello: String }'
  const resolvers = {
    Query: {
      boom: () => {
        throw new Error(`${SQL} failed: no such table nowhere_table`)
      },
      hello: () => 'world',
    },
  }
  const generatedDir = mkdtempSync(join(tmpdir(), 'tributary-prod-'))
  const config = resolveConfig({
    mode: 'production',
    datasources: [schema({ typeDefs, resolvers })],
    operations: { dir: fileURLToPath(new URL('./fixtures/operations-boom', import.meta.url)) },
    generatedDir,
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  const app = await buildApp(gateway, { logger: false })
  t.teardown(async () => {
    await app.close()
    await gateway.close()
    rmSync(generatedDir, { recursive: true, force: true })
  })

  const res = await app.inject({ method: 'GET', url: '/operations/Boom' })
  t.equal(res.statusCode, 500)
  t.equal(res.headers['cache-control'], 'no-store')
  t.notOk(res.headers.etag)
  const error = res.json().errors[0]
  t.equal(error.extensions.code, 'TRB_ERR_INTERNAL')
  t.match(error.extensions.errorId, /^[0-9a-f-]{36}$/)
  t.equal(error.message, `Internal error (id ${error.extensions.errorId})`)
  t.notOk(error.extensions.debug, 'no debug text in production')
  t.notOk(leaks(res.body), res.body)

  const ok = await app.inject({ method: 'GET', url: '/operations/Hello' })
  t.same(ok.json(), { hello: 'world' })

  t.test('the same error through /graphql is masked', async (t) => {
    const viaGraphql = await app.inject({ method: 'POST', url: '/graphql', payload: { documentId: 'Boom' } })
    t.notOk(leaks(viaGraphql.body), viaGraphql.body)
    t.equal(viaGraphql.json().errors?.[0]?.extensions?.code, 'TRB_ERR_INTERNAL')
  })
})
