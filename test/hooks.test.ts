/**
 * Hooks (README "Hooks"): operation hooks around stored operations (a direct-SQL query on SQLite, a
 * REST query, a remote GraphQL query), origin hooks seen by a real REST upstream and a real GraphQL
 * upstream on 127.0.0.1, authentication hooks against HS256 tokens, their errors, time limit, and
 * that introspection runs no hook. One development gateway for most of the file, one production
 * gateway for the masked error.
 */
import { test } from 'tap'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { IncomingMessage } from 'node:http'
import { createServer } from 'node:http'
import Database from 'better-sqlite3'
import { buildSubgraphSchema } from '@apollo/subgraph'
import { graphql as graphqlRun, parse } from 'graphql'
import { useServer } from 'graphql-ws/use/ws'
import { WebSocketServer } from 'ws'
import { makeExecutableSchema } from '@graphql-tools/schema'
import { database, federation, graphql as graphqlSource, resolveConfig, rest, schema, type TributaryConfigInput } from '../gateway/config/index.js'
import type { ConnectionInitArgs, HooksConfigInput, OperationHooks, OriginRequestArgs } from '../gateway/hooks/index.js'
import type { HooksConfig } from '../generated/client.js'
import { revalidateUser } from '../gateway/http/auth.js'
import { serveGateway } from './helpers/serve.js'
import { sendJson, startUpstream, itemsDocument } from './helpers/rest-upstream.js'
import { startGraphQLUpstream } from './helpers/graphql-upstream.js'
import { mint } from './helpers/auth.js'

const secret = 'hooks-test-secret-0123456789abcdef-0123'
const key = new TextEncoder().encode(secret)

const OPERATIONS: Record<string, string> = {
  NoteById: 'query NoteById($id: Int!) { db_findUniqueNote(where: { id: $id }) { id title } }',
  Item: 'query Item($id: String!) { items_getItem(id: $id) { id name } }',
  Greeting: 'query Greeting { gq_greeting }',
  Mine: 'query Mine($owner: String! @fromClaim(name: "sub")) @rbac(requireMatchAny: [admin]) { db_findManyNote(where: { owner: { equals: $owner } }) { id title } }',
  Plain: 'query Plain { db_findManyNote(take: 1) { id } }',
}

interface Body {
  data?: Record<string, unknown> | null
  errors?: { message: string; path?: unknown[]; extensions?: { code?: string } }[]
  [key: string]: unknown
}

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Body }> {
  const res = await fetch(url, { headers })
  return { status: res.status, body: (await res.json()) as Body }
}

function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-hooks-'))
  mkdirSync(join(dir, 'operations'), { recursive: true })
  for (const [name, text] of Object.entries(OPERATIONS)) writeFileSync(join(dir, 'operations', `${name}.graphql`), text)
  const file = join(dir, 'notes.db')
  const db = new Database(file)
  db.exec("create table Note (id integer primary key, title text not null, owner text not null); insert into Note values (1, 'first', 'ann'), (2, 'second', 'bob'), (3, 'third', 'ann')")
  db.close()
  writeFileSync(join(dir, 'items.json'), JSON.stringify(itemsDocument))
  return { dir, file }
}

