/**
 * Stored queries answered before fastify (gateway/http/operations-routes.ts `answerEarly`, kinds
 * `direct` and `execute`): the same status, headers and body as the route (which `app.inject` reaches without
 * the early path), 304 on If-None-Match, counted in the metrics; credentials, escapes, bad variables
 * and HEAD go to the route; an answer over a third of `server.maxResponseBytes` and a failed statement
 * are handed to the route with the statement's result, which answers them without running it again;
 * the variables memoised per query string stay bounded (attack); with `auth.jwt`, a token verified
 * recently is answered early with its identity and roles (401/403 and unknown tokens: the route); `tributary dev` (in-flight requests
 * counted) answers nothing early.
 */
import t from 'tap'
import Database from 'better-sqlite3'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { startDemo } from './helpers/demo.js'
import { mint, signingKey, startJwks } from './helpers/auth.js'
import { buildApp } from '../gateway/http/app.js'
import type { CompiledOperation } from '../gateway/operations/compile.js'

const dir = fileURLToPath(new URL('./fixtures/operations-demo', import.meta.url))
const SENT = ['etag', 'cache-control', 'content-type', 'content-length']
const get = (url: string, path: string) => fetch(`${url}${path}`)

/**
 * Counts the direct runs of a stored operation (its real plan still runs): `runValidated`, and
 * `runValidatedNow` when it ran the statement (an answer, or a failure: not undefined).
 */
function countRuns(op: CompiledOperation): () => number {
  const direct = op.direct!
  const run = direct.runValidated.bind(direct)
  let n = 0
  direct.runValidated = (variables, context) => {
    n++
    return run(variables, context)
  }
  const runNow = direct.runValidatedNow?.bind(direct)
  if (runNow) {
    direct.runValidatedNow = (variables, context) => {
      const result = runNow(variables, context)
      if (result !== undefined) n++
      return result
    }
  }
  return () => n
}

