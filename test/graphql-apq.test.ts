/**
 * Automatic persisted queries (Apollo's protocol) over real HTTP against the demo: the hash alone
 * first, the hash with its query after `PersistedQueryNotFound`, then one round trip per call.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { startDemo } from './helpers/demo.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any
/** A response's JSON body. */
const json = async (res: Response): Promise<Json> => (await res.json()) as Json
const sha = (text: string) => createHash('sha256').update(text).digest('hex')

/** Apollo Client's persisted-queries link, as specified: counts the HTTP requests of one call. */
function apqClient(url: string, method: 'GET' | 'POST') {
  let requests = 0
  async function send(query: string | undefined, hash: string, variables?: Record<string, unknown>) {
    requests++
    const extensions = { persistedQuery: { version: 1, sha256Hash: hash } }
    if (method === 'GET') {
      const q = new URLSearchParams({ extensions: JSON.stringify(extensions), ...(variables ? { variables: JSON.stringify(variables) } : {}), ...(query ? { query } : {}) })
      return fetch(`${url}/graphql?${q}`, { headers: { accept: 'application/json' } })
    }
    return fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ extensions, variables, ...(query ? { query } : {}) }) })
  }
  return {
    get requests() {
      return requests
    },
    async call(query: string, variables?: Record<string, unknown>) {
      const hash = sha(query)
      let res = await send(undefined, hash, variables)
      let body = await json(res)
      if (body.errors?.[0]?.message === 'PersistedQueryNotFound') {
        res = await send(query, hash, variables)
        body = await json(res)
      }
      return { status: res.status, body }
    },
  }
}

t.test('APQ registers in development: two requests the first time, then one (POST and GET)', async (t) => {
  const { url } = await startDemo(t, { listen: true })
  for (const method of ['POST', 'GET'] as const) {
    const client = apqClient(url, method)
    const query = `query Apq${method}($id: Int!) { todo_findUniqueTodo(where: {id: $id}) { id title } }`
    const first = await client.call(query, { id: 1 })
    t.equal(first.status, 200)
    t.same(first.body.data, { todo_findUniqueTodo: { id: 1, title: 'Read docs/architecture.md' } })
    t.equal(client.requests, 2, `${method}: the first call registers`)
    for (let i = 0; i < 3; i++) {
      const again = await client.call(query, { id: 2 })
      t.equal(again.body.data.todo_findUniqueTodo.id, 2)
    }
    t.equal(client.requests, 5, `${method}: one request per later call`)
  }
})

t.test('a hash that does not match its query, an unknown hash, an invalid document', async (t) => {
  const { url } = await startDemo(t, { listen: true })
  const post = (body: unknown) => fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const query = '{ todo_findUniqueTodo(where: {id: 1}) { id } }'
  const mismatch = await post({ query, extensions: { persistedQuery: { version: 1, sha256Hash: sha('{ other }') } } })
  t.equal(mismatch.status, 400)
  const m = await json(mismatch)
  t.equal(m.errors[0].extensions.code, 'TRB_ERR_GRAPHQL_REQUEST')
  t.equal(m.errors[0].message, 'provided sha does not match query')
  const notRegistered = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: sha('{ other }') } } })
  t.equal(notRegistered.status, 400, 'a mismatched pair registers nothing')
  t.equal((await json(notRegistered)).errors[0].extensions.code, 'TRB_ERR_PERSISTED_NOT_FOUND')

  const unknown = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } } })
  t.equal(unknown.status, 400)
  const u = await json(unknown)
  t.equal(u.errors[0].message, 'PersistedQueryNotFound')
  t.equal(u.errors[0].extensions.code, 'TRB_ERR_PERSISTED_NOT_FOUND')

  const invalid = '{ nope }'
  const bad = await post({ query: invalid, extensions: { persistedQuery: { version: 1, sha256Hash: sha(invalid) } } })
  t.match((await json(bad)).errors[0].message, /Cannot query field "nope"/)
  const afterBad = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: sha(invalid) } } })
  t.equal((await json(afterBad)).errors[0].extensions.code, 'TRB_ERR_PERSISTED_NOT_FOUND', 'an invalid document is not registered')
})

t.test('the store is bounded: graphql.apqMaxEntries (LRU) and graphql.apqMaxDocumentBytes', async (t) => {
  const { url, app } = await startDemo(t, { listen: true, override: { graphql: { apqMaxEntries: 3, apqMaxDocumentBytes: 200 } } })
  const client = apqClient(url, 'POST')
  const queries = [1, 2, 3, 4, 5].map((n) => `query Q${n} { todo_findUniqueTodo(where: {id: ${n}}) { id } }`)
  for (const q of queries) await client.call(q)
  t.equal(client.requests, 10)
  await client.call(queries[4]!)
  t.equal(client.requests, 11, 'the newest is kept')
  await client.call(queries[0]!)
  t.equal(client.requests, 13, 'the oldest was evicted, and registers again')
  // 200 more distinct registrations (through inject) evict as they go.
  for (let i = 0; i < 200; i++) {
    const q = `query R${i} { todo_findUniqueTodo(where: {id: 1}) { id } }`
    await app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ query: q, extensions: { persistedQuery: { version: 1, sha256Hash: sha(q) } } }) })
  }
  const long = `query Long { todo_findUniqueTodo(where: {id: 1}) { id ${'title '.repeat(40)} } }`
  const before = client.requests
  const first = await client.call(long)
  t.equal(first.body.data.todo_findUniqueTodo.id, 1, 'a document over the size bound runs')
  await client.call(long)
  t.equal(client.requests - before, 4, 'but is not kept')
})

t.test('APQ is off in production by default, and needs allowArbitraryOperationsInProduction when set', async (t) => {
  const { resolveConfig, database } = await import('../gateway/config/index.js')
  const datasources = [database({ namespace: 'x', url: 'sqlite::memory:' })]
  t.equal(resolveConfig({ mode: 'production', datasources }).graphql.apq, false)
  t.equal(resolveConfig({ mode: 'development', datasources }).graphql.apq, true)
  t.throws(() => resolveConfig({ mode: 'production', datasources, graphql: { apq: true } }), { code: 'TRB_ERR_CONFIG_INVALID' })
  const { url } = await startDemo(t, { listen: true, override: { mode: 'production', graphql: { apq: true, allowArbitraryOperationsInProduction: true } } })
  const client = apqClient(url, 'POST')
  const query = '{ todo_findUniqueTodo(where: {id: 3}) { id } }'
  await client.call(query)
  const again = await client.call(query)
  t.same(again.body.data, { todo_findUniqueTodo: { id: 3 } })
  t.equal(client.requests, 3, 'enabled in production: one round trip after the first')
})

t.test('persisted-only production refuses registration', async (t) => {
  const { url } = await startDemo(t, { listen: true, override: { mode: 'production' } })
  const query = '{ todo_findUniqueTodo(where: {id: 3}) { id } }'
  const post = (body: unknown) => fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const reg = await post({ query, extensions: { persistedQuery: { version: 1, sha256Hash: sha(query) } } })
  t.equal(reg.status, 400)
  t.equal((await json(reg)).errors[0].extensions.code, 'TRB_ERR_PERSISTED_ONLY')
  const later = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: sha(query) } } })
  t.equal((await json(later)).errors[0].extensions.code, 'TRB_ERR_PERSISTED_NOT_FOUND')
})