test('hooks', async (t) => {
  const { dir, file } = setup()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const seenRest: IncomingMessage[] = []
  const restBodies: string[] = []
  const upstream = await startUpstream(t, (req, res) => {
    seenRest.push(req)
    let text = ''
    req.on('data', (c) => (text += c))
    req.on('end', () => {
      restBodies.push(text)
      sendJson(res, 200, { id: req.url!.split('/').pop(), name: `item at ${req.url}`, header: req.headers['x-hooked'] })
    })
  })
  const gq = await startGraphQLUpstream(t, makeExecutableSchema({
    typeDefs: 'type Query { greeting: String }',
    resolvers: { Query: { greeting: (_: unknown, __: unknown, ctx: { headers: Record<string, string> }) => `hello ${ctx.headers['x-hooked'] ?? 'nobody'}` } },
  }))

  // What each hook does, changed by the subtests.
  const calls: string[] = []
  let originRequest: (args: OriginRequestArgs) => unknown = () => undefined
  let originResponse: () => unknown = () => undefined
  let mutateUser: (user: { claims: Record<string, unknown>; roles: readonly string[] }) => unknown = (user) => ({ status: 'ok', user })
  const noteHooks: OperationHooks<{ id: number }, { db_findUniqueNote: { id: number; title: string } | null }> = {}
  const hooks: HooksConfigInput = {
    timeoutMs: 300,
    operations: { NoteById: noteHooks as OperationHooks, Item: {}, Greeting: {} },
    global: {
      onOriginRequest: { namespaces: ['items', 'gq'], hook: (args) => { calls.push(`origin:${args.namespace}`); return originRequest(args) as never } },
      onOriginResponse: { hook: () => originResponse() as never },
    },
    authentication: {
      postAuthentication: ({ user }) => { calls.push(`postAuthentication:${String(user.claims.sub)}`) },
      mutatingPostAuthentication: ({ user }) => mutateUser(user) as never,
      revalidate: ({ user }) => (user.claims.sub === 'gone' ? { status: 'deny', message: 'account closed' } : { status: 'ok', user: { ...user, roles: ['revalidated'] } }),
    },
  }
  const config = resolveConfig({
    mode: 'development',
    datasources: [
      database({ namespace: 'db', url: `sqlite:${file}` }),
      rest({ namespace: 'items', openapi: join(dir, 'items.json'), baseUrl: upstream.url }),
      graphqlSource({ namespace: 'gq', url: gq.url }),
    ],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    auth: { jwt: { secret } },
    hooks,
  } as TributaryConfigInput)
  const { url, gateway } = await serveGateway(t, config, { cwd: dir })

  t.test('mutatingPreResolve changes the input, postResolve sees the answer (direct SQL plan)', async (t) => {
    let seen: unknown
    noteHooks.preResolve = ({ input, context }) => { calls.push(`pre:${input.id}`); context.started = true }
    noteHooks.mutatingPreResolve = ({ input }) => ({ id: input.id + 1 })
    noteHooks.postResolve = ({ response, context }) => { seen = { response, started: context.started } }
    t.teardown(() => { delete noteHooks.preResolve; delete noteHooks.mutatingPreResolve; delete noteHooks.postResolve })
    const { status, body } = await get(`${url}/operations/NoteById?id=1`)
    t.equal(status, 200)
    t.same(body, { db_findUniqueNote: { id: 2, title: 'second' } })
    t.same(seen, { response: { data: { db_findUniqueNote: { id: 2, title: 'second' } } }, started: true })
    t.ok(calls.includes('pre:1'))
  })

  t.test('without post hooks the direct SQL plan still answers after mutatingPreResolve', async (t) => {
    noteHooks.mutatingPreResolve = () => ({ id: 3 })
    t.teardown(() => { delete noteHooks.mutatingPreResolve })
    t.same((await get(`${url}/operations/NoteById?id=1`)).body, { db_findUniqueNote: { id: 3, title: 'third' } })
  })

  t.test('mutatingPreResolve returning invalid input: TRB_ERR_HOOK naming the variable', async (t) => {
    noteHooks.mutatingPreResolve = () => ({ id: 'two' }) as never
    t.teardown(() => { delete noteHooks.mutatingPreResolve })
    const { status, body } = await get(`${url}/operations/NoteById?id=1`)
    t.equal(status, 500)
    t.equal(body.errors?.[0]?.extensions?.code, 'TRB_ERR_HOOK')
    t.match(body.errors?.[0]?.message, /mutatingPreResolve of NoteById.*id must be integer/)
  })

  t.test('mutatingPostResolve changes the response', async (t) => {
    noteHooks.mutatingPostResolve = ({ response }) => ({ data: { db_findUniqueNote: { id: 0, title: `${response.data?.db_findUniqueNote?.title}!` } } })
    t.teardown(() => { delete noteHooks.mutatingPostResolve })
    t.same((await get(`${url}/operations/NoteById?id=1`)).body, { db_findUniqueNote: { id: 0, title: 'first!' } })
  })

  t.test('customResolve answers instead, or lets the operation run', async (t) => {
    noteHooks.customResolve = ({ input }) => (input.id === 7 ? { data: { db_findUniqueNote: { id: 7, title: 'custom' } } } : null)
    t.teardown(() => { delete noteHooks.customResolve })
    t.same((await get(`${url}/operations/NoteById?id=7`)).body, { db_findUniqueNote: { id: 7, title: 'custom' } })
    t.same((await get(`${url}/operations/NoteById?id=1`)).body, { db_findUniqueNote: { id: 1, title: 'first' } })
  })

  t.test('mockResolve answers when enabled (default in development), not when disabled', async (t) => {
    noteHooks.mockResolve = { handler: () => ({ data: { db_findUniqueNote: { id: 99, title: 'mock' } } }) }
    t.teardown(() => { delete noteHooks.mockResolve })
    t.same((await get(`${url}/operations/NoteById?id=1`)).body, { db_findUniqueNote: { id: 99, title: 'mock' } })
    noteHooks.mockResolve.enabled = false
    t.same((await get(`${url}/operations/NoteById?id=1`)).body, { db_findUniqueNote: { id: 1, title: 'first' } })
  })

  t.test('a throwing hook: TRB_ERR_HOOK 500 with its message in development', async (t) => {
    noteHooks.preResolve = () => { throw new Error('boom at line 3') }
    t.teardown(() => { delete noteHooks.preResolve })
    const { status, body } = await get(`${url}/operations/NoteById?id=1`)
    t.equal(status, 500)
    t.equal(body.errors?.[0]?.extensions?.code, 'TRB_ERR_HOOK')
    t.match(body.errors?.[0]?.message, /preResolve of NoteById.*boom at line 3/)
  })

  t.test('attack: a hook that never settles is cut at hooks.timeoutMs', async (t) => {
    noteHooks.customResolve = () => new Promise(() => undefined)
    t.teardown(() => { delete noteHooks.customResolve })
    const started = Date.now()
    const { status, body } = await get(`${url}/operations/NoteById?id=1`)
    t.equal(status, 500)
    t.equal(body.errors?.[0]?.extensions?.code, 'TRB_ERR_HOOK_TIMEOUT')
    t.ok(Date.now() - started < 3000, 'answered soon after the 300 ms limit')
  })

  t.test('onOriginRequest changes the URL, a header and the body the REST upstream sees', async (t) => {
    originRequest = ({ request }) => ({ ...request, url: request.url.replace('/items/1', '/items/42'), headers: { ...request.headers, 'x-hooked': 'yes' } })
    t.teardown(() => { originRequest = () => undefined })
    const before = seenRest.length
    const { status, body } = await get(`${url}/operations/Item?id=1`)
    t.equal(status, 200)
    t.same(body, { items_getItem: { id: '42', name: 'item at /items/42' } })
    t.equal(seenRest[before]?.headers['x-hooked'], 'yes')
    t.equal(seenRest[before]?.url, '/items/42')
  })

  t.test('onOriginRequest changes the body sent to a GraphQL upstream and its headers', async (t) => {
    originRequest = ({ request }) => ({ ...request, headers: { ...request.headers, 'x-hooked': 'graphql' }, body: JSON.stringify({ ...JSON.parse(request.body!), query: (JSON.parse(request.body!) as { query: string }).query.replace(/\}\s*$/, ' __typename }') }) })
    t.teardown(() => { originRequest = () => undefined })
    const { status, body } = await get(`${url}/operations/Greeting`)
    t.equal(status, 200)
    t.same(body, { gq_greeting: 'hello graphql' })
    t.match(gq.requests.at(-1)?.query, /greeting\s+__typename \}/)
  })

  t.test('onOriginRequest "cancel": TRB_ERR_HOOK_CANCELLED at the field, nothing sent', async (t) => {
    originRequest = () => 'cancel'
    t.teardown(() => { originRequest = () => undefined })
    const before = upstream.total()
    const rest = await get(`${url}/operations/Item?id=1`)
    t.equal(rest.body.errors?.[0]?.extensions?.code, 'TRB_ERR_HOOK_CANCELLED')
    t.same(rest.body.errors?.[0]?.path, ['items_getItem'])
    t.equal(upstream.total(), before, 'the REST upstream saw nothing')
    const remote = await get(`${url}/operations/Greeting`)
    t.equal(remote.body.errors?.[0]?.extensions?.code, 'TRB_ERR_HOOK_CANCELLED')
  })

  t.test('onOriginRequest: a REST source keeps its origin', async (t) => {
    originRequest = ({ request }) => ({ ...request, url: 'http://127.0.0.2:9/elsewhere' })
    t.teardown(() => { originRequest = () => undefined })
    const { body } = await get(`${url}/operations/Item?id=1`)
    t.equal(body.errors?.[0]?.extensions?.code, 'TRB_ERR_HOOK')
  })

  t.test('onOriginResponse "cancel" fails the field', async (t) => {
    originResponse = () => 'cancel'
    t.teardown(() => { originResponse = () => undefined })
    const { body } = await get(`${url}/operations/Item?id=5`)
    t.equal(body.errors?.[0]?.extensions?.code, 'TRB_ERR_HOOK_CANCELLED')
    t.match(body.errors?.[0]?.message, /onOriginResponse/)
  })

  t.test('the namespace filter: database sources are not REST/GraphQL, and filtered namespaces are skipped', async (t) => {
    calls.length = 0
    await get(`${url}/operations/Plain`)
    t.notOk(calls.some((c) => c.startsWith('origin:')))
  })

  t.test('authentication hooks: mutatingPostAuthentication changes the user (@fromClaim, @rbac); deny is 401', async (t) => {
    const token = await mint(key, { sub: 'bob', roles: [] }, { expiresIn: '1h' })
    const refused = await get(`${url}/operations/Mine`, { authorization: `Bearer ${token}` })
    t.equal(refused.status, 403, 'bob is no admin')
    mutateUser = (user) => ({ status: 'ok', user: { ...user, claims: { ...user.claims, sub: 'ann' }, roles: ['admin'] } })
    const mine = await get(`${url}/operations/Mine`, { authorization: `Bearer ${token}` })
    t.equal(mine.status, 200)
    t.same(mine.body, { db_findManyNote: [{ id: 1, title: 'first' }, { id: 3, title: 'third' }] })
    t.ok(calls.includes('postAuthentication:bob'))
    mutateUser = () => ({ status: 'deny', message: 'suspended' })
    const denied = await get(`${url}/operations/Mine`, { authorization: `Bearer ${token}` })
    t.equal(denied.status, 401)
    t.equal(denied.body.errors?.[0]?.extensions?.code, 'TRB_ERR_AUTH_INVALID')
    t.match(denied.body.errors?.[0]?.message, /suspended/)
    mutateUser = () => ({ status: 'ok', user: { claims: {}, roles: 'admin' } })
    const bad = await get(`${url}/operations/Mine`, { authorization: `Bearer ${token}` })
    t.equal(bad.status, 500)
    t.equal(bad.body.errors?.[0]?.extensions?.code, 'TRB_ERR_HOOK')
    mutateUser = (user) => ({ status: 'ok', user })
  })

  t.test('revalidate: keeps, changes or denies an identity', async (t) => {
    const log = { fatal() {}, error() {}, warn() {}, info() {}, debug() {}, trace() {} } as never
    const user = { claims: { sub: 'ann' }, roles: ['admin'], token: 't' }
    t.same(await revalidateUser(gateway, user, log), { claims: { sub: 'ann' }, roles: ['revalidated'], token: 't' })
    await t.rejects(revalidateUser(gateway, { ...user, claims: { sub: 'gone' } }, log), { code: 'TRB_ERR_AUTH_INVALID', message: /account closed/ })
  })

  t.test('introspection runs no hook', async (t) => {
    calls.length = 0
    const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __schema { queryType { name } } }' }) })
    t.equal(res.status, 200)
    t.same(calls, [])
  })
})