t.test('answers as the route does, and hands to the route what it does not answer', async (t) => {
  const { app, url, gateway } = await startDemo(t, { listen: true, override: { operations: { dir }, server: { maxResponseBytes: 400 } } })
  const get = (path: string, headers: Record<string, string> = {}, method = 'GET') => fetch(`${url}${path}`, { headers, method })
  const tally = app.earlyDirect

  for (const path of ['/operations/TodoById?id=1', '/operations/TodoById?id=987654']) {
    const before = tally.answered
    const res = await get(path)
    const route = await app.inject({ url: path })
    t.equal(tally.answered, before + 1, `${path}: answered early`)
    t.equal(res.status, route.statusCode)
    t.equal(await res.text(), route.body, `${path}: the route's body`)
    for (const h of SENT) t.equal(res.headers.get(h), String(route.headers[h]), `${path}: the route's ${h}`)
  }
  t.match(await (await get('/operations/TodoById?id=987654')).json(), { todo_findUniqueTodo: null }, 'a missing row is null, as on the route')

  // 304 with the route's headers.
  const etag = (await get('/operations/TodoById?id=1')).headers.get('etag')!
  const notModified = await get('/operations/TodoById?id=1', { 'if-none-match': etag })
  const routeNotModified = await app.inject({ url: '/operations/TodoById?id=1', headers: { 'if-none-match': etag } })
  t.equal(notModified.status, 304)
  t.equal(routeNotModified.statusCode, 304)
  for (const h of ['etag', 'cache-control']) t.equal(notModified.headers.get(h), String(routeNotModified.headers[h]), `304: the route's ${h}`)
  t.equal((await get('/operations/TodoById?id=1', { 'if-none-match': '"other"' })).status, 200, 'another ETag: 200')

  // The route decides what is not plain, and what carries credentials.
  const n = tally.answered
  const handed = tally.handedOver
  const bad = await get('/operations/TodoById?id=abc')
  t.equal(bad.status, 400)
  t.match(await bad.json(), { errors: [{ extensions: { code: 'TRB_ERR_OPERATION_VARIABLES' } }] })
  t.equal((await get('/operations/TodoById?id=%31')).status, 200, 'an escape: the route')
  t.equal((await get('/operations/TodoById?id=1', {}, 'HEAD')).status, 200, 'HEAD: the route')
  t.equal((await get('/operations/TodoById?id=1', { cookie: 'a=1' })).status, 200, 'a cookie: the route')
  t.equal((await get('/operations/TodoById?id=1&id=2')).status, 400, 'a repeated key: the route refuses it')
  t.equal((await get('/operations/NoSuchOperation')).status, 404)
  t.equal(tally.answered, n, 'none of them answered early')
  t.equal(tally.handedOver, handed, 'nor run early')

  // Authorization without auth.jwt: no identity, as on the route, and Cache-Control private.
  const credentialed = await get('/operations/TodoById?id=1', { authorization: 'Bearer x' })
  const routeCredentialed = await app.inject({ url: '/operations/TodoById?id=1', headers: { authorization: 'Bearer x' } })
  t.equal(tally.answered, n + 1, 'answered early')
  t.equal(credentialed.headers.get('cache-control'), String(routeCredentialed.headers['cache-control']))
  t.match(credentialed.headers.get('cache-control'), /^private/)

  // Counted in the metrics as the route's hooks count.
  const metrics = await (await get('/metrics')).text()
  t.match(metrics, /tributary_http_requests_total\{route="\/operations\/\*",method="GET",status="200"\} \d+/)
  t.match(metrics, /tributary_http_requests_total\{route="\/operations\/\*",method="GET",status="304"\} [1-9]/)
  t.match(metrics, /tributary_operation_duration_seconds_count\{operation="TodoById"\} [1-9]/)

  // Over a third of maxResponseBytes (400): handed to the route with the result, which checks the
  // size and answers, the statement run once.
  const findTodos = gateway.operations.get('FindTodos')!
  const runs = countRuns(findTodos)
  const small = await get('/operations/FindTodos?take=1')
  t.equal(small.status, 200)
  t.equal(runs(), 1)
  const before = { answered: tally.answered, handedOver: tally.handedOver }
  const medium = await get('/operations/FindTodos?take=3')
  const mediumBody = await medium.text()
  t.equal(medium.status, 200, `a ${mediumBody.length}-byte answer, over 133 and within 400`)
  t.ok(mediumBody.length > 133 && mediumBody.length <= 400)
  t.same({ answered: tally.answered, handedOver: tally.handedOver }, { answered: before.answered, handedOver: before.handedOver + 1 }, 'handed to the route')
  t.equal(runs(), 2, 'the route did not run the statement again')
  t.equal(medium.headers.get('etag'), (await app.inject({ url: '/operations/FindTodos?take=3' })).headers.etag, 'with the route\'s ETag')
  const db = new Database(join(process.env.TODO_DATABASE_URL!.replace(/^sqlite:/, '')))
  t.teardown(() => db.close())
  const insert = db.prepare('INSERT INTO Todo (title) VALUES (?)')
  for (let i = 0; i < 5; i++) insert.run(`a longer title, number ${i}, to pass the limit`)
  const large = await get('/operations/FindTodos?take=50')
  t.equal(large.status, 400, 'over maxResponseBytes: the route refuses it')
  t.match(await large.json(), { errors: [{ extensions: { code: 'TRB_ERR_GRAPHQL_LIMIT' } }] })

  // A statement that fails: handed to the route, which answers the error without running it again.
  const todoById = gateway.operations.get('TodoById')!
  const byIdRuns = countRuns(todoById)
  db.exec('ALTER TABLE Todo RENAME TO TodoGone')
  const handedBefore = tally.handedOver
  const failed = await get('/operations/TodoById?id=1')
  const failedBody = await failed.json()
  t.ok(failed.status >= 400, `an error status (${failed.status})`)
  // A table gone under the gateway is the server's fault: 500 TRB_ERR_INTERNAL with an error id.
  t.match(failedBody, { errors: [{ extensions: { code: 'TRB_ERR_INTERNAL', errorId: String } }], data: null }, 'a coded error')
  t.equal(tally.handedOver, handedBefore + 1, 'handed to the route')
  t.equal(byIdRuns(), 1, 'run once')
  const routeFailed = await app.inject({ url: '/operations/TodoById?id=1' })
  t.equal(routeFailed.statusCode, failed.status, 'the route\'s status')
  const withoutId = (b: { errors: { message: string; extensions: Record<string, unknown> }[] }) => b.errors.map((e) => ({ ...e, message: e.message.replace(/\(id [^)]+\)/, ''), extensions: { ...e.extensions, errorId: undefined } }))
  t.same(withoutId(JSON.parse(routeFailed.body)), withoutId(failedBody as Parameters<typeof withoutId>[0]), 'the route\'s body (but for the error id)')
})

