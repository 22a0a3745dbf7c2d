/**
 * OAuth2 authorizationCode and implicit schemes of a REST source take the caller's token (issue
 * 29.6; README "REST connector", security schemes): `security: { <scheme>: { fromCaller: true } }`.
 * Against real servers on 127.0.0.1: a GitHub-shaped API (`GET /user`, `GET /user/repos`, the
 * document's `oauth2` scheme with an authorizationCode flow and an implicit one) that accepts only
 * the access tokens a real OpenID provider (`oidc-provider`) issued, checked at the provider's
 * userinfo endpoint as a resource server would. The token comes from the client request's
 * `Authorization: Bearer`, or from the cookie session of a login through that provider when the
 * provider is configured `keepAccessToken` (the session keeps the provider's access token,
 * encrypted). Without either nothing is sent (the upstream's 401 is the answer); a client
 * credentials scheme beside it still fetches its own token.
 */
import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Provider from 'oidc-provider'
import { resolveConfig } from '../gateway/config/index.js'
import { serveGateway } from './helpers/serve.js'
import { browse, loginAtProvider, startProviderServer, type Jar } from './helpers/oidc-browser.js'
import { sendJson, startUpstream } from './helpers/rest-upstream.js'

const SECRET = 'cookie-secret-of-the-rest-oauth-test-0123456789'

// ----- the OpenID provider (also the API's authorization server) -----
const { issuer, serve } = await startProviderServer(t)

// ----- the API: GitHub's shape, tokens checked at the provider's userinfo endpoint -----
const seen: Array<{ url: string; authorization?: string }> = []
const clientTokens = new Set<string>()
const api = await startUpstream(t, (req, res) => {
  const authorization = req.headers.authorization
  seen.push({ url: req.url!, authorization })
  if (req.url === '/token') {
    const token = `cc-${clientTokens.size + 1}`
    clientTokens.add(token)
    return sendJson(res, 200, { access_token: token, token_type: 'bearer', expires_in: 3600 })
  }
  if (req.url === '/meta') return clientTokens.has(String(authorization).replace(/^Bearer /, '')) ? sendJson(res, 200, { verifiable_password_authentication: false }) : sendJson(res, 401, { message: 'Bad credentials' })
  if (!authorization) return sendJson(res, 401, { message: 'Requires authentication', documentation_url: 'https://docs.github.com/rest' })
  void fetch(`${issuer}/me`, { headers: { authorization } }).then(async (me) => {
    if (me.status !== 200) return sendJson(res, 401, { message: 'Bad credentials' })
    const { sub } = await me.json() as { sub: string }
    // GitHub's ids are int64: this one is beyond 2^53, written as the API writes it.
    if (req.url === '/user') return res.writeHead(200, { 'content-type': 'application/json' }).end(`{"login":${JSON.stringify(sub)},"id":9007199254740993,"type":"User"}`)
    sendJson(res, 200, [{ id: 1, name: `${sub}-dotfiles`, private: false }])
  }, () => sendJson(res, 502, { message: 'provider down' }))
})

const document = {
  openapi: '3.0.3',
  info: { title: 'GitHub v3 REST API (shape)', version: '1.1.4' },
  servers: [{ url: 'https://api.github.com' }],
  security: [{ github_oauth: ['read:user'] }],
  paths: {
    '/user': { get: { operationId: 'users/get-authenticated', responses: { 200: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/user' } } } } } } },
    '/user/repos': { get: { operationId: 'repos/list-for-authenticated-user', security: [{ github_implicit: ['repo'] }], responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/repository' } } } } } } } },
    '/meta': { get: { operationId: 'meta/get', security: [{ app: [] }], responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { verifiable_password_authentication: { type: 'boolean' } } } } } } } } },
  },
  components: {
    securitySchemes: {
      github_oauth: { type: 'oauth2', flows: { authorizationCode: { authorizationUrl: `${issuer}/auth`, tokenUrl: `${issuer}/token`, scopes: { 'read:user': 'Read the profile', repo: 'Repositories' } } } },
      github_implicit: { type: 'oauth2', flows: { implicit: { authorizationUrl: `${issuer}/auth`, scopes: { repo: 'Repositories' } } } },
      app: { type: 'oauth2', flows: { clientCredentials: { tokenUrl: `${api.url}/token`, scopes: {} } } },
    },
    schemas: {
      user: { type: 'object', required: ['login', 'id'], properties: { login: { type: 'string' }, id: { type: 'integer', format: 'int64' }, type: { type: 'string' } } },
      repository: { type: 'object', properties: { id: { type: 'integer' }, name: { type: 'string' }, private: { type: 'boolean' } } },
    },
  },
}

