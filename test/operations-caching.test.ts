/**
 * Caching of GET /operations/*: a weak ETag on every successful GET and 304 for a matching
 * If-None-Match; Cache-Control from the operation's `# @cache` line (default
 * `public, max-age=0, must-revalidate`), `private` when the request carries Authorization or a
 * cookie; error and non-GET responses are `no-store` and never carry an ETag.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { startDemo } from './helpers/demo.js'

const dir = fileURLToPath(new URL('./fixtures/operations-demo', import.meta.url))

t.test('ETag, 304 and Cache-Control', async (t) => {
  const { url } = await startDemo(t, { listen: true, rawSql: true, override: { operations: { dir } } })
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${url}${path}`, { headers })

  t.test('a weak ETag of the body, 304 for If-None-Match (weak or strong form, lists, *)', async (t) => {
    const first = await get('/operations/TodoById?id=1')
    t.equal(first.status, 200)
    const etag = first.headers.get('etag')!
    t.match(etag, /^W\/"[A-Za-z0-9_-]+"$/)
    t.equal(first.headers.get('cache-control'), 'public, max-age=0, must-revalidate', 'the default')
    const again = await get('/operations/TodoById?id=1')
    t.equal(again.headers.get('etag'), etag, 'the same body has the same ETag')

    for (const inm of [etag, etag.replace(/^W\//, ''), `"other", ${etag}`, '*']) {
      const res = await get('/operations/TodoById?id=1', { 'if-none-match': inm })
      t.equal(res.status, 304, `If-None-Match: ${inm}`)
      t.equal(await res.text(), '')
      t.equal(res.headers.get('etag'), etag, '304 repeats the ETag')
      t.equal(res.headers.get('cache-control'), 'public, max-age=0, must-revalidate', '304 repeats Cache-Control')
    }
    const other = await get('/operations/TodoById?id=2', { 'if-none-match': etag })
    t.equal(other.status, 200, 'another body, another ETag')
    t.not(other.headers.get('etag'), etag)
  })

  t.test('the ETag changes when the data changes', async (t) => {
    const before = (await get('/operations/Cached?id=4')).headers.get('etag')!
    const update = await fetch(`${url}/operations/UpdateTitle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 4, title: 'Changed for the ETag' }) })
    t.equal(update.status, 200)
    t.equal(update.headers.get('cache-control'), 'no-store', 'POST responses are never cached')
    t.notOk(update.headers.get('etag'))
    const after = await get('/operations/Cached?id=4', { 'if-none-match': before })
    t.equal(after.status, 200)
    t.equal(((await after.json()) as any).todo_findUniqueTodo.title, 'Changed for the ETag')
  })

  t.test('# @cache maxAge=60 staleWhileRevalidate=30', async (t) => {
    const res = await get('/operations/Cached')
    t.equal(res.headers.get('cache-control'), 'public, max-age=60, stale-while-revalidate=30')
    const auth = await get('/operations/Cached', { authorization: 'Bearer token' })
    t.equal(auth.headers.get('cache-control'), 'private, max-age=60, stale-while-revalidate=30', 'private with Authorization')
    const cookie = await get('/operations/Cached', { cookie: 'session=1' })
    t.equal(cookie.headers.get('cache-control'), 'private, max-age=60, stale-while-revalidate=30', 'private with a cookie')
    const noDirective = await get('/operations/TodoById', { cookie: 'session=1' })
    t.equal(noDirective.headers.get('cache-control'), 'private, max-age=0, must-revalidate')
  })

  t.test('# @cache maxAge=10 private mustRevalidate', async (t) => {
    const res = await get('/operations/PrivateCached')
    t.equal(res.status, 200)
    t.equal(res.headers.get('cache-control'), 'private, max-age=10, must-revalidate')
  })

  t.test('errors are no-store and never carry an ETag, even with If-None-Match', async (t) => {
    const cases = [
      ['/operations/TodoById?id=abc', 400],
      ['/operations/NoSuchOperation', 404],
      ['/operations/UpdateTitle?id=1&title=x', 405],
      [`/operations/RawQuery?sql=${encodeURIComponent('select nope from nowhere')}`, 400],
      ['/operations/internal/Secret', 404],
    ] as const
    for (const [path, status] of cases) {
      const res = await get(path, { 'if-none-match': '*' })
      t.equal(res.status, status, path)
      t.equal(res.headers.get('cache-control'), 'no-store', `${path}: no-store`)
      t.notOk(res.headers.get('etag'), `${path}: no ETag`)
      t.ok(((await res.json()) as any).errors.length)
    }
  })

  t.test('a query over POST is not cacheable', async (t) => {
    const res = await fetch(`${url}/operations/Cached`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    t.equal(res.status, 200)
    t.equal(res.headers.get('cache-control'), 'no-store')
    t.notOk(res.headers.get('etag'))
  })
})