t.test('other stored queries (REST, mixed sources) run by their execution before fastify, errors answered by the route', async (t) => {
  const { app, url } = await startDemo(t, { listen: true, override: { server: { maxResponseBytes: 2000 } } })
  const tally = app.earlyDirect
  for (const path of ['/operations/Roles', '/operations/TodoAndRoles?id=2', '/operations/TodoAndRoles?id=987654']) {
    const before = tally.answered
    const res = await get(url, path)
    const route = await app.inject({ url: path })
    t.equal(tally.answered, before + 1, `${path}: answered early`)
    t.equal(res.status, 200)
    t.equal(await res.text(), route.body, `${path}: the route's body`)
    for (const h of SENT) t.equal(res.headers.get(h), String(route.headers[h]), `${path}: the route's ${h}`)
  }

  // An execution with errors: handed to the route, which answers them without executing again.
  const small = await startDemo(t, { listen: true, override: { server: { maxResponseBytes: 60 } } })
  const smallOp = small.gateway.operations.get('TodoAndRoles')!
  const smallExecute = smallOp.execute.bind(smallOp)
  let smallRuns = 0
  ;(smallOp as { execute: typeof smallOp.execute }).execute = (variables, context) => {
    smallRuns++
    return smallExecute(variables, context)
  }
  const handed = small.app.earlyDirect.handedOver
  const refused = await get(small.url, '/operations/TodoAndRoles?id=1')
  const refusedBody = await refused.json()
  t.equal(refused.status, 400, 'over maxResponseBytes')
  t.match(refusedBody, { errors: [{ extensions: { code: 'TRB_ERR_GRAPHQL_LIMIT' } }] })
  t.equal(small.app.earlyDirect.handedOver, handed + 1, 'handed to the route')
  t.equal(smallRuns, 1, 'executed once')
  const route = await small.app.inject({ url: '/operations/TodoAndRoles?id=1' })
  t.equal(route.statusCode, 400, 'as the route answers it')
  t.same(JSON.parse(route.body), refusedBody)
})

t.test('attack: distinct query strings keep the memoised variables within 1,000 per operation', async (t) => {
  const { app, url } = await startDemo(t, { listen: true, override: { operations: { dir } } })
  const ids = Array.from({ length: 1100 }, (_, i) => i + 1)
  for (let i = 0; i < ids.length; i += 100) {
    const answers = await Promise.all(ids.slice(i, i + 100).map(async (id) => (await fetch(`${url}/operations/TodoById?id=${id}`)).status))
    if (answers.some((s) => s !== 200)) t.fail(`a status other than 200: ${answers.join(',')}`)
  }
  t.ok(app.earlyDirect.memoised() <= 1000, `${app.earlyDirect.memoised()} query strings remembered`)
  t.ok(app.earlyDirect.answered >= 1100, 'every one answered early')
  const before = app.earlyDirect.answered
  const long = await fetch(`${url}/operations/TodoById?id=1&${'x'.repeat(600)}=1`)
  t.equal(long.status, 400, 'a query string over 512 characters: the route (an unknown variable)')
  t.equal(app.earlyDirect.answered, before, 'not answered early')
})

