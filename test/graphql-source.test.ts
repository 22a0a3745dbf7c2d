/**
 * A remote GraphQL API as a data source: introspected over HTTP from a real upstream on 127.0.0.1,
 * namespaced with graphql-tools transforms, executed through undici, with forwarded headers, the
 * cached introspection when the upstream is down, and upstream failures as coded errors.
 */
import t from 'tap'
import Fastify from 'fastify'
import mercurius from 'mercurius'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { resolveConfig } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'

async function startUpstream(t: { teardown(fn: () => unknown): void }) {
  const upstream = Fastify()
  const seen: { authorization?: string }[] = []
  await upstream.register(mercurius, {
    schema: `
      enum Status { DRAFT PUBLISHED }
      type Post { id: ID! title: String! status: Status! }
      type Query { posts(status: Status): [Post!]! post(id: ID!): Post boom: String }
      type Mutation { publish(id: ID!): Post }
    `,
    resolvers: {
      Query: {
        posts: (_: unknown, a: { status?: string }) => [{ id: '1', title: 'Hello', status: 'PUBLISHED' }, { id: '2', title: 'Draft', status: 'DRAFT' }].filter((p) => !a.status || p.status === a.status),
        post: (_: unknown, a: { id: string }, ctx: { reply: { request: { headers: { authorization?: string } } } }) => {
          seen.push({ authorization: ctx.reply.request.headers.authorization })
          return a.id === '1' ? { id: '1', title: 'Hello', status: 'PUBLISHED' } : null
        },
        boom: () => {
          throw new Error('upstream exploded')
        },
      },
      Mutation: { publish: (_: unknown, a: { id: string }) => ({ id: a.id, title: 'Draft', status: 'PUBLISHED' }) },
    },
  })
  await upstream.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => upstream.close())
  const port = (upstream.server.address() as { port: number }).port
  return { upstream, url: `http://127.0.0.1:${port}/graphql`, seen }
}

t.test('a namespaced remote GraphQL source', async (t) => {
  const { url, seen } = await startUpstream(t)
  const dir = mkdtempSync(join(tmpdir(), 'tributary-gql-'))
  const config = resolveConfig({
    datasources: [{ kind: 'graphql', namespace: 'cms', url, forwardHeaders: ['authorization'], timeoutMs: 2000 }],
    operations: { dir: join(dir, 'none') },
    generatedDir: dir,
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  const app = await buildApp(gateway, { logger: false })
  t.teardown(async () => {
    await app.close()
    await gateway.close()
  })
  const post = (query: string, variables?: object, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: '/graphql', headers, payload: { query, variables } })

  const list = await post('query ($s: cms_Status) { cms_posts(status: $s) { id title status __typename } }', { s: 'DRAFT' })
  t.same(list.json(), { data: { cms_posts: [{ id: '2', title: 'Draft', status: 'DRAFT', __typename: 'cms_Post' }] } })

  const one = await post('{ cms_post(id: "1") { title } }', undefined, { authorization: 'Bearer abc' })
  t.same(one.json().data, { cms_post: { title: 'Hello' } })
  t.equal(seen.at(-1)?.authorization, 'Bearer abc', 'the authorization header was forwarded')

  const mutation = await post('mutation { cms_publish(id: "2") { id status } }')
  t.same(mutation.json().data, { cms_publish: { id: '2', status: 'PUBLISHED' } })

  const failed = await post('{ cms_boom cms_post(id: "1") { id } }')
  t.equal(failed.statusCode, 200)
  t.same(failed.json().data, { cms_boom: null, cms_post: { id: '1' } }, 'partial data')
  t.ok(failed.json().errors.length >= 1)

  const health = await app.inject({ method: 'GET', url: '/health' })
  t.equal(health.json().sources.cms.status, 'up')
})

t.test('the cached introspection lets the gateway start while the upstream is down', async (t) => {
  const up = await startUpstream(t)
  const dir = mkdtempSync(join(tmpdir(), 'tributary-gql-cache-'))
  const make = (url: string) =>
    resolveConfig({ datasources: [{ kind: 'graphql', namespace: 'cms', url, timeoutMs: 1000 }], operations: { dir: join(dir, 'none') }, generatedDir: dir })
  const first = await createGateway(make(up.url), { logger: pino({ level: 'silent' }) })
  await first.close()
  await up.upstream.close()
  const second = await createGateway(make(up.url), { logger: pino({ level: 'silent' }) })
  const app = await buildApp(second, { logger: false })
  t.teardown(async () => {
    await app.close()
    await second.close()
  })
  t.ok(second.schema.getQueryType()?.getFields().cms_posts, 'the schema came from the cache')
  const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ cms_posts { id } }' } })
  t.equal(res.json().data, null, 'the non-null list nulls the whole data')
  t.equal(res.json().errors[0].extensions.code, 'TRB_ERR_UPSTREAM', 'an unreachable upstream is a coded error')
  t.equal((await app.inject({ method: 'GET', url: '/health' })).json().sources.cms.status, 'down')

  const nothing = mkdtempSync(join(tmpdir(), 'tributary-gql-nocache-'))
  await t.rejects(
    createGateway(resolveConfig({ datasources: [{ kind: 'graphql', namespace: 'x', url: up.url }], operations: { dir: join(nothing, 'none') }, generatedDir: nothing }), { logger: pino({ level: 'silent' }) }),
    { code: 'TRB_ERR_SOURCE_LOAD' },
  )
})
