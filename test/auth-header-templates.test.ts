/**
 * Identity upstream: a REST source's `headers` templates (`{{claims.sub}}`,
 * `{{request.headers.authorization}}`) rendered per call from the verified token and the incoming
 * request, through a real gateway and a real upstream on 127.0.0.1; the same for remote GraphQL and
 * federation sources (the shared HTTP client, per subgraph) and through a link to a remote source;
 * and the renderer itself (gateway/auth/header-templates.ts).
 */
import t from 'tap'
import { compileHeaderTemplates, renderHeaderTemplates } from '../gateway/auth/header-templates.js'
import { itemsDocument, sendJson, startRestGateway, startUpstream, testContext } from './helpers/rest-upstream.js'
import { mint } from './helpers/auth.js'
import { postGraphQL, startGateway, startGraphQLUpstream } from './helpers/graphql-upstream.js'
import { makeExecutableSchema } from '@graphql-tools/schema'
import { buildSubgraphSchema } from '@apollo/subgraph'
import { parse } from 'graphql'

const secret = 'header-templates-secret-0123456789abcdef'
const key = new TextEncoder().encode(secret)

t.test('REST source: claims and request headers reach the upstream', async (t) => {
  const seen: Record<string, string | string[] | undefined>[] = []
  const upstream = await startUpstream(t, (req, res) => {
    seen.push(req.headers)
    sendJson(res, 200, [{ id: String(req.headers['x-user-id'] ?? 'none') }])
  })
  const url = await startRestGateway(t, upstream, {
    context: testContext(t),
    namespace: 'items',
    document: itemsDocument,
    source: { headers: { 'X-User-Id': '{{claims.sub}}', 'x-org': 'org-{{claims.org.id}}', 'x-forwarded-auth': '{{request.headers.authorization}}', 'x-static': 'yes' } },
    config: { auth: { jwt: { secret } } },
  })
  const call = async (token?: string) => {
    const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify({ query: '{ items_listItems { id } }' }) })
    return res.json()
  }
  const token = await mint(key, { sub: 'alice', org: { id: 42 } }, { expiresIn: '1h' })
  t.same(await call(token), { data: { items_listItems: [{ id: 'alice' }] } })
  let h = seen.at(-1)!
  t.equal(h['x-org'], 'org-42', 'a dotted claim path, a number as text')
  t.equal(h['x-forwarded-auth'], `Bearer ${token}`)
  t.equal(h['x-static'], 'yes')

  t.same(await call(), { data: { items_listItems: [{ id: 'none' }] } }, 'anonymous: the templated headers are not sent')
  h = seen.at(-1)!
  t.equal(h['x-user-id'], undefined)
  t.equal(h['x-org'], undefined)
  t.equal(h['x-static'], 'yes')

  const injected = await mint(key, { sub: 'mallory\r\nx-admin: 1' }, { expiresIn: '1h' })
  t.same(await call(injected), { data: { items_listItems: [{ id: 'none' }] } }, 'a claim with CR/LF is not sent')
  t.equal(seen.at(-1)!['x-admin'], undefined)
})

t.test('renderHeaderTemplates', async (t) => {
  const templates = compileHeaderTemplates({ 'x-user': '{{ claims.sub }}', 'x-roles': '{{claims.roles}}', 'x-trace': '{{request.headers.X-Trace}}', plain: 'v' })
  t.same(templates.static, { plain: 'v' })
  const ctx = { auth: { claims: { sub: 's1', roles: ['a', 'b'] } }, request: { headers: { 'x-trace': ['t1', 't2'] } } }
  t.same(renderHeaderTemplates(templates, ctx), { 'x-user': 's1', 'x-roles': '["a","b"]', 'x-trace': 't1, t2' })
  t.same(renderHeaderTemplates(templates, { headers: { 'x-trace': 't' } }), { 'x-trace': 't' }, 'context.headers works; no auth, no claims')
  t.same(renderHeaderTemplates(templates, undefined), {})
  t.throws(() => compileHeaderTemplates({ bad: '{{process.env.SECRET}}' }), /unknown placeholder \{\{process\.env\.SECRET\}\}/)
})

