/**
 * TypeScript operations (`operations/**\/*.ts`, gateway/operations/typescript.ts) and
 * `operations.defaults`, on the demo's real SQLite todo database and real role service: GET/POST/SSE,
 * the zod input's 400 body, auth and rbac (also through the in-process client), internal operations
 * reached in process only, OperationError and masked handler errors, the handler timeout, live
 * queries, folders as namespaces, OpenAPI and the typed client, and the development reload of a `.ts`
 * file that does not compile.
 */
import t from 'tap'
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import { startDemo } from './helpers/demo.js'
import { mint } from './helpers/auth.js'
import { clientProject } from './helpers/client-project.js'
import { renderClient, renderOperationRegistry } from '../gateway/codegen/client.js'
import { buildOpenApiDocument } from '../gateway/codegen/openapi.js'
import { reloadOperations } from '../gateway/runtime.js'
import { loadTypeScriptOperation } from '../gateway/operations/load.js'
import { compileTypeScriptOperation } from '../gateway/operations/typescript.js'
import { resolveConfig, schema } from '../gateway/config/index.js'
import { describeAuthRules as describeAuth } from '../gateway/auth/directives.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const fixtures = join(root, 'test/fixtures/operations-typescript')
const secret = 'typescript-operations-secret-0123456789'
const key = new TextEncoder().encode(secret)
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** The `data:` events of an SSE body. */
const events = (text: string) => text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>)

