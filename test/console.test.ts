/**
 * The admin console's API (README "Admin console", gateway/http/console.ts): its shapes on the demo,
 * the traffic window, access in development and production, and the attack tests: bounded search,
 * foreign origins, and no console route carrying a secret of the config (a database password, a
 * REST source's header token, the admin secret).
 */
import t from 'tap'
import pg from 'pg'
import { resolveConfig, type TributaryConfigInput } from '../gateway/config/index.js'
import { startDemo } from './helpers/demo.js'
import { mint } from './helpers/auth.js'
import { run, upgrade } from './helpers/ws.js'
import { postgresUrl } from './helpers/chinook.js'
import { createRoleService } from '../datasources/system/service.js'

const API = ['/console/api/overview', '/console/api/sources', '/console/api/schema', '/console/api/schema?namespace=todo', '/console/api/operations', '/console/api/traffic']

t.test('development: the API on the demo', async (t) => {
  const { app } = await startDemo(t)
  const pageRes = await app.inject({ method: 'GET', url: '/console' })
  t.equal(pageRes.statusCode, 200)
  t.match(pageRes.body, /<script src="\/console\/assets\/console\.js\?v=/, 'the page loads the bundle')
  t.match(pageRes.headers['content-security-policy'], /script-src 'self'/)
  const bundle = await app.inject({ method: 'GET', url: '/console/assets/console.js' })
  t.equal(bundle.statusCode, 200, 'the bundle is served (npm run build)')
  t.match(bundle.headers['content-type'], /text\/javascript/)
  for (const asset of ['swagger-ui-bundle.js', 'plugin-explorer.umd.js', 'graphiql.mjs', 'openapi.js']) {
    t.equal((await app.inject({ method: 'GET', url: `/console/assets/${asset}` })).statusCode, 200, `${asset} is served from the gateway`)
  }
  t.equal((await app.inject({ method: 'GET', url: '/console/assets/nope.js' })).statusCode, 404)
  const playground = await app.inject({ method: 'GET', url: '/graphql', headers: { accept: 'text/html' } })
  t.match(playground.body, /<a class="tributary-playground-console" href="\/console">/, 'the playground links the console')
  const graphiql = await app.inject({ method: 'GET', url: '/console/graphiql' })
  t.match(graphiql.body, /plugin-explorer\.umd\.js/, 'GraphiQL with the explorer plugin')
  t.match(graphiql.body, /The stored operation \w+ \(operations\//, 'and the deployment\'s default query')

  const sources = (await app.inject({ method: 'GET', url: '/console/api/sources' })).json()
  t.same(sources.sources.map((s: { name: string; kind: string }) => [s.name, s.kind]), [['todo', 'database'], ['system', 'rest'], ['demo', 'schema']])
  const todo = sources.sources[0]
  t.equal(todo.namespace, 'todo')
  t.equal(todo.health.status, 'up')
  t.type(todo.health.latencyMs, 'number', 'the probe latency')
  t.ok(todo.rootFields.query.includes('todo_findUniqueTodo'))
  t.ok(todo.rootFields.mutation.includes('todo_createOneTodo'))
  t.ok(todo.types.includes('todo_Todo'))
  t.match(todo.url, /^sqlite:/)
  t.equal(sources.sources[1].url.startsWith('http://127.0.0.1:'), true, 'the REST source\'s base URL')

  const search = (await app.inject({ method: 'GET', url: '/console/api/schema?q=Todo' })).json()
  t.equal(search.types[0].name, 'todo_Todo', 'searching without the prefix finds the type first')
  const ns = (await app.inject({ method: 'GET', url: '/console/api/schema?namespace=todo' })).json()
  const todoType = ns.types.find((x: { name: string }) => x.name === 'todo_Todo')
  const title = todoType.fields.find((f: { name: string }) => f.name === 'title')
  t.equal(title.column, 'title', 'a field names its column')
  t.match(title.dataType, /char|text/, 'and the column\'s declared type')
  t.equal(todoType.shortName, 'Todo')
  t.ok(ns.types.some((x: { name: string }) => x.name === 'Query'), 'the root fields of the source')

  const ops = (await app.inject({ method: 'GET', url: '/console/api/operations' })).json()
  const byId = ops.operations.find((o: { name: string }) => o.name === 'TodoById')
  t.equal(byId.method, 'GET')
  t.equal(byId.path, '/operations/TodoById')
  t.same(byId.routes, [{ method: 'GET', path: '/api/v1/todo/:id/' }])
  t.same(byId.variablesSchema.properties.id.type, ['integer', 'null'])
  t.match(byId.curl, /^curl 'http:\/\/localhost:80\/operations\/TodoById\?id=1'$/)
  t.equal(byId.clientCall, 'const data = await client.TodoById({id: 1})')
  const create = ops.operations.find((o: { name: string }) => o.name === 'CreateTodo')
  t.equal(create.method, 'POST')
  t.match(create.curl, /-X POST .* -d '\{"title":"text"/)
  t.notOk(ops.operations.some((o: { name: string }) => o.name.startsWith('internal/')), 'internal operations are not listed')

  // Traffic: the requests made here, per operation and per source, and the errors.
  for (let i = 0; i < 3; i++) t.equal((await app.inject({ method: 'GET', url: '/operations/TodoById?id=1' })).statusCode, 200)
  await app.inject({ method: 'GET', url: '/operations/TodoById?id=notanumber' })
  await app.inject({ method: 'POST', url: '/graphql', payload: { query: 'query Named { todo_findManyTodo(take: 1) { id } }', operationName: 'Named' } })
  await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ nope }' } })
  const traffic = (await app.inject({ method: 'GET', url: '/console/api/traffic' })).json()
  t.equal(traffic.windowMinutes, 15)
  const row = traffic.operations.find((o: { name: string }) => o.name === 'TodoById')
  t.equal(row.count, 4, 'every call of TodoById is counted')
  t.equal(row.errorRate, 0.25, 'one of them failed')
  t.type(row.p50, 'number')
  t.ok(row.p99 >= row.p50)
  t.equal(row.perMinute.length, 15)
  t.ok(traffic.operations.some((o: { name: string }) => o.name === 'Named'), 'a /graphql operation by its name')
  t.ok(traffic.sources.some((s: { name: string; count: number }) => s.name === 'todo' && s.count >= 4), 'the SQL statements, per source')
  t.ok(traffic.operations.every((o: { name: string }) => !o.name.includes('console')), 'the console does not count itself')
  const codes = traffic.errors.map((e: { code: string }) => e.code)
  t.ok(codes.includes('TRB_ERR_OPERATION_VARIABLES'), 'the last errors carry their code')
  t.ok(codes.includes('TRB_ERR_GRAPHQL_VALIDATION'))
  t.ok(traffic.errors.every((e: { time: string; operation: string }) => e.time && e.operation))
})

t.test('development: access; WebSocket operations in the traffic window', async (t) => {
  const { app, url } = await startDemo(t, { listen: true })
  const ws = await upgrade(url)
  if (!ws.open) throw new Error('the upgrade was refused')
  t.teardown(() => ws.socket.close())
  const result = await run(ws.socket, 'query OverTheSocket { todo_findManyTodo(take: 1) { id } }')
  t.ok(result.data, 'a query over WebSocket')
  const traffic = (await app.inject({ method: 'GET', url: '/console/api/traffic' })).json()
  t.ok(traffic.operations.some((o: { name: string; count: number }) => o.name === 'OverTheSocket' && o.count === 1), 'WebSocket operations are counted by name')
  const far = await app.inject({ method: 'GET', url: '/console/api/sources', remoteAddress: '10.1.2.3' })
  t.equal(far.statusCode, 401, 'only loopback clients are let in without a secret')
  t.equal(far.json().errors[0].extensions.code, 'TRB_ERR_CONSOLE_DENIED')
  const foreign = await app.inject({ method: 'GET', url: '/console/api/sources', headers: { origin: 'http://evil.example' } })
  t.equal(foreign.statusCode, 403, 'a foreign Origin is refused')
  t.equal(foreign.json().errors[0].extensions.code, 'TRB_ERR_ORIGIN_FORBIDDEN')
  const own = await app.inject({ method: 'GET', url: '/console/api/overview', headers: { origin: 'http://localhost:80', host: 'localhost:80' } })
  t.equal(own.statusCode, 200, 'the gateway\'s own origin passes')
  const long = await app.inject({ method: 'GET', url: `/console/api/schema?q=${'a'.repeat(101)}` })
  t.equal(long.statusCode, 400, 'a search past 100 characters is refused')
  t.equal(long.json().errors[0].extensions.code, 'TRB_ERR_BAD_REQUEST')
  const twice = await app.inject({ method: 'GET', url: '/console/api/schema?q=a&q=b' })
  t.equal(twice.statusCode, 400)
  const nothing = (await app.inject({ method: 'GET', url: '/console/api/schema?q=zzzzqqq' })).json()
  t.same(nothing.types, [])
})

t.test('production: off by default; on, behind the admin secret or a role', async (t) => {
  t.throws(() => resolveConfig({ mode: 'production', datasources: [], console: { enabled: true } }), { code: 'TRB_ERR_CONFIG_INVALID' }, 'on in production needs a secret or auth.jwt')
  t.throws(() => resolveConfig({ mode: 'development', datasources: [], console: { adminSecret: 'short' } }), { code: 'TRB_ERR_CONFIG_INVALID' }, 'a secret of 16 characters or more')
  t.throws(() => resolveConfig({ mode: 'development', datasources: [], console: { enable: true } }), { code: 'TRB_ERR_CONFIG_INVALID' }, 'unknown keys are refused')

  const off = await startDemo(t, { override: { mode: 'production' } })
  t.equal((await off.app.inject({ method: 'GET', url: '/console' })).statusCode, 404, 'off by default in production')
  t.equal((await off.app.inject({ method: 'GET', url: '/console/api/sources' })).statusCode, 404)

  const secret = 'an-admin-secret-of-some-length'
  const jwtSecret = 'a-jwt-secret-that-is-32-chars-long!!'
  const on = await startDemo(t, { override: { mode: 'production', console: { enabled: true, adminSecret: secret, roles: ['ops'] }, auth: { jwt: { secret: jwtSecret } } } as Partial<TributaryConfigInput> })
  const get = (headers: Record<string, string> = {}) => on.app.inject({ method: 'GET', url: '/console/api/overview', headers })
  const none = await get()
  t.equal(none.statusCode, 401, 'loopback is not enough in production')
  t.equal(none.json().errors[0].extensions.code, 'TRB_ERR_CONSOLE_DENIED')
  t.equal((await get({ 'x-tributary-admin-secret': 'wrong' })).statusCode, 401)
  t.equal((await get({ 'x-tributary-admin-secret': secret })).statusCode, 200, 'the admin secret opens it')
  const key = new TextEncoder().encode(jwtSecret)
  const ops = await mint(key, { sub: 'a', roles: ['ops'] }, { expiresIn: '5m' })
  const user = await mint(key, { sub: 'b', roles: ['user'] }, { expiresIn: '5m' })
  t.equal((await get({ authorization: `Bearer ${ops}` })).statusCode, 200, 'a token with a role of console.roles opens it')
  const forbidden = await get({ authorization: `Bearer ${user}` })
  t.equal(forbidden.statusCode, 403, 'a token without the role is forbidden')
  t.equal(forbidden.json().errors[0].extensions.code, 'TRB_ERR_CONSOLE_DENIED')
  t.equal((await get({ authorization: 'Bearer not-a-token' })).statusCode, 401)
  t.equal((await on.app.inject({ method: 'GET', url: '/console' })).statusCode, 200, 'the page itself holds no data')

  // production: errors carry no message (never a variable's value)
  await on.app.inject({ method: 'GET', url: '/operations/TodoById?id=secretvalue' })
  const traffic = await on.app.inject({ method: 'GET', url: '/console/api/traffic', headers: { 'x-tributary-admin-secret': secret } })
  t.notMatch(traffic.body, /secretvalue/, 'no variable value in the errors')
  t.ok(traffic.json().errors.every((e: { message: unknown }) => e.message === null))
})

t.test('attack: no console route carries a secret of the config', async (t) => {
  const client = new pg.Client({ connectionString: postgresUrl(), connectionTimeoutMillis: 2000 })
  try {
    await client.connect()
  } catch (err) {
    t.pass(`skipped: PostgreSQL is unreachable (${(err as Error).message})`)
    return
  }
  const roles = await createRoleService({ logger: false })
  await roles.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => roles.close())
  const address = roles.server.address()
  const roleServiceUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  const schema = `console_attack_${process.pid}`
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}; CREATE TABLE IF NOT EXISTS ${schema}.item (id serial primary key, name text)`)
  t.teardown(async () => {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await client.end()
  })
  const password = 'Pg-Passw0rd-Never-Shown'
  const token = 'header-token-never-shown-123'
  const url = new URL(postgresUrl())
  url.password = password
  const { app } = await startDemo(t, {
    override: {
      datasources: [
        (await import('../datasources/todo/index.js')).default,
        { kind: 'rest', namespace: 'system', openapi: `${roleServiceUrl}/openapi.json?api_key=${token}x`, baseUrl: roleServiceUrl, headers: { authorization: `Bearer ${token}`, 'x-api-key': token } },
        { kind: 'database', namespace: 'pgx', url: `${url.href}?sslmode=disable`, schema },
        (await import('../datasources/demo/index.js')).default,
      ],
    } as Partial<TributaryConfigInput>,
  })
  const sources = (await app.inject({ method: 'GET', url: '/console/api/sources' })).json()
  const pgx = sources.sources.find((s: { name: string }) => s.name === 'pgx')
  t.match(pgx.url, /^postgres(ql)?:\/\/postgres:\*\*\*\*@127\.0\.0\.1:5432\/test/, 'the password is masked in the URL')
  t.equal(pgx.health.status, 'up')
  const system = sources.sources.find((s: { name: string }) => s.name === 'system')
  t.notMatch(JSON.stringify(system), /header-token/)
  for (const path of [...API, '/console/api/schema?q=item', '/console/api/schema?namespace=pgx', '/console/api/schema?namespace=system', '/console', '/console/graphiql', '/console/openapi']) {
    const res = await app.inject({ method: 'GET', url: path })
    t.equal(res.statusCode, 200, path)
    t.notOk(res.body.includes(password) || res.body.includes(encodeURIComponent(password)), `${path}: no database password`)
    t.notOk(res.body.includes(token), `${path}: no header token`)
  }
})