const dir = mkdtempSync(join(tmpdir(), 'tributary-rest-oauth-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
writeFileSync(join(dir, 'github.json'), JSON.stringify(document))
const source = {
  kind: 'rest' as const, namespace: 'github', openapi: join(dir, 'github.json'), baseUrl: api.url, retry: { retries: 0 },
  security: { github_oauth: { fromCaller: true }, github_implicit: { fromCaller: true }, app: { clientId: 'app', clientSecret: 'app-secret' } },
}
// A gateway without auth of its own: the client's Authorization header is free to be forwarded.
const { url: open } = await serveGateway(t, resolveConfig({ mode: 'development', datasources: [source], generatedDir: join(dir, 'generated-open') }), { cwd: dir })
// A gateway with cookie login: its bearer tokens would be its own, so the session's token is used.
const config = resolveConfig({
  mode: 'development',
  datasources: [source],
  generatedDir: join(dir, 'generated'),
  auth: {
    oidc: {
      providers: [{ id: 'gh', issuer, clientId: 'tributary', clientSecret: 'client-secret-0123456789', scopes: ['openid', 'profile'], keepAccessToken: true }],
      cookie: { secrets: [SECRET], secure: false },
    },
  },
})
const { url: gw, gateway } = await serveGateway(t, config, { cwd: dir })

const provider = new Provider(issuer, {
  clients: [{ client_id: 'tributary', client_secret: 'client-secret-0123456789', redirect_uris: [`${gw}/auth/cookie/callback/gh`], response_types: ['code'], grant_types: ['authorization_code'] }],
  async findAccount(_ctx: unknown, sub: string) {
    return { accountId: sub, claims: async () => ({ sub, name: 'Octo Cat' }) }
  },
  claims: { openid: ['sub'], profile: ['name'] },
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['provider-cookie-key-0123456789'] },
})
serve(provider.callback())

const QUERY = '{ github_users_get_authenticated { login id } github_repos_list_for_authenticated_user { name } }'
async function graphql(headers: Record<string, string>, jar?: Jar) {
  const init = { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query: QUERY }) }
  const res = jar ? await browse(jar, `${gw}/graphql`, init) : await fetch(`${open}/graphql`, init)
  return await res.json() as { data: Record<string, unknown>; errors?: Array<{ message: string; path: string[]; extensions: { code: string; http?: { status: number } } }> }
}

t.test('the cookie session of a login sends the provider\'s access token to the API (authorizationCode and implicit)', async (t) => {
  const jar: Jar = new Map()
  const callback = await loginAtProvider(jar, { gateway: gw, providerId: 'gh', user: 'octocat' })
  const cb = await browse(jar, callback)
  t.equal(cb.status, 200, 'logged in')
  seen.length = 0
  const body = await graphql({}, jar)
  t.same(body, { data: { github_users_get_authenticated: { login: 'octocat', id: '9007199254740993' }, github_repos_list_for_authenticated_user: [{ name: 'octocat-dotfiles' }] } }, 'the API accepted the provider\'s token for both schemes')
  const sent = seen.filter((s) => s.url.startsWith('/user')).map((s) => s.authorization)
  t.equal(sent.length, 2)
  t.match(sent[0], /^Bearer [\x21-\x7e]{20,}$/, 'a bearer token went upstream')
  t.equal(sent[1], sent[0], 'the same token for the implicit scheme')

  // The user's own claims come back without the token: it stays in the encrypted cookie.
  const user = await (await browse(jar, `${gw}/auth/user`)).text()
  t.notMatch(user, sent[0]!.slice(7), '/auth/user does not show the access token')
  const opened = await gateway.session!.openSession(jar.get(new URL(gw).origin)!.get('trb_session')!)
  t.equal(opened.accessToken?.token, sent[0]!.slice(7), 'the session holds the provider\'s access token')
  t.ok(opened.accessToken?.exp && opened.accessToken.exp * 1000 > Date.now(), 'with its expiry')
})

