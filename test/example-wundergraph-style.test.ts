/**
 * examples/wundergraph-style (issue 25 item 8): the Chinook SQLite database and the charts REST API,
 * a TypeScript operation calling two stored operations in process, an onOriginRequest hook on the REST
 * upstream, `@export` + `_join` from the database into the REST API, and cookie login with OpenID
 * Connect against the example's own provider (services/oidc-provider.ts, a real `oidc-provider`)
 * with an operation reading `@fromClaim(name: "email")`. One gateway for the file, built from the
 * example's config with the side services on ephemeral ports; then the two service scripts run as
 * the config's `services` start them. (The full `tributary start` of a config with side services is
 * covered by test/federation-example.test.ts; a second run here would cost some 15 s.)
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { resolveConfig, type TributaryConfigInput } from '../gateway/config/index.js'
import { createChartsService, type ChartsRequest } from '../examples/wundergraph-style/services/charts.js'
import { createOidcService } from '../examples/wundergraph-style/services/oidc-provider.js'
import { checkExpectedResponses } from './helpers/expected-responses.js'
import { serveGateway } from './helpers/serve.js'
import { browse, cookieOf, loginAtProvider, type Jar } from './helpers/oidc-browser.js'
import { freePort } from './helpers/cli.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const opsDir = join(root, 'examples/wundergraph-style/operations')
const urlOf = (app: FastifyInstance) => `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
const expected = (name: string) => JSON.parse(readFileSync(join(opsDir, `${name}.expected.json`), 'utf8')) as { response: unknown }

// ----- the side services and the gateway, once for the file -----
const seen: ChartsRequest[] = []
const charts = await createChartsService({ onRequest: (r) => seen.push(r) })
await charts.listen({ host: '127.0.0.1', port: 0 })
t.teardown(() => charts.close())
let gw = ''
const oidc = await createOidcService({ gatewayUrl: () => gw })
await oidc.listen({ host: '127.0.0.1', port: 0 })
t.teardown(async () => {
  oidc.server.closeAllConnections()
  await oidc.close()
})

const dir = mkdtempSync(join(tmpdir(), 'tributary-wundergraph-style-'))
copyFileSync(join(root, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
const input = (await import('../examples/wundergraph-style/config.js')).default as TributaryConfigInput
const datasources = input.datasources.map((d) =>
  d.kind === 'database' ? { ...d, url: `sqlite:${join(dir, 'chinook.sqlite')}` }
    : d.kind === 'rest' ? { ...d, openapi: `${urlOf(charts)}/openapi.json` } : d,
)
const oidcInput = input.auth!.oidc!
const config = resolveConfig({
  ...input,
  datasources,
  services: [],
  auth: { ...input.auth, oidc: { ...oidcInput, providers: oidcInput.providers.map((p) => ({ ...p, issuer: urlOf(oidc) })), redirectUris: [] } },
  operations: { dir: opsDir },
  generatedDir: join(dir, 'generated'),
})
const { app, url } = await serveGateway(t, config)
gw = url

t.test('every operation answers its expected response', async (t) => {
  await checkExpectedResponses(t, app, opsDir)
})

t.test('the TypeScript operation calls Album and AlbumStats in process; the hook header reaches the REST API', async (t) => {
  seen.length = 0
  const res = await app.inject({ url: '/operations/AlbumCard?albumId=4' })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), { albumId: 4, title: 'Let There Be Rock', artist: 'AC/DC', plays: 148, via: 'tributary-hook' })
  t.same(seen, [{ url: '/albums/4/stats', via: 'tributary-hook' }], 'one REST call, carrying the header the onOriginRequest hook added')
  const missing = await app.inject({ url: '/operations/AlbumCard?albumId=9999' })
  t.equal(missing.statusCode, 404)
  t.same(missing.json(), { errors: [{ message: 'No album 9999', extensions: { code: 'TRB_ERR_OPERATION_ERROR', originalCode: 'NotFound' } }] })
  const bad = await app.inject({ url: '/operations/AlbumCard?albumId=-1' })
  t.equal(bad.statusCode, 400, 'zod input checked')
  t.equal(bad.json().errors[0].extensions.code, 'TRB_ERR_OPERATION_VARIABLES')
})

t.test('@export + _join: one REST call per distinct albumId (no batching for REST targets), the internal variable is not input', async (t) => {
  seen.length = 0
  const res = await app.inject({ url: '/operations/ArtistCharts?artistId=1' })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), expected('ArtistCharts').response)
  t.same(seen.map((r) => r.url).sort(), ['/albums/1/stats', '/albums/4/stats'])
  t.ok(seen.every((r) => r.via === 'tributary-hook'), 'joined calls are hooked too')
  const forged = await app.inject({ url: '/operations/ArtistCharts?artistId=1&albumId=5' })
  t.equal(forged.statusCode, 400, 'an @internal variable cannot be sent')
  t.equal(forged.json().errors[0].extensions.code, 'TRB_ERR_OPERATION_VARIABLES')
})

t.test('OIDC login at the example provider, then Me reads the session email with @fromClaim', async (t) => {
  const anonymous = await fetch(`${gw}/operations/Me`)
  t.equal(anonymous.status, 401)
  t.equal(((await anonymous.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code, 'TRB_ERR_AUTH_REQUIRED')

  const jar: Jar = new Map()
  const callback = await loginAtProvider(jar, { gateway: gw, providerId: 'local', user: 'luis' })
  const done = await browse(jar, callback)
  t.equal(done.status, 200, 'without redirect_uri the callback answers the user')
  t.match(await done.json(), { sub: 'luis', email: 'luisg@embraer.com.br', name: 'Luís Gonçalves', roles: ['customer'], provider: 'local', exp: Number })
  t.ok(cookieOf(jar, gw, 'trb_session'), 'the session cookie is set')

  const user = await browse(jar, `${gw}/auth/user`)
  t.match(await user.json(), { sub: 'luis', email: 'luisg@embraer.com.br' })
  const me = await browse(jar, `${gw}/operations/Me`)
  t.equal(me.status, 200)
  t.same(await me.json(), { chinook_findManyCustomer: [{ customerId: 1, firstName: 'Luís', lastName: 'Gonçalves', country: 'Brazil' }] })
  const forged = await browse(jar, `${gw}/operations/Me?email=${encodeURIComponent('leonekohler@surfeu.de')}`)
  t.equal(forged.status, 400, 'a @fromClaim variable cannot be sent by the client')

  const bye = await browse(jar, `${gw}/auth/cookie/user/logout`, { method: 'POST' })
  t.same(await bye.json(), { loggedOut: true, redirect: null })
  t.equal((await browse(jar, `${gw}/operations/Me`)).status, 401, 'logged out')

  const stranger: Jar = new Map()
  await browse(stranger, await loginAtProvider(stranger, { gateway: gw, providerId: 'local', user: 'eve' }))
  t.same(await (await browse(stranger, `${gw}/operations/Me`)).json(), { chinook_findManyCustomer: [] }, 'a user who is no customer sees nothing')
})

t.test('a callback with a wrong state, or replayed, is a coded 400 and sets no session', async (t) => {
  const codeOf = async (res: Response) => ((await res.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code
  const forged: Jar = new Map()
  const callback = new URL(await loginAtProvider(forged, { gateway: gw, providerId: 'local', user: 'luis' }))
  callback.searchParams.set('state', 'forged-state')
  const r = await browse(forged, callback.href)
  t.equal(r.status, 400)
  t.equal(await codeOf(r), 'TRB_ERR_OIDC_CALLBACK')
  t.notOk(cookieOf(forged, gw, 'trb_session'), 'no session')

  const jar: Jar = new Map()
  const real = await loginAtProvider(jar, { gateway: gw, providerId: 'local', user: 'luis' })
  t.equal((await browse(jar, real)).status, 200)
  const replayed = await browse(new Map(), real)
  t.equal(replayed.status, 400, 'the same callback again (no state cookie) is refused')
  t.equal(await codeOf(replayed), 'TRB_ERR_OIDC_CALLBACK')
})

t.test('the side-service scripts listen on their ports when run as the config runs them', async (t) => {
  const [chartsPort, oidcPort] = [await freePort(), await freePort()]
  const run = (name: string, env: Record<string, string>) => new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, `examples/wundergraph-style/services/${name}.ts`)], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    t.teardown(() => void child.kill('SIGTERM'))
    let out = ''
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
      if (out.includes('listening on')) resolve()
    })
    child.on('exit', (code) => reject(new Error(`${name} exited with ${code}: ${out}`)))
  })
  await Promise.all([run('charts', { CHARTS_PORT: String(chartsPort) }), run('oidc-provider', { OIDC_PORT: String(oidcPort), GATEWAY_URL: 'http://127.0.0.1:4999' })])
  const stats = await fetch(`http://127.0.0.1:${chartsPort}/albums/1/stats`, { headers: { 'x-example-via': 'curl' } })
  t.same(await stats.json(), { albumId: 1, plays: 137, via: 'curl' })
  const discovery = (await (await fetch(`http://127.0.0.1:${oidcPort}/.well-known/openid-configuration`)).json()) as { issuer: string }
  t.equal(discovery.issuer, `http://127.0.0.1:${oidcPort}`)
})