t.test('with auth.jwt: a recently verified token is answered early with its identity; others go to the route', async (t) => {
  const ops = mkdtempSync(join(tmpdir(), 'trb-early-auth-'))
  t.teardown(() => rmSync(ops, { recursive: true, force: true }))
  const selection = '{ todo_findUniqueTodo(where: { id: $id }) { id title } }'
  writeFileSync(join(ops, 'TodoById.graphql'), `query TodoById($id: Int = 1) ${selection}\n`)
  writeFileSync(join(ops, 'Signed.graphql'), `query Signed($id: Int = 1) @requireAuthentication ${selection}\n`)
  writeFileSync(join(ops, 'Admins.graphql'), `query Admins($id: Int = 1) @requireAuthentication @rbac(requireMatchAny: [admin]) ${selection}\n`)
  const key = await signingKey('RS256', 'early-1')
  const jwks = await startJwks(t, [key])
  const { app, url } = await startDemo(t, { listen: true, override: { operations: { dir: ops }, auth: { jwt: { jwksUrl: jwks.url, rolesClaim: 'roles' } } } })
  const tally = app.earlyDirect
  const get = (path: string, token?: string) => fetch(`${url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} })
  const editor = await mint(key, { sub: 'eve', roles: ['editor'] }, { expiresIn: '1h' })
  const admin = await mint(key, { sub: 'ada', roles: ['admin'] }, { expiresIn: '1h' })

  let n = tally.answered
  t.equal((await get('/operations/Signed?id=1')).status, 401, 'no token: the route refuses it')
  t.equal((await get('/operations/Signed?id=1', 'not.a.token')).status, 401, 'a bad token: the route refuses it')
  const first = await get('/operations/Signed?id=1', editor)
  t.equal(first.status, 200, 'a new token: verified by the route')
  t.equal(tally.answered, n, 'none answered early')
  const again = await get('/operations/Signed?id=1', editor)
  t.equal(again.status, 200)
  t.equal(tally.answered, n + 1, 'the same token, now known: answered early')
  t.equal(await again.text(), await first.text(), 'the route\'s body')
  t.equal(again.headers.get('cache-control'), first.headers.get('cache-control'), 'the route\'s Cache-Control')
  t.match(again.headers.get('cache-control'), /^private/, 'private: the request carries a credential')
  const route = await app.inject({ url: '/operations/Signed?id=1', headers: { authorization: `Bearer ${editor}` } })
  t.equal(again.headers.get('etag'), String(route.headers.etag))

  n = tally.answered
  const forbidden = await get('/operations/Admins?id=1', editor)
  t.equal(forbidden.status, 403, 'a known token without the role: the route answers 403')
  t.match(await forbidden.json(), { errors: [{ extensions: { code: 'TRB_ERR_AUTH_FORBIDDEN' } }] })
  t.equal(tally.answered, n, 'not answered early')
  t.equal((await get('/operations/Admins?id=1', admin)).status, 200)
  t.equal((await get('/operations/Admins?id=1', admin)).status, 200)
  t.equal(tally.answered, n + 1, 'the admin\'s known token: answered early')

  // An operation without directives, with a known token: answered early, private.
  const plain = await get('/operations/TodoById?id=1', admin)
  t.equal(plain.status, 200)
  t.match(plain.headers.get('cache-control'), /^private/)
  t.equal(tally.answered, n + 2)
  t.equal((await get('/operations/TodoById?id=1', 'not.a.token')).status, 401, 'an invalid token is refused where none is needed, as on the route')
})

t.test('tributary dev (in-flight requests counted): nothing is answered early', async (t) => {
  const demo = await startDemo(t, { override: { operations: { dir } } })
  const app = await buildApp(demo.gateway, { logger: false, trackInFlight: true })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const a = app.server.address()
  const url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`
  const res = await fetch(`${url}/operations/TodoById?id=1`)
  t.equal(res.status, 200)
  t.match(await res.json(), { todo_findUniqueTodo: { id: 1 } })
  t.same([app.earlyDirect.answered, app.earlyDirect.handedOver], [0, 0])
})
