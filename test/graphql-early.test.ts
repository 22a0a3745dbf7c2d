/**
 * `POST /graphql` answered before fastify (gateway/http/graphql-endpoint.ts `EarlyGraphQL`): over
 * real HTTP on 127.0.0.1, the same status, headers and body as the route (which `app.inject` reaches
 * without the early path) for a database query (its direct plan) and a REST one (graphql-jit), with
 * `Accept` negotiated, counted in the metrics; every request the early path reads but does not
 * answer (bad JSON, `__proto__`, validation and variable errors, batches, persisted-query
 * extensions, mutations, introspection, too costly or too deep, 401) gets exactly the route's
 * answer, the body handed over; requests it must not read (cookie, another content type, chunked,
 * a body over 64 KiB) are left to fastify untouched; a failed statement and a large answer are
 * handed over with their result and not run again; a body that never arrives is ended by
 * `server.requestTimeoutMs` (attack); `tributary dev` answers nothing early. A body sent again is
 * answered from what the first left (direct plans and graphql-jit, variables shared frozen, auth
 * directives checked per request, forgotten on a swap), and distinct bodies by the thousand keep
 * that table within `EARLY_BODIES` (attack).
 */
import t from 'tap'
import Database from 'better-sqlite3'
import { connect } from 'node:net'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { startDemo } from './helpers/demo.js'
import { mint, signingKey, startJwks } from './helpers/auth.js'
import { buildApp } from '../gateway/http/app.js'
import { EARLY_BODIES, EARLY_BODY_CHARS, EARLY_GRAPHQL_BODY_BYTES } from '../gateway/http/graphql-endpoint.js'
import type { FastifyInstance } from 'fastify'
import { observers } from '../gateway/observability/probes.js'

const TODO_BY_ID = readFileSync(fileURLToPath(new URL('../operations/TodoById.graphql', import.meta.url)), 'utf8')
const ROLES = readFileSync(fileURLToPath(new URL('../operations/Roles.graphql', import.meta.url)), 'utf8')
const SENT = ['content-type', 'content-length', 'cache-control', 'retry-after', 'etag']

/** POSTs `body` (a string as is, anything else as JSON) to `/graphql` over HTTP. */
function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) })
}

/** The same request through fastify alone (`inject` does not pass the server's request listener). */
function route(app: FastifyInstance, body: unknown, headers: Record<string, string> = {}) {
  return app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json', ...headers }, payload: typeof body === 'string' ? body : JSON.stringify(body) })
}

/** Error ids and timings differ between two runs of the same failure. */
const stable = (body: string) => body.replace(/"errorId":"[^"]+"/g, '"errorId":"…"').replace(/\(id [^)]+\)/g, '(id …)')

t.test('answers as the route does, counted as the route counts', async (t) => {
  const { app, url } = await startDemo(t, { listen: true })
  const tally = app.earlyGraphQL
  const cases: { name: string; body: unknown; headers?: Record<string, string> }[] = [
    { name: 'a database query (direct plan)', body: { query: TODO_BY_ID, variables: { id: 1 }, operationName: 'TodoById' } },
    { name: 'no operationName, default variable', body: { query: TODO_BY_ID } },
    { name: 'a missing row', body: { query: TODO_BY_ID, variables: { id: 987654 }, operationName: null, extensions: null } },
    { name: 'a REST query (graphql-jit)', body: { query: ROLES } },
    { name: 'Accept: graphql-response+json', body: { query: TODO_BY_ID, variables: { id: 2 } }, headers: { accept: 'application/graphql-response+json' } },
    { name: 'Accept: application/json', body: { query: TODO_BY_ID, variables: { id: 2 } }, headers: { accept: 'application/json, text/plain;q=0.5' } },
    { name: 'charset in Content-Type', body: { query: TODO_BY_ID, variables: { id: 3 } }, headers: { 'content-type': 'application/json; charset=utf-8' } },
  ]
  for (const c of cases) {
    const before = { ...tally }
    const res = await post(url, c.body, c.headers)
    const text = await res.text()
    t.same({ ...tally }, { answered: before.answered + 1, handedOver: before.handedOver }, `${c.name}: answered early`)
    const viaRoute = await route(app, c.body, c.headers)
    t.equal(res.status, viaRoute.statusCode, `${c.name}: the route's status`)
    t.equal(text, viaRoute.body, `${c.name}: the route's body`)
    for (const h of SENT) t.equal(res.headers.get(h) ?? undefined, viaRoute.headers[h] === undefined ? undefined : String(viaRoute.headers[h]), `${c.name}: the route's ${h}`)
  }
  t.match(JSON.parse(await (await post(url, { query: TODO_BY_ID, variables: { id: 987654 } })).text()), { data: { todo_findUniqueTodo: null } })
  t.match(await (await post(url, { query: ROLES })).json(), { data: { system_getAllRoles: [{ code: String }] } })

  // The console's traffic counts the early answer under its operationName, as its hook counts the route's.
  t.ok(observers.traffic, 'the console records traffic (development)')
  const counted = () => observers.traffic!.snapshot(Date.now()).operations.find((o) => o.name === 'TodoById')?.count ?? 0
  const seen = counted()
  const early = tally.answered
  t.equal((await post(url, { query: TODO_BY_ID, operationName: 'TodoById' })).status, 200)
  t.equal(tally.answered, early + 1)
  t.equal(counted(), seen + 1, 'one more TodoById in the console\'s traffic')

  const metrics = await (await fetch(`${url}/metrics`)).text()
  t.match(metrics, /tributary_http_requests_total\{route="\/graphql",method="POST",status="200"\} ([1-9]\d*)/, 'counted per route')
  t.match(metrics, /tributary_operation_duration_seconds_count\{operation="TodoById"\} [1-9]/, 'timed per operation')
  t.match(metrics, /tributary_operation_duration_seconds_count\{operation="Roles"\} [1-9]/)
})