test('production: a throwing hook gives TRB_ERR_HOOK without its message', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-hooks-prod-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'operations'))
  writeFileSync(join(dir, 'operations', 'Hi.graphql'), 'query Hi { hi }')
  const config = resolveConfig({
    mode: 'production',
    datasources: [schema({ typeDefs: 'type Query { hi: String }', resolvers: { Query: { hi: () => 'hi' } } })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    hooks: { operations: { Hi: { postResolve: () => { throw new Error('secret detail: db password is hunter2') } } } },
  })
  const { url } = await serveGateway(t, config, { cwd: dir })
  const { status, body } = await get(`${url}/operations/Hi`)
  t.equal(status, 500)
  t.equal(body.errors?.[0]?.extensions?.code, 'TRB_ERR_HOOK')
  t.notMatch(JSON.stringify(body), /hunter2|secret detail/)
  t.match(body.errors?.[0]?.message, /postResolve of Hi/)
})

test('config: hooks are validated and bounded', async (t) => {
  const base = { datasources: [schema({ typeDefs: 'type Query { hi: String }' })] }
  t.throws(() => resolveConfig({ ...base, hooks: { timeoutMs: 600_000 } }), { code: 'TRB_ERR_CONFIG_INVALID', message: /hooks\.timeoutMs/ })
  t.throws(() => resolveConfig({ ...base, hooks: { operations: { Hi: { preResolve: 'nope' } } } } as never), { code: 'TRB_ERR_CONFIG_INVALID' })
  t.throws(() => resolveConfig({ ...base, hooks: { global: { onOriginRequest: {} } } } as never), { code: 'TRB_ERR_CONFIG_INVALID' })
  t.equal(resolveConfig(base).hooks, null, 'no hooks: nothing to run')
  t.equal(resolveConfig({ ...base, hooks: { operations: { Hi: { preResolve: () => undefined } } } }).hooks?.timeoutMs, 5000)
})