/** What an upstream answers: the `x-user-id` and `x-endpoint` headers it received (`-` when absent). */
const whoami = (_: unknown, _a: unknown, ctx: unknown) => {
  const h = (ctx as { headers: Record<string, unknown> }).headers
  return `${h['x-user-id'] ?? '-'}|${h['x-endpoint'] ?? '-'}`
}

/** A remote GraphQL upstream answering `whoami`. */
const whoamiSchema = () => makeExecutableSchema({ typeDefs: 'type Query { whoami: String }', resolvers: { Query: { whoami } } })

t.test('remote GraphQL and federation sources: templates rendered per endpoint by the shared HTTP client; links carry them', async (t) => {
  const remote = await startGraphQLUpstream(t, whoamiSchema())
  const products = await startGraphQLUpstream(
    t,
    buildSubgraphSchema({
      typeDefs: parse('extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])\ntype Query { subgraphWhoami: String }'),
      resolvers: { Query: { subgraphWhoami: whoami } },
    }),
  )
  const { base } = await startGateway(t, {
    mode: 'development',
    auth: { jwt: { secret } },
    datasources: [
      { kind: 'graphql', namespace: 'remote', url: remote.url, headers: { 'X-User-Id': '{{claims.sub}}', 'x-endpoint': 'remote' } },
      { kind: 'federation', namespace: 'fed', headers: { 'x-user-id': '{{claims.sub}}' }, subgraphs: [{ name: 'products', url: products.url, headers: { 'X-Endpoint': 'products-{{claims.org}}' } }] },
      { kind: 'schema', namespace: 'local', typeDefs: 'type Note { id: ID! } type Query { notes: [Note!]! }', resolvers: { Query: { notes: () => [{ id: '1' }, { id: '2' }] } } },
    ],
    links: [{ on: 'local_Note', field: 'author', target: 'remote_whoami' }],
  })
  const token = await mint(key, { sub: 'alice', org: 'acme' }, { expiresIn: '1h' })
  const query = '{ remote_whoami fed_subgraphWhoami local_notes { id author } }'
  const signedIn = await postGraphQL(base, query, undefined, { authorization: `Bearer ${token}` })
  t.same(signedIn.body, {
    data: { remote_whoami: 'alice|remote', fed_subgraphWhoami: 'alice|products-acme', local_notes: [{ id: '1', author: 'alice|remote' }, { id: '2', author: 'alice|remote' }] },
  }, "the source's and the subgraph's templates, and a link to the remote source, carry the caller's claims")
  const anonymous = await postGraphQL(base, query)
  t.same(anonymous.body, {
    data: { remote_whoami: '-|remote', fed_subgraphWhoami: '-|-', local_notes: [{ id: '1', author: '-|remote' }, { id: '2', author: '-|remote' }] },
  }, 'anonymous: the templated headers are not sent, the static ones are')
  const introspection = remote.requests.find((r) => r.query.includes('IntrospectionQuery'))
  t.equal(introspection?.headers['x-user-id'], undefined, 'the load-time introspection has no caller: no templated header')
  t.equal(introspection?.headers['x-endpoint'], 'remote')
})

t.test('an unknown placeholder in a remote GraphQL or subgraph header fails the source at startup', async (t) => {
  const remote = await startGraphQLUpstream(t, whoamiSchema())
  const products = await startGraphQLUpstream(t, buildSubgraphSchema({ typeDefs: parse('type Query { a: Int }'), resolvers: {} }))
  await t.rejects(
    startGateway(t, { datasources: [{ kind: 'graphql', namespace: 'remote', url: remote.url, headers: { 'x-secret': '{{env.SECRET}}' } }] }),
    { code: 'TRB_ERR_SOURCE_LOAD', message: /headers\.x-secret: unknown placeholder \{\{env\.SECRET\}\}/ },
  )
  await t.rejects(
    startGateway(t, { datasources: [{ kind: 'federation', namespace: 'fed', subgraphs: [{ name: 'products', url: products.url, headers: { 'x-secret': '{{env.SECRET}}' } }] }] }),
    { code: 'TRB_ERR_SOURCE_LOAD', message: /subgraphs\[0\]\.headers\.x-secret: unknown placeholder/ },
  )
})