t.test('development gateway', async (t) => {
  const { url, gateway } = await startDemo(t, { listen: true, override: { auth: { jwt: { secret } }, operations: { dir: fixtures, maxCallDepth: 4 } } })
  const admin = await mint(key, { sub: 'ada', roles: ['admin'] }, { expiresIn: '1h' })
  const user = await mint(key, { sub: 'bob', roles: ['user'] }, { expiresIn: '1h' })

  t.test('GET and POST of a query that calls two stored operations in process (one internal)', async (t) => {
    const get = await fetch(`${url}/operations/todos/get?id=2&upper=true`)
    t.equal(get.status, 200)
    t.same(await get.json(), { title: 'ADD A DATA SOURCE IN CONFIG.TS', roles: ['admin', 'user'] })
    t.match(get.headers.get('etag'), /^W\//, 'an ETag like any GET operation')
    const post = await fetch(`${url}/operations/todos/get`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 1 }) })
    t.equal(post.status, 200)
    t.same(await post.json(), { title: 'Read docs/architecture.md', roles: ['admin', 'user'] }, 'the zod default upper=false applied')
    const internal = await fetch(`${url}/operations/internal/Roles`)
    t.equal(internal.status, 404, 'the internal operation the handler called is not served over HTTP')
    t.equal(((await internal.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code, 'TRB_ERR_OPERATION_NOT_FOUND')
  })

  t.test('bad input: the 400 body of a .graphql operation', async (t) => {
    const typed = await fetch(`${url}/operations/todos/get?id=abc`)
    t.equal(typed.status, 400)
    const body = (await typed.json()) as { errors: { message: string; extensions: Record<string, unknown> }[] }
    t.match(body.errors[0], { message: /Variable "id" must be integer/, extensions: { code: 'TRB_ERR_OPERATION_VARIABLES', variable: 'id', instancePath: '/id' } })
    const missing = await fetch(`${url}/operations/todos/get`)
    t.equal(missing.status, 400)
    t.match(((await missing.json()) as typeof body).errors[0], { message: 'Variable "id" is required', extensions: { code: 'TRB_ERR_OPERATION_VARIABLES', variable: 'id' } })
    const extra = await fetch(`${url}/operations/todos/get`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: -1 }) })
    t.equal(extra.status, 400, 'a zod rule (positive) that JSON Schema holds too')
    t.equal(((await extra.json()) as typeof body).errors[0].extensions.code, 'TRB_ERR_OPERATION_VARIABLES')
    const array = await fetch(`${url}/operations/todos/get`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[1]' })
    t.equal(array.status, 400)
    const deep = await fetch(`${url}/operations/todos/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(admin) },
      body: JSON.stringify({ title: 'x'.repeat(101) }),
    })
    t.equal(deep.status, 400, 'max(100) of the zod schema')
    const notFound = await fetch(`${url}/operations/todos/get?id=999999`)
    t.equal(notFound.status, 404, 'an OperationError thrown by the handler keeps its status')
    t.match(await notFound.json(), { errors: [{ message: 'no todo 999999', extensions: { code: 'TRB_ERR_OPERATION_ERROR', originalCode: 'NotFound' } }] })
  })

  t.test('mutations: POST only, rbac, the caller identity reaches the handler and the callee', async (t) => {
    const viaGet = await fetch(`${url}/operations/todos/create?title=x`, { headers: bearer(admin) })
    t.equal(viaGet.status, 405)
    t.equal(viaGet.headers.get('allow'), 'POST')
    const anon = await fetch(`${url}/operations/todos/create`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'x' }) })
    t.equal(anon.status, 401)
    const forbidden = await fetch(`${url}/operations/todos/create`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(user) }, body: JSON.stringify({ title: 'x' }) })
    t.equal(forbidden.status, 403)
    const created = await fetch(`${url}/operations/todos/create`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(admin) }, body: JSON.stringify({ title: 'from TS' }) })
    t.equal(created.status, 200)
    const todo = (await created.json()) as { id: number; title: string }
    t.equal(todo.title, 'from TS (by ada)')
    const back = await fetch(`${url}/operations/TodoById?id=${todo.id}`)
    t.equal(((await back.json()) as { todo_findUniqueTodo: { title: string } }).todo_findUniqueTodo.title, 'from TS (by ada)', 'written to SQLite')
  })

  t.test('the in-process client keeps the callee auth checks', async (t) => {
    const anon = await fetch(`${url}/operations/Whoami`)
    t.same(await anon.json(), { sub: null, roles: [], adminRoles: 'TRB_ERR_AUTH_REQUIRED', method: 'GET' })
    const asUser = await fetch(`${url}/operations/Whoami`, { headers: bearer(user) })
    t.same(await asUser.json(), { sub: 'bob', roles: ['user'], adminRoles: 'TRB_ERR_AUTH_FORBIDDEN', method: 'GET' })
    const asAdmin = await fetch(`${url}/operations/Whoami`, { headers: bearer(admin) })
    t.same(await asAdmin.json(), { sub: 'ada', roles: ['admin'], adminRoles: 'ok', method: 'GET' })
  })

  t.test('fromClaim: a field set from the token, required authentication, never sent by the client', async (t) => {
    const anon = await fetch(`${url}/operations/MyTodos`)
    t.equal(anon.status, 401, 'fromClaim implies requireAuthentication')
    t.match(await anon.json(), { errors: [{ extensions: { code: 'TRB_ERR_AUTH_REQUIRED' } }] })
    const mine = await fetch(`${url}/operations/MyTodos?take=3`, { headers: bearer(admin) })
    t.equal(mine.status, 200)
    t.same(await mine.json(), { owner: 'ada', take: 3 }, 'the handler sees the claim in its input, validated by zod')
    const forged = await fetch(`${url}/operations/MyTodos`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(admin) }, body: JSON.stringify({ owner: 'bob' }) })
    t.equal(forged.status, 400, 'a client cannot supply the claimed field')
    t.match(await forged.json(), { errors: [{ message: /owner/, extensions: { code: 'TRB_ERR_OPERATION_VARIABLES' } }] })
    const forgedGet = await fetch(`${url}/operations/MyTodos?owner=bob`, { headers: bearer(admin) })
    t.equal(forgedGet.status, 400, 'nor as a query parameter')
    const short = await fetch(`${url}/operations/MyTodos`, { headers: bearer(await mint(key, { sub: 'x', roles: [] }, { expiresIn: '1h' })) })
    t.equal(short.status, 403, 'a claim the field\'s schema refuses (min 2) is a 403, as for @fromClaim')
    t.match(await short.json(), { errors: [{ extensions: { code: 'TRB_ERR_AUTH_FORBIDDEN' } }] })
    const noSub = await fetch(`${url}/operations/MyTodos`, { headers: bearer(await mint(key, { roles: [] }, { expiresIn: '1h' })) })
    t.equal(noSub.status, 403, 'a token without the claim')
    const schema = gateway.operations.get('MyTodos')!.variablesSchema
    t.same(Object.keys(schema.properties ?? {}), ['take'], 'the claimed field is not public input (JSON Schema, OpenAPI, typed client)')
    t.match(describeAuth(gateway.operations.get('MyTodos')!.stored.auth), /\$owner comes from the token's "sub" claim/)
    const inProcess = await fetch(`${url}/operations/CallsMyTodos`, { headers: bearer(user) })
    t.same(await inProcess.json(), { plain: { owner: 'bob', take: 1 }, forged: 'TRB_ERR_OPERATION_VARIABLES' }, 'in process too: the caller\'s claim, and no forged field')
  })

  t.test('subscriptions as Server-Sent Events; bad input before the stream opens', async (t) => {
    const res = await fetch(`${url}/operations/Counter?to=3`, { headers: { accept: 'text/event-stream' } })
    t.equal(res.status, 200)
    t.match(res.headers.get('content-type'), /text\/event-stream/)
    t.same(events(await res.text()), [{ data: { n: 1 } }, { data: { n: 2 } }, { data: { n: 3 } }], 'one event per yield, then the stream ends')
    const bad = await fetch(`${url}/operations/Counter?to=50`, { headers: { accept: 'text/event-stream' } })
    t.equal(bad.status, 400, 'max(5): no stream for a bad input')
    t.equal(((await bad.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code, 'TRB_ERR_OPERATION_VARIABLES')
    const noAccept = await fetch(`${url}/operations/Counter?to=1`)
    t.equal(noAccept.status, 406)
    await noAccept.text()
  })

  t.test('live query: the handler runs again on its interval', async (t) => {
    const controller = new AbortController()
    const res = await fetch(`${url}/operations/Ticker?live=true`, { headers: { accept: 'text/event-stream' }, signal: controller.signal })
    t.equal(res.status, 200)
    const reader = res.body!.getReader()
    const seen: Record<string, unknown>[] = []
    let text = ''
    while (seen.length < 2) {
      const { value, done } = await reader.read()
      if (done) break
      text += new TextDecoder().decode(value)
      seen.splice(0, seen.length, ...events(text))
    }
    controller.abort()
    t.equal(seen.length, 2)
    const runs = seen.map((e) => (e.data as { runs: number }).runs)
    t.ok(runs[1] > runs[0], `a changed result each interval (${runs.join(', ')})`)
  })

  t.test('handler errors and bounds', async (t) => {
    const boom = await fetch(`${url}/operations/Boom`)
    t.equal(boom.status, 500)
    const body = (await boom.json()) as { errors: { message: string; extensions: { code: string } }[] }
    t.equal(body.errors[0].extensions.code, 'TRB_ERR_OPERATION_HANDLER')
    t.match(body.errors[0].message, /secret detail/, 'development shows the message')

    const recurse = await fetch(`${url}/operations/Recurse`)
    const recursed = await recurse.json()
    t.equal(recurse.status, 500, `a self-call chain stops at maxCallDepth: ${JSON.stringify(recursed)}`)
    t.match(recursed, { errors: [{ message: /operations\.maxCallDepth/, extensions: { code: 'TRB_ERR_OPERATION_HANDLER' } }] })
  })

  t.test('OpenAPI entry and the typed client (tsc on the generated code)', async (t) => {
    const doc = buildOpenApiDocument(gateway) as { paths: Record<string, Record<string, { parameters?: { name: string }[]; description?: string; requestBody?: unknown }>> }
    const get = doc.paths['/operations/todos/get']
    t.ok(get?.get && get?.post, 'GET and POST of the query')
    t.same(get.get.parameters?.map((p) => p.name).filter((n) => n === 'id' || n === 'upper').sort(), ['id', 'upper'])
    t.match(get.get.description, /operations\/todos\/get\.ts/)
    t.ok(doc.paths['/operations/todos/create']?.post, 'POST of the mutation')
    t.notOk(doc.paths['/operations/todos/create']?.get)
    t.notOk(doc.paths['/operations/internal/Roles'], 'internal operations are not documented')

    t.match(renderClient(gateway), /export type Todos_getVariables = /)
  })

  t.test('the typed client, and the handler\'s operations client typed per operation from generated/ (tsc: right calls pass, wrong ones fail)', async (t) => {
    const source = renderClient(gateway)
    const registry = renderOperationRegistry(gateway)
    t.match(registry, /"internal\/Roles": \{ kind: "query"/, 'internal operations are in the registry, with their kind')
    t.notMatch(source, /internal\/Roles/, 'and not in the browser client')
    t.match(registry, /declare module 'tributary-gateway' \{\n {2}interface OperationRegistry extends ServerOperations, InternalOperations \{\}/)
    t.notMatch(source, /declare module/, 'the browser client itself augments nothing')
    const project = clientProject(t, source, { packages: ['zod'], files: { 'operations.ts': registry } })
    // One tsc run: the browser client's calls, and an operation's in-process calls.
    const check = project.typecheckWithStrict(`
import { z } from 'zod'
import { createOperation } from 'tributary-gateway'
import { createClient, type Todos_getResponse, type Todos_getVariables } from './client.js'
const client = createClient({ baseUrl: 'http://127.0.0.1:1' })
const vars: Todos_getVariables = { id: 1 }
const answer: Promise<Todos_getResponse> = client.todos_get(vars)
void answer.then((a) => a.title.toUpperCase() + a.roles.join(','))
// @ts-expect-error id is a number
void client.todos_get({ id: 'one' })
void client.todos_create({ title: 'x' })
for await (const e of client.Counter({ to: 2 })) void e

export default createOperation.query({
  input: z.object({ id: z.number().int() }),
  handler: async ({ input, operations }) => {
    const todo = await operations.query({ operationName: 'TodoById', input: { id: input.id } })
    const title: string | undefined = todo.data?.todo_findUniqueTodo?.title
    const roles = await operations.query({ operationName: 'internal/Roles' })
    const codes: string[] = (roles.data?.system_getAllRoles ?? []).map((r) => r.code)
    const created = await operations.mutate({ operationName: 'todos/create', input: { title: 'x' } })
    const events = await operations.subscribe({ operationName: 'Counter', input: { to: 2 } })
    // @ts-expect-error id must be a number
    await operations.query({ operationName: 'TodoById', input: { id: 'one' } })
    // @ts-expect-error todos/get needs its input (id is required)
    await operations.query({ operationName: 'todos/get' })
    // @ts-expect-error no operation of that name
    await operations.query({ operationName: 'Nope' })
    // @ts-expect-error a mutation is run with mutate
    await operations.query({ operationName: 'todos/create', input: { title: 'x' } })
    // @ts-expect-error the data is typed: no such field
    void todo.data?.todo_findUniqueTodo?.nope
    return { title, codes, created: created.data, events }
  },
})
`)
    t.equal(check.main.status, 0, `the right calls type-check:\n${check.main.output}`)
    t.equal(check.strict.status, 1, 'each wrong call is a compile error')
    const lines = new Set([...check.strict.output.matchAll(/strict\.ts\((\d+),\d+\): error TS/g)].map((m) => m[1]))
    t.equal(lines.size, 6, `an error on each of the six wrong calls (five in process, one of the client):\n${check.strict.output}`)
  })

  t.test('development reload of a .ts file: file:line:column for a syntax error, then the fixed file is served', async (t) => {
    const dir = mkdtempSync(join(root, 'test/fixtures/.tmp-tsops-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    cpSync(fixtures, dir, { recursive: true })
    const current = { ...gateway, config: { ...gateway.config, operations: { ...gateway.config.operations, dir } } }
    writeFileSync(join(dir, 'Broken.ts'), `import { createOperation } from '../../../gateway/operations/define.js'\n\nexport default createOperation.query({\n  handler: () => ({ ok: true ),\n})\n`)
    const shown = join(dir, 'Broken.ts').slice(process.cwd().length + 1)
    await t.rejects(reloadOperations(current, { cwd: process.cwd(), logger: pino({ level: 'silent' }) }), { code: 'TRB_ERR_OPERATION_INVALID', message: new RegExp(`^${shown.replace(/[.]/g, '\\.')}:4:\\d+: `) })
    writeFileSync(join(dir, 'Broken.ts'), `export default { not: 'an operation' }\n`)
    await t.rejects(reloadOperations(current, { cwd: process.cwd() }), { message: new RegExp(`${shown.replace(/[.]/g, '\\.')}:1:1: a TypeScript operation file must default-export`) })
    writeFileSync(join(dir, 'Broken.ts'), `import { createOperation } from '../../../gateway/operations/define.js'\nexport default createOperation.query({ handler: () => ({ fixed: 1 }) })\n`)
    const next = await reloadOperations(current, { cwd: process.cwd() })
    const result = await next.operations.get('Broken')!.execute({}, { headers: {} })
    t.same(result.data, { fixed: 1 })
    writeFileSync(join(dir, 'Broken.ts'), `import { createOperation } from '../../../gateway/operations/define.js'\nexport default createOperation.query({ handler: () => ({ fixed: 2 }) })\n`)
    const again = await reloadOperations(next, { cwd: process.cwd() })
    t.same((await again.operations.get('Broken')!.execute({}, { headers: {} })).data, { fixed: 2 }, 'the edited file is imported afresh')
  })
})

t.test('production gateway with operations.defaults', async (t) => {
  const { url } = await startDemo(t, {
    listen: true,
    override: {
      mode: 'production',
      auth: { jwt: { secret } },
      operations: { dir: fixtures, handlerTimeoutMs: 500, defaults: { queries: { authentication: true, cache: { maxAge: 30 }, live: false }, mutations: { authentication: true } } },
    },
  })
  const user = await mint(key, { sub: 'bob', roles: ['user'] }, { expiresIn: '1h' })

  t.test('a thrown error is masked in production', async (t) => {
    const boom = await fetch(`${url}/operations/Boom`, { headers: bearer(user) })
    t.equal(boom.status, 500)
    const text = await boom.text()
    t.notMatch(text, /secret|hunter2|at /, 'neither the message nor a stack')
    t.match(JSON.parse(text), { errors: [{ message: /^The handler of operation Boom failed: id [0-9a-f-]{36}$/, extensions: { code: 'TRB_ERR_OPERATION_HANDLER' } }] })
  })

  t.test('handler timeout (attack: the client picks the duration)', async (t) => {
    // Attack: the client picks how long the handler sleeps; the gateway cuts it at handlerTimeoutMs.
    const started = Date.now()
    const slow = await fetch(`${url}/operations/Sleep?ms=600000`, { headers: bearer(user) })
    const took = Date.now() - started
    t.equal(slow.status, 504)
    t.match(await slow.json(), { errors: [{ extensions: { code: 'TRB_ERR_OPERATION_TIMEOUT' } }] })
    t.ok(took < 5000, `answered at the timeout (${took} ms), not after the requested 10 minutes`)
    const quick = await fetch(`${url}/operations/Sleep?ms=1`, { headers: bearer(user) })
    t.same(await quick.json(), { slept: 1 })

  })

  t.test('defaults apply and are overridden per operation', async (t) => {
    const anonTs = await fetch(`${url}/operations/Whoami`)
    t.equal(anonTs.status, 401, 'defaults.queries.authentication on a TypeScript query')
    await anonTs.text()
    const anonGraphql = await fetch(`${url}/operations/Cached`)
    t.equal(anonGraphql.status, 401, 'and on a .graphql query')
    await anonGraphql.text()
    const cached = await fetch(`${url}/operations/Cached`, { headers: bearer(user) })
    t.equal(cached.status, 200)
    t.equal(cached.headers.get('cache-control'), 'private, max-age=30', 'defaults.queries.cache (private: the request carries credentials)')
    await cached.text()

    const pub = await fetch(`${url}/operations/Public`)
    t.equal(pub.status, 200, 'requireAuthentication: false overrides the default')
    t.equal(pub.headers.get('cache-control'), 'public, max-age=0, must-revalidate', 'cache: false: no default cache')
    t.same(await pub.json(), { ok: true })
    const open = await fetch(`${url}/operations/Open`)
    t.equal(open.status, 200, '# @authentication off overrides the default')
    t.equal(open.headers.get('cache-control'), 'public, max-age=5', '# @cache overrides the default cache')
    await open.text()

    const live = await fetch(`${url}/operations/Cached?live=true`, { headers: { accept: 'text/event-stream', ...bearer(user) } })
    t.equal(live.status, 400, 'defaults.queries.live: false')
    t.match(await live.json(), { errors: [{ extensions: { code: 'TRB_ERR_BAD_REQUEST' } }] })
    const ownLive = await fetch(`${url}/operations/Ticker?live=true`, { headers: { accept: 'text/event-stream', ...bearer(user) } })
    t.equal(ownLive.status, 200, 'an operation with its own live setting stays live')
    await ownLive.body?.cancel()

    const mutation = await fetch(`${url}/operations/CreateTodo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'x' }) })
    t.equal(mutation.status, 401, 'defaults.mutations.authentication')
    await mutation.text()
  })
})