test('onConnectionInit: the connection_init payload a graphql-ws subgraph receives', async (t) => {
  const seen: unknown[] = []
  const schemaOf = buildSubgraphSchema({
    typeDefs: parse('extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])\ntype Query { ping: String }\ntype Subscription { tick: Int! }'),
    resolvers: {
      Query: { ping: () => 'pong' },
      Subscription: { tick: { subscribe: async function* () { yield { tick: 1 }; await new Promise(() => undefined) } } },
    } as never,
  })
  const server = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    const { query, variables } = JSON.parse(body) as { query: string; variables?: Record<string, unknown> }
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify(await graphqlRun({ schema: schemaOf, source: query, variableValues: variables })))
  })
  const wss = new WebSocketServer({ server, path: '/graphql' })
  useServer({ schema: schemaOf, onConnect: (ctx) => { seen.push(ctx.connectionParams) } }, wss)
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  t.teardown(() => new Promise<void>((ok) => { for (const c of wss.clients) c.terminate(); wss.close(); server.closeAllConnections(); server.close(() => ok()) }))
  const dir = mkdtempSync(join(tmpdir(), 'tributary-hooks-ws-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'operations'))
  writeFileSync(join(dir, 'operations', 'Ticks.graphql'), 'subscription Ticks { fed_tick }')
  const config = resolveConfig({
    mode: 'development',
    datasources: [federation({ namespace: 'fed', subgraphs: [{ name: 'ticks', url: `http://127.0.0.1:${(server.address() as { port: number }).port}/graphql`, headers: { 'x-gateway': 'tributary' } }] })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    hooks: { global: { onConnectionInit: { hook: ({ payload, namespace }: ConnectionInitArgs) => ({ ...payload, hooked: namespace }) } } },
  })
  const { url } = await serveGateway(t, config, { cwd: dir })
  const controller = new AbortController()
  const res = await fetch(`${url}/operations/Ticks`, { headers: { accept: 'text/event-stream' }, signal: controller.signal })
  const reader = res.body!.getReader()
  let text = ''
  while (!text.includes('data:')) text += new TextDecoder().decode((await reader.read()).value)
  controller.abort()
  t.match(text, /"fed_tick":1/)
  t.match(seen[0], { hooked: 'fed', headers: { 'x-gateway': 'tributary' } })
})

test('the generated HooksConfig types each operation\'s hooks (checked by tsc -p tsconfig.test.json)', async (t) => {
  const typed = {
    timeoutMs: 1000,
    operations: {
      TodoById: {
        mutatingPreResolve: ({ input }) => ({ id: (input.id ?? 0) + 1 }),
        mutatingPostResolve: ({ response }) => ({ data: { todo_findUniqueTodo: response.data?.todo_findUniqueTodo ?? null } }),
      },
    },
  } satisfies HooksConfig
  // @ts-expect-error an operation that does not exist
  const unknownOperation: HooksConfig = { operations: { NoSuchOperation: {} } }
  // @ts-expect-error mutatingPreResolve must return TodoByIdVariables
  const wrongInput: HooksConfig = { operations: { TodoById: { mutatingPreResolve: () => ({ id: 'one' }) } } }
  t.ok(resolveConfig({ datasources: [schema({ typeDefs: 'type Query { hi: String }' })], hooks: typed }).hooks?.operations.has('TodoById'))
  t.ok(unknownOperation && wrongInput)
})