t.test('what it reads but does not answer gets the route\'s answer, the body handed over', async (t) => {
  const { app, url } = await startDemo(t, { listen: true, override: { graphql: { maxCost: 5000, maxInputDepth: 4 }, server: { maxResponseBytes: 400 } } })
  const tally = app.earlyGraphQL
  const deep = { a: { b: { c: { d: { e: { f: 1 } } } } } }
  const cases: { name: string; body: unknown; status: number; code?: RegExp }[] = [
    { name: 'malformed JSON', body: '{"query": ', status: 400, code: /TRB_ERR_BAD_REQUEST/ },
    { name: 'a __proto__ key', body: `{"query": ${JSON.stringify(TODO_BY_ID)}, "variables": {"__proto__": {"x": 1}}}`, status: 400, code: /TRB_ERR_BAD_REQUEST/ },
    { name: 'a JSON string', body: '"query"', status: 400, code: /TRB_ERR_GRAPHQL_REQUEST/ },
    { name: 'an array (batching off)', body: [{ query: TODO_BY_ID }], status: 400, code: /TRB_ERR_GRAPHQL_REQUEST/ },
    { name: 'no query', body: { variables: { id: 1 } }, status: 400, code: /TRB_ERR_GRAPHQL_REQUEST/ },
    { name: 'variables not an object', body: { query: TODO_BY_ID, variables: [1] }, status: 400, code: /TRB_ERR_GRAPHQL_REQUEST/ },
    { name: 'operationName not a string', body: { query: TODO_BY_ID, operationName: 1 }, status: 400, code: /TRB_ERR_GRAPHQL_REQUEST/ },
    { name: 'a validation error', body: { query: '{ nope }' }, status: 200, code: /TRB_ERR_GRAPHQL_VALIDATION/ },
    { name: 'a syntax error', body: { query: '{ todo_findUniqueTodo(' }, status: 200, code: /GRAPHQL/ },
    { name: 'a variable of the wrong type', body: { query: TODO_BY_ID, variables: { id: 'x' } }, status: 200, code: /TRB_ERR_GRAPHQL_VALIDATION/ },
    { name: 'variables too deep', body: { query: TODO_BY_ID, variables: { id: 1, deep } }, status: 200, code: /TRB_ERR_GRAPHQL_LIMIT/ },
    { name: 'too costly', body: { query: '{ todo_findManyTodo(take: 100000) { id } }' }, status: 200, code: /TRB_ERR_GRAPHQL_LIMIT/ },
    { name: 'an unknown operationName', body: { query: TODO_BY_ID, operationName: 'Other' }, status: 200 },
    { name: 'a persisted-query hash not known', body: { extensions: { persistedQuery: { version: 1, sha256Hash: 'ab'.repeat(32) } } }, status: 400 },
    { name: 'a mutation', body: { query: 'mutation { todo_createOneTodo(data: { title: "early" }) { title } }' }, status: 200 },
    { name: 'introspection', body: { query: '{ __schema { queryType { name } } }' }, status: 200 },
    { name: 'a subscription', body: { query: 'subscription { messageCreated { id } }' }, status: 200 },
  ]
  for (const c of cases) {
    const before = { ...tally }
    const res = await post(url, c.body)
    const text = await res.text()
    t.same({ ...tally }, { answered: before.answered, handedOver: before.handedOver + 1 }, `${c.name}: handed to the route`)
    t.equal(res.status, c.status, `${c.name}: ${c.status}`)
    if (c.code) t.match(text, c.code, `${c.name}: ${c.code}`)
    // The mutation is not repeated through the route: the title differs, nothing else.
    const viaRoute = await route(app, c.body)
    t.equal(res.status, viaRoute.statusCode, `${c.name}: the route's status`)
    t.equal(stable(text), stable(viaRoute.body), `${c.name}: the route's body`)
    t.equal(res.headers.get('content-type'), String(viaRoute.headers['content-type']), `${c.name}: the route's content type`)
  }
  const created = new Database(process.env.TODO_DATABASE_URL!.replace(/^sqlite:/, ''), { readonly: true })
  t.teardown(() => created.close())
  t.equal((created.prepare('SELECT count(*) AS n FROM Todo WHERE title = ?').get('early') as { n: number }).n, 2, 'the mutation ran once per request (early, then through inject)')

  // Not read at all: left to fastify as it came.
  const untouched: { name: string; init: RequestInit; status: number }[] = [
    { name: 'a cookie', init: { headers: { 'content-type': 'application/json', cookie: 'a=1' }, body: JSON.stringify({ query: TODO_BY_ID }) }, status: 200 },
    { name: 'text/plain', init: { headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ query: TODO_BY_ID }) }, status: 415 },
    { name: 'a chunked body', init: { headers: { 'content-type': 'application/json' }, body: new Blob([JSON.stringify({ query: TODO_BY_ID })]).stream(), duplex: 'half' } as RequestInit, status: 200 },
    { name: `a body over ${EARLY_GRAPHQL_BODY_BYTES} bytes`, init: { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: `${TODO_BY_ID}${' '.repeat(EARLY_GRAPHQL_BODY_BYTES)}` }) }, status: 200 },
    { name: 'an Accept it cannot answer', init: { headers: { 'content-type': 'application/json', accept: 'text/html' }, body: JSON.stringify({ query: TODO_BY_ID }) }, status: 406 },
  ]
  for (const u of untouched) {
    const before = { ...tally }
    const res = await fetch(`${url}/graphql`, { method: 'POST', ...u.init })
    await res.arrayBuffer()
    t.equal(res.status, u.status, `${u.name}: ${u.status} from the route`)
    t.same({ ...tally }, before, `${u.name}: not read early`)
  }

  // An answer over a third of maxResponseBytes (400) is handed over with its result: the route
  // measures it, the statement not run again (the statement log counts it).
  const db = new Database(process.env.TODO_DATABASE_URL!.replace(/^sqlite:/, ''))
  t.teardown(() => db.close())
  for (let i = 0; i < 5; i++) db.prepare('INSERT INTO Todo (title) VALUES (?)').run(`a longer title, number ${i}, to pass the limit`)
  const many = { query: 'query Many($take: Int) { todo_findManyTodo(take: $take, orderBy: [{ id: asc }]) { id title } }' }
  const before = { ...tally }
  const medium = await post(url, { ...many, variables: { take: 3 } })
  const mediumText = await medium.text()
  t.equal(medium.status, 200)
  t.ok(mediumText.length > 133 && mediumText.length <= 400, `${mediumText.length} bytes`)
  t.equal(mediumText, (await route(app, { ...many, variables: { take: 3 } })).body, 'the route\'s body')
  const large = await post(url, { ...many, variables: { take: 50 } })
  const largeText = await large.text()
  // The result budget stops the execution itself: a field error, handed over with the result.
  t.equal(large.status, 200, 'over maxResponseBytes: stopped by the result budget')
  t.match(JSON.parse(largeText), { errors: [{ extensions: { code: 'TRB_ERR_GRAPHQL_LIMIT' } }], data: null })
  t.same({ ...tally }, { answered: before.answered, handedOver: before.handedOver + 2 }, 'both handed over with their result')
})

