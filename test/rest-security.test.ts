// Security schemes of a REST source against real servers on 127.0.0.1: apiKey in a header, the
// query or a cookie, http bearer and basic, OAuth2 client credentials with a real token endpoint
// (fetched once, shared by concurrent calls, refreshed on expiry and after a 401), applied per
// operation's `security`. Credentials never reach logs, errors or the generated schema.
import t from 'tap'
import { printSchema } from 'graphql'
import type { IncomingMessage } from 'node:http'
import { itemsSource, memoryLogger, sendJson, startUpstream, testContext } from './helpers/rest-upstream.js'

const SECRET = 's3cr3t-Value'
const json = { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { ok: { type: 'boolean' } } } } } } }
const op = (operationId: string, security?: unknown) => ({ get: { operationId, ...(security ? { security } : {}), responses: json } })

function document(tokenUrl: string) {
  return {
    openapi: '3.0.3',
    info: { title: 'secured', version: '1' },
    security: [{ headerKey: [] }],
    paths: {
      '/default': op('byDefault'),
      '/query': op('byQuery', [{ queryKey: [] }]),
      '/cookie': op('byCookie', [{ cookieKey: [] }]),
      '/bearer': op('byBearer', [{ bearer: [] }]),
      '/basic': op('byBasic', [{ basic: [] }]),
      '/either': op('byEither', [{ unconfigured: [] }, { bearer: [], queryKey: [] }]),
      '/public': op('open', []),
      '/oauth': op('byOAuth', [{ oauth: ['read', 'write'] }]),
    },
    components: {
      securitySchemes: {
        headerKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
        queryKey: { type: 'apiKey', in: 'query', name: 'api_key' },
        cookieKey: { type: 'apiKey', in: 'cookie', name: 'session' },
        bearer: { type: 'http', scheme: 'bearer' },
        basic: { type: 'http', scheme: 'Basic' },
        unconfigured: { type: 'http', scheme: 'bearer' },
        oauth: { type: 'oauth2', flows: { clientCredentials: { tokenUrl, scopes: { read: 'r', write: 'w' } } } },
      },
    },
  }
}

interface Seen { url: string; headers: IncomingMessage['headers'] }

t.test('apiKey (header, query, cookie), bearer and basic, per operation; nothing in logs, errors or SDL', async (t) => {
  const seen: Seen[] = []
  const up = await startUpstream(t, (req, res) => {
    seen.push({ url: req.url!, headers: req.headers })
    if (req.url === '/default' && req.headers['x-api-key'] !== SECRET) return sendJson(res, 401, { message: 'no key' })
    sendJson(res, 200, { ok: true })
  })
  const { logger, lines } = memoryLogger()
  const context = testContext(t, logger)
  const source = await itemsSource(t, up, {
    security: {
      headerKey: { apiKey: SECRET },
      queryKey: { apiKey: `${SECRET}&x` },
      cookieKey: { apiKey: `${SECRET};x` },
      bearer: { token: SECRET },
      basic: { username: 'ann', password: SECRET },
    },
  }, context, document('http://127.0.0.1:1/token'))
  const result = await source.run('{ byDefault { ok } byQuery { ok } byCookie { ok } byBearer { ok } byBasic { ok } byEither { ok } open { ok } }')
  t.same(result.errors, undefined)
  const by = (url: string) => seen.find((s) => s.url.split('?')[0] === url)!
  t.equal(by('/default').headers['x-api-key'], SECRET, 'the document-level security applies by default')
  t.equal(by('/query').url, `/query?api_key=${encodeURIComponent(`${SECRET}&x`)}`)
  t.equal(by('/query').headers['x-api-key'], undefined, 'the operation-level security replaces the default')
  t.equal(by('/cookie').headers.cookie, `session=${encodeURIComponent(`${SECRET};x`)}`)
  t.equal(by('/bearer').headers.authorization, `Bearer ${SECRET}`)
  t.equal(by('/basic').headers.authorization, `Basic ${Buffer.from(`ann:${SECRET}`).toString('base64')}`)
  t.equal(by('/either').headers.authorization, `Bearer ${SECRET}`, 'the first alternative with credentials, all of its schemes')
  t.match(by('/either').url, /api_key=/)
  t.same([by('/public').headers.authorization, by('/public').headers['x-api-key'], by('/public').url], [undefined, undefined, '/public'], 'security: [] sends none')
  t.equal(up.total(), 7)

  t.notMatch(printSchema(source.schema), SECRET)
  t.notMatch(JSON.stringify(lines), SECRET, 'no credential in the logs')
})