t.test('config validation of the new options', async (t) => {
  t.throws(() => resolveConfig({ datasources: [schema({ typeDefs: 'type Query { a: Int }' })], operations: { handlerTimeoutMs: 0 } }), { code: 'TRB_ERR_CONFIG_INVALID', message: /operations\.handlerTimeoutMs/ })
  t.throws(() => resolveConfig({ datasources: [schema({ typeDefs: 'type Query { a: Int }' })], operations: { defaults: { queries: { cache: { maxAge: -1 } } } } }), { message: /operations\.defaults\.queries\.cache\.maxAge/ })
  t.throws(() => resolveConfig({ datasources: [schema({ typeDefs: 'type Query { a: Int }' })], operations: { defaults: { mutations: { live: true } as never } } }), { message: /operations\.defaults\.mutations/ })
  t.throws(() => resolveConfig({ datasources: [schema({ typeDefs: 'type Query { a: Int }' })], operations: { maxCallDepth: 1000 } }), { message: /operations\.maxCallDepth/ })
  const config = resolveConfig({ datasources: [schema({ typeDefs: 'type Query { a: Int }' })] })
  t.same([config.operations.handlerTimeoutMs, config.operations.maxCallDepth], [10_000, 8], 'documented defaults')
})

t.test('fromClaim misuse is a load error naming the file', async (t) => {
  const dir = mkdtempSync(join(root, 'test/fixtures/ts-claims-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const write = (name: string, settings: string) => {
    const file = join(dir, `${name}.ts`)
    writeFileSync(file, `import { z } from 'zod'\nimport { createOperation } from '../../../gateway/operations/define.js'\nexport default createOperation.query({ input: z.object({ a: z.string() }), ${settings}, handler: ({ input }) => input } as never)\n`)
    return file
  }
  await t.rejects(loadTypeScriptOperation('Off', write('Off', "fromClaim: { a: 'sub' }, requireAuthentication: false"), 'Off.ts', true), { code: 'TRB_ERR_OPERATION_INVALID', message: /Off\.ts:1:1: fromClaim needs a token/ })
  await t.rejects(loadTypeScriptOperation('Empty', write('Empty', "fromClaim: { a: '' }"), 'Empty.ts', true), { message: /Empty\.ts:1:1: fromClaim\.a must be a claim name/ })
  const missing = await loadTypeScriptOperation('Missing', write('Missing', "fromClaim: { b: 'sub' }"), 'Missing.ts', true)
  t.throws(() => compileTypeScriptOperation(missing, { mode: 'development', logger: pino({ level: 'silent' }), operations: () => new Map() }), { code: 'TRB_ERR_OPERATION_INVALID', message: /Missing\.ts:1:1: fromClaim\.b: the input schema has no field "b"/ })
})