t.test('a failed statement is handed over with its result, not run again', async (t) => {
  const { app, url } = await startDemo(t, { listen: true })
  const tally = app.earlyGraphQL
  const body = { query: TODO_BY_ID, variables: { id: 1 } }
  /** Statements the todo source ran (`tributary_sql_duration_seconds`, failed ones included). */
  const statements = async () => Number(/tributary_sql_duration_seconds_count\{source="todo"\} (\d+)/.exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? NaN)
  t.equal((await post(url, body)).status, 200)
  const db = new Database(process.env.TODO_DATABASE_URL!.replace(/^sqlite:/, ''))
  t.teardown(() => {
    db.exec('ALTER TABLE TodoGone RENAME TO Todo')
    db.close()
  })
  db.exec('ALTER TABLE Todo RENAME TO TodoGone')
  const ran = await statements()
  const before = { ...tally }
  const failed = await post(url, body)
  const failedText = await failed.text()
  t.equal(await statements(), ran + 1, 'one statement for the request: the route did not run it again')
  const failure = JSON.parse(failedText) as { errors: { message: string }[] }
  t.match(failure, { errors: [{ extensions: { code: 'TRB_ERR_INTERNAL', errorId: String } }], data: null }, 'a coded error')
  t.notMatch(failure.errors[0]!.message, /TodoGone|SELECT|no such table/i, 'no SQL in the message')
  t.same({ ...tally }, { answered: before.answered, handedOver: before.handedOver + 1 }, 'handed over')
  const viaRoute = await route(app, body)
  t.equal(viaRoute.statusCode, failed.status, 'the route\'s status')
  t.equal(stable(failedText), stable(viaRoute.body), 'the route\'s body')
})