t.test('a forwarded Authorization: Bearer is sent; without a token nothing is sent and the API\'s 401 is the answer', async (t) => {
  // A token of the provider obtained outside the gateway (a client that did its own login): a session of its own, read back.
  const jar: Jar = new Map()
  await browse(jar, await loginAtProvider(jar, { gateway: gw, providerId: 'gh', user: 'hubot' }))
  const token = (await gateway.session!.openSession(jar.get(new URL(gw).origin)!.get('trb_session')!)).accessToken!.token
  seen.length = 0
  const forwarded = await graphql({ authorization: `Bearer ${token}` })
  t.same(forwarded.data, { github_users_get_authenticated: { login: 'hubot', id: '9007199254740993' }, github_repos_list_for_authenticated_user: [{ name: 'hubot-dotfiles' }] })
  t.same(seen.filter((s) => s.url.startsWith('/user')).map((s) => s.authorization), [`Bearer ${token}`, `Bearer ${token}`], 'the caller\'s header as it came')

  seen.length = 0
  const anonymous = await graphql({})
  t.same(anonymous.data, { github_users_get_authenticated: null, github_repos_list_for_authenticated_user: null })
  t.same(anonymous.errors?.map((e) => [e.extensions.code, e.extensions.http?.status]), [['TRB_ERR_UPSTREAM', 401], ['TRB_ERR_UPSTREAM', 401]])
  t.same(seen.map((s) => s.authorization), [undefined, undefined], 'no credentials sent without a caller token')

  const basic = await graphql({ authorization: 'Basic b2N0bzpjYXQ=' })
  t.same(basic.errors?.map((e) => e.extensions.http?.status), [401, 401], 'another Authorization scheme is not a bearer token: not sent')
  t.equal(seen.at(-1)!.authorization, undefined)

  const forged = await graphql({ authorization: 'Bearer not-a-token-of-the-provider' })
  t.same(forged.errors?.map((e) => e.extensions.http?.status), [401, 401], 'the API judges the token')
})

t.test('client credentials beside it stay the gateway\'s own token', async (t) => {
  seen.length = 0
  const res = await fetch(`${open}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer caller-token' }, body: JSON.stringify({ query: '{ github_meta_get { verifiable_password_authentication } }' }) })
  t.same(await res.json(), { data: { github_meta_get: { verifiable_password_authentication: false } } })
  t.same(seen.map((s) => [s.url, s.authorization]), [['/token', `Basic ${Buffer.from('app:app-secret').toString('base64')}`], ['/meta', 'Bearer cc-1']], 'the caller\'s token is not used for the client credentials scheme')
})

t.test('fromCaller fits oauth2, openIdConnect and bearer schemes only, alone', async (t) => {
  const { createAuthenticator } = await import('../gateway/connectors/rest/security.js')
  const doc = { openapi: '3.0.3', info: { title: 'x', version: '1' }, paths: {}, components: { securitySchemes: { key: { type: 'apiKey', in: 'header' as const, name: 'X-Key' }, oauth: { type: 'oauth2', flows: { implicit: { authorizationUrl: 'https://x/auth', scopes: {} } } } } } }
  const options = { documentUrl: 'file:///x.json', sourceName: 'x', timeoutMs: 1000 }
  t.throws(() => createAuthenticator(doc, { key: { fromCaller: true } }, options), /fromCaller applies to oauth2, openIdConnect and http bearer schemes, not apiKey/)
  t.throws(() => createAuthenticator(doc, { oauth: { fromCaller: true, clientId: 'a' } }, options), /fromCaller takes no other field \(clientId\)/)
  t.throws(() => createAuthenticator(doc, { oauth: { clientId: 'a', clientSecret: 'b' } }, options), /no clientCredentials flow.*fromCaller/)
})
