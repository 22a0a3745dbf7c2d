/**
 * Identity upstream: a REST source's `headers` templates (`{{claims.sub}}`,
 * `{{request.headers.authorization}}`) rendered per call from the verified token and the incoming
 * request, through a real gateway and a real upstream on 127.0.0.1; and the renderer itself
 * (gateway/auth/header-templates.ts), which remote GraphQL sources and links share.
 */
import t from 'tap'
import { compileHeaderTemplates, renderHeaderTemplates } from '../gateway/auth/header-templates.js'
import { itemsDocument, sendJson, startRestGateway, startUpstream, testContext } from './helpers/rest-upstream.js'
import { mint } from './helpers/auth.js'

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