t.test('bodies in pieces and pipelined requests: each answered, in order', async (t) => {
  const { app, url } = await startDemo(t, { listen: true })
  const port = Number(new URL(url).port)
  const request = (id: number) => {
    const body = JSON.stringify({ query: TODO_BY_ID, variables: { id } })
    return `POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  }
  const exchange = async (send: (socket: import('node:net').Socket) => Promise<void>, answers: number) => {
    const socket = connect(port, '127.0.0.1')
    t.teardown(() => socket.destroy())
    await new Promise((ok) => socket.once('connect', ok))
    let text = ''
    socket.setEncoding('utf8')
    const done = new Promise<void>((ok) => socket.on('data', (d) => {
      text += d
      if ((text.match(/HTTP\/1\.1 /g) ?? []).length === answers && text.trimEnd().endsWith('}}}')) ok()
    }))
    await send(socket)
    await done
    return text.split(/(?=HTTP\/1\.1 )/)
  }
  const before = app.earlyGraphQL.answered
  // One request, its body sent in three pieces 50 ms apart.
  const pieces = await exchange(async (socket) => {
    const text = request(1)
    const cut = text.indexOf('\r\n\r\n') + 4
    socket.write(text.slice(0, cut + 5))
    await new Promise((ok) => setTimeout(ok, 50))
    socket.write(text.slice(cut + 5, cut + 40))
    await new Promise((ok) => setTimeout(ok, 50))
    socket.write(text.slice(cut + 40))
  }, 1)
  t.match(pieces[0], /^HTTP\/1\.1 200 [\s\S]*"id":1,/, 'a body in three pieces: answered')
  // Three requests in one write (HTTP/1.1 pipelining): three answers, in the order asked.
  const pipelined = await exchange(async (socket) => void socket.write(request(1) + request(2) + request(3)), 3)
  t.equal(pipelined.length, 3)
  pipelined.forEach((answer, i) => t.match(answer, new RegExp(`^HTTP/1\\.1 200 [\\s\\S]*"id":${i + 1},`), `answer ${i + 1} in order`))
  t.equal(app.earlyGraphQL.answered, before + 4, 'all four answered early')
})

t.test('a body sent again is answered from what the first one left: the same answers, variables shared unharmed, forgotten on a swap', async (t) => {
  const { app, url } = await startDemo(t, { listen: true })
  const tally = app.earlyGraphQL
  const TODO_AND_ROLES = readFileSync(fileURLToPath(new URL('../operations/TodoAndRoles.graphql', import.meta.url)), 'utf8')
  const cases: { name: string; body: unknown }[] = [
    { name: 'a direct plan with a scalar variable', body: { query: TODO_BY_ID, variables: { id: 2 } } },
    { name: 'a direct plan with an input object variable', body: { query: 'query Find($w: todo_TodoWhereInput) { todo_findManyTodo(where: $w, orderBy: [{ id: asc }]) { id title } }', variables: { w: { title: { contains: 'o' }, id: { in: [1, 2, 3] } } } } },
    { name: 'graphql-jit with a variable', body: { query: TODO_AND_ROLES, variables: { id: 3 }, operationName: 'TodoAndRoles' } },
  ]
  for (const c of cases) {
    const viaRoute = await route(app, c.body)
    t.equal(viaRoute.statusCode, 200, `${c.name}: the route answers 200`)
    t.notMatch(viaRoute.body, /"errors"/, `${c.name}: without errors`)
    for (const round of [1, 2, 3]) {
      const before = tally.answered
      const res = await post(url, c.body)
      t.equal(await res.text(), viaRoute.body, `${c.name}, sent ${round}×: the route's body`)
      t.equal(tally.answered, before + 1, `${c.name}, sent ${round}×: answered early`)
    }
  }
  t.equal(app.earlyGraphQLBodies(), cases.length, 'one remembered body per distinct body')
  // The same body from a caller the document's @requireAuthentication refuses: the check runs for every request.
  const signed = { query: 'query Signed @requireAuthentication { todo_findUniqueTodo(where: { id: 1 }) { id } }' }
  for (const round of [1, 2]) {
    const res = await post(url, signed)
    t.equal(res.status, 401, `@requireAuthentication, anonymous, sent ${round}×: 401`)
    t.match(await res.text(), /TRB_ERR_AUTH_REQUIRED/)
  }
  // A swapped gateway (what `tributary dev` does on a change) forgets every remembered body.
  app.tributary.swap(app.tributary.holder.current)
  t.equal((await post(url, cases[0].body)).status, 200)
  t.equal(app.earlyGraphQLBodies(), 1, 'after a swap only the body sent since is remembered')
})