t.test('load errors for credentials that do not fit, without the secret', async (t) => {
  const up = await startUpstream(t, (_req, res) => sendJson(res, 200, {}))
  await t.rejects(itemsSource(t, up, { security: { nope: { token: SECRET } } }, testContext(t), document('http://127.0.0.1:1/token')), { code: 'TRB_ERR_SOURCE_LOAD', message: /declares no security scheme "nope"/ })
  await t.rejects(itemsSource(t, up, { security: { basic: { username: SECRET } } }, testContext(t), document('http://127.0.0.1:1/token')), { code: 'TRB_ERR_SOURCE_LOAD', message: /needs password/ })
  try {
    await itemsSource(t, up, { security: { basic: { username: SECRET } } }, testContext(t), document('http://127.0.0.1:1/token'))
  } catch (err) {
    t.notMatch((err as Error).message, SECRET)
  }
})

t.test('OAuth2 client credentials: a real token endpoint, one fetch for concurrent calls, refresh on expiry and after a 401', async (t) => {
  let issued = 0
  let lifetime = 3600
  let refuse = false
  const valid = new Set<string>()
  const tokenRequests: Array<{ auth?: string; body: string }> = []
  const auth = await startUpstream(t, (req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => { body += c.toString() })
    req.on('end', () => {
      tokenRequests.push({ auth: req.headers.authorization, body })
      if (refuse) return sendJson(res, 401, { error: 'invalid_client', error_description: `bad secret ${SECRET}` })
      const expected = `Basic ${Buffer.from(`app:${encodeURIComponent(SECRET)}`).toString('base64')}`
      if (req.headers.authorization !== expected) return sendJson(res, 401, { error: 'invalid_client' })
      const token = `tok-${++issued}`
      valid.add(token)
      setTimeout(() => sendJson(res, 200, { access_token: token, token_type: 'Bearer', expires_in: lifetime }), 30)
    })
  })
  const used: string[] = []
  const up = await startUpstream(t, (req, res) => {
    const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '')
    used.push(token)
    if (!valid.has(token)) return sendJson(res, 401, { message: 'bad token' })
    sendJson(res, 200, { ok: true })
  })
  const { logger, lines } = memoryLogger()
  const source = await itemsSource(t, up, { security: { oauth: { clientId: 'app', clientSecret: SECRET } } }, testContext(t, logger), document(`${auth.url}/token`))

  const results = await Promise.all(Array.from({ length: 5 }, () => source.run('{ byOAuth { ok } }')))
  t.same(results.map((r) => r.errors), [undefined, undefined, undefined, undefined, undefined])
  t.equal(tokenRequests.length, 1, 'one token request for five concurrent calls')
  t.equal(new URLSearchParams(tokenRequests[0]!.body).get('grant_type'), 'client_credentials')
  t.equal(new URLSearchParams(tokenRequests[0]!.body).get('scope'), 'read write', 'the operation\'s scopes')
  t.same(new Set(used), new Set(['tok-1']))

  valid.delete('tok-1') // revoked upstream
  const afterRevoke = await source.run('{ byOAuth { ok } }')
  t.same(afterRevoke.errors, undefined, 'a 401 drops the token, a new one is fetched, the call is repeated once')
  t.equal(tokenRequests.length, 2)
  t.same(used.slice(-2), ['tok-1', 'tok-2'])

  // A short-lived token is refreshed before it runs out.
  lifetime = 1
  valid.delete('tok-2')
  await source.run('{ byOAuth { ok } }')
  t.equal(tokenRequests.length, 3)
  await new Promise((r) => setTimeout(r, 600))
  t.same((await source.run('{ byOAuth { ok } }')).errors, undefined)
  t.equal(tokenRequests.length, 4, 'refreshed after expiry')

  refuse = true
  await new Promise((r) => setTimeout(r, 600))
  const failed = await source.run('{ byOAuth { ok } }')
  t.equal(failed.errors?.[0]?.extensions?.code, 'TRB_ERR_UPSTREAM')
  t.match(failed.errors?.[0]?.message, /OAuth2 token request for oauth failed: the token endpoint answered 401 \(invalid_client\)/)
  t.notMatch(JSON.stringify(failed.errors), SECRET, 'the token endpoint\'s description is not shown')
  t.notMatch(JSON.stringify(lines), SECRET, 'no secret in the logs')
  t.notMatch(JSON.stringify(lines), /tok-\d/, 'no token in the logs')
})