t.test('distinct bodies by the thousand: the remembered ones stay within EARLY_BODIES, a long body is never kept (attack)', async (t) => {
  const { app, url } = await startDemo(t, { listen: true })
  const tally = app.earlyGraphQL
  const before = tally.answered
  let max = 0
  for (let i = 0; i < EARLY_BODIES + 150; i += 10) {
    const answers = await Promise.all(Array.from({ length: 10 }, (_, j) => post(url, { query: TODO_BY_ID, variables: { id: 1 }, operationName: 'TodoById', extensions: null, n: i + j }).then((r) => r.json() as Promise<{ data: { todo_findUniqueTodo: { id: number } } }>)))
    for (const a of answers) if (a.data?.todo_findUniqueTodo?.id !== 1) t.fail(`unexpected answer ${JSON.stringify(a)}`)
    max = Math.max(max, app.earlyGraphQLBodies())
  }
  t.equal(tally.answered - before, EARLY_BODIES + 150, 'every one answered early')
  t.ok(max <= EARLY_BODIES, `at most ${EARLY_BODIES} remembered at any time (${max})`)
  t.ok(app.earlyGraphQLBodies() < EARLY_BODIES, `the table started again empty when full (${app.earlyGraphQLBodies()} now)`)
  const kept = app.earlyGraphQLBodies()
  const long = { query: TODO_BY_ID, variables: { id: 1 }, padding: 'x'.repeat(EARLY_BODY_CHARS) }
  for (const round of [1, 2]) {
    const res = await post(url, long)
    t.match(await res.json(), { data: { todo_findUniqueTodo: { id: 1 } } }, `a body over ${EARLY_BODY_CHARS} characters, sent ${round}×: answered`)
  }
  t.equal(tally.answered - before, EARLY_BODIES + 152, 'answered early')
  t.equal(app.earlyGraphQLBodies(), kept, 'and not remembered')
})

t.test('a body that never arrives is ended by server.requestTimeoutMs (attack)', async (t) => {
  const { app, url } = await startDemo(t, { listen: true, override: { server: { requestTimeoutMs: 1000 } } })
  const port = Number(new URL(url).port)
  const socket = connect(port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  await new Promise((ok) => socket.once('connect', ok))
  const started = Date.now()
  socket.write(`POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"query":`)
  let answer = ''
  socket.setEncoding('utf8')
  socket.on('data', (d) => (answer += d))
  await new Promise((ok) => socket.once('close', ok))
  const ms = Date.now() - started
  t.match(answer, /^HTTP\/1\.1 408 /, '408 Request Timeout')
  t.match(answer, /TRB_ERR_BAD_REQUEST/, 'with a coded body')
  t.ok(ms < 5000, `closed after ${ms} ms`)
  t.same({ ...app.earlyGraphQL }, { answered: 0, handedOver: 0 }, 'nothing answered nor handed over')
})

t.test('with auth.jwt: anonymous and recently verified tokens early; new tokens and refusals through the route', async (t) => {
  const key = await signingKey('RS256', 'early-gql')
  const jwks = await startJwks(t, [key])
  const { app, url } = await startDemo(t, { listen: true, override: { auth: { jwt: { jwksUrl: jwks.url, rolesClaim: 'roles' } } } })
  const tally = app.earlyGraphQL
  const editor = await mint(key, { sub: 'eve', roles: ['editor'] }, { expiresIn: '1h' })
  const as = (token?: string): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {})
  const signed = { query: 'query Signed @requireAuthentication { todo_findUniqueTodo(where: { id: 1 }) { id } }' }
  const admins = { query: 'query Admins @requireAuthentication @rbac(requireMatchAny: [admin]) { todo_findUniqueTodo(where: { id: 1 }) { id } }' }
  const claimed = { query: 'query Claimed($sub: String @fromClaim(name: "sub")) { todo_findManyTodo(where: { title: { equals: $sub } }) { id } }' }

  const step = async (name: string, body: unknown, token: string | undefined, status: number, expect: { answered: number; handedOver: number }) => {
    const before = { ...tally }
    const res = await post(url, body, as(token))
    const text = await res.text()
    t.equal(res.status, status, `${name}: ${status}`)
    t.same({ answered: tally.answered - before.answered, handedOver: tally.handedOver - before.handedOver }, expect, `${name}: ${JSON.stringify(expect)}`)
    return text
  }
  await step('anonymous, no directive', { query: TODO_BY_ID }, undefined, 200, { answered: 1, handedOver: 0 })
  t.match(await step('anonymous, @requireAuthentication', signed, undefined, 401, { answered: 0, handedOver: 1 }), /TRB_ERR_AUTH_REQUIRED/)
  await step('a bad token', { query: TODO_BY_ID }, 'not.a.token', 401, { answered: 0, handedOver: 0 })
  const first = await step('a new token: verified by the route', signed, editor, 200, { answered: 0, handedOver: 0 })
  t.equal(await step('the same token, now known', signed, editor, 200, { answered: 1, handedOver: 0 }), first, 'the route\'s body')
  t.match(await step('a known token without the role', admins, editor, 403, { answered: 0, handedOver: 1 }), /TRB_ERR_AUTH_FORBIDDEN/)
  const viaRoute = await route(app, claimed, as(editor))
  t.equal(await step('@fromClaim: the route sets the variable', claimed, editor, 200, { answered: 0, handedOver: 1 }), viaRoute.body)
  t.match(await step('@fromClaim sent by the client', { ...claimed, variables: { sub: 'x' } }, editor, 400, { answered: 0, handedOver: 1 }), /comes from the token/)
})

t.test('production: stored operations early, other documents refused by the route (persisted only)', async (t) => {
  const { app, url } = await startDemo(t, { listen: true, override: { mode: 'production' } })
  const tally = app.earlyGraphQL
  const stored = await post(url, { query: TODO_BY_ID, variables: { id: 1 } })
  t.equal(stored.status, 200)
  t.same({ ...tally }, { answered: 1, handedOver: 0 }, 'a stored text: answered early')
  const other = await post(url, { query: '{ todo_findUniqueTodo(where: { id: 1 }) { id } }' })
  t.equal(other.status, 400)
  t.match(await other.json(), { errors: [{ extensions: { code: 'TRB_ERR_PERSISTED_ONLY' } }] })
  t.same({ ...tally }, { answered: 1, handedOver: 1 }, 'another text: the route refuses it')
})

t.test('tributary dev (in-flight requests counted): nothing is answered early', async (t) => {
  const demo = await startDemo(t)
  const app = await buildApp(demo.gateway, { logger: false, trackInFlight: true })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const a = app.server.address()
  const res = await post(`http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`, { query: TODO_BY_ID })
  t.equal(res.status, 200)
  t.match(await res.json(), { data: { todo_findUniqueTodo: { id: 1 } } })
  t.same({ ...app.earlyGraphQL }, { answered: 0, handedOver: 0 })
})
