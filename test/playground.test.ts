// The playground: its assets over HTTP (no browser), then GraphiQL in headless Chromium against a
// real server with a GraphQL POST endpoint and graphql-transport-ws subscriptions.
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import fastifyWebsocket from '@fastify/websocket'
import { makeExecutableSchema } from '@graphql-tools/schema'
import { graphql, parse, print } from 'graphql'
import {
  PLAYGROUND_ASSETS_PREFIX, playgroundContentSecurityPolicy, playgroundPlugin, playgroundQuery, renderPlaygroundHtml,
} from '../gateway/http/playground.js'
import { createSubscriptionHandler, websocketServerOptions } from '../gateway/http/subscriptions.js'

const CHROMIUM = '/usr/bin/chromium'

interface Probe { returned: number }

/** The little of the browser's DOM the page checks use (the test tsconfig has no DOM lib). */
interface CodeMirrorHost { CodeMirror?: { getValue(): string; setValue(value: string): void } }
interface BrowserGlobals { document: { querySelector(selector: string): CodeMirrorHost | null } }

/** A small app shaped like the gateway's `/graphql`: the page, POST, and WebSocket. */
async function startApp(t: Test, listen: boolean): Promise<{ app: FastifyInstance; base: string; probe: Probe }> {
  const probe: Probe = { returned: 0 }
  const schema = makeExecutableSchema({
    typeDefs: /* GraphQL */ `
      type Message { id: Int!, content: String! }
      type Query { messages: [Message!]! }
      type Subscription { messageCreated: Message }
    `,
    resolvers: {
      Query: { messages: () => [{ id: 1, content: 'first' }, { id: 2, content: 'second' }] },
      Subscription: {
        messageCreated: {
          subscribe: async function * messageCreated () {
            try {
              for (let id = 1; ; id++) {
                await sleep(100)
                yield { messageCreated: { id, content: new Date().toISOString() } }
              }
            } finally {
              probe.returned++
            }
          },
        },
      },
    },
  })
  const app = Fastify({ logger: { level: 'silent' } })
  t.teardown(() => app.close())
  await app.register(fastifyWebsocket, { options: websocketServerOptions })
  await app.register(playgroundPlugin, { endpoint: '/graphql' })
  app.route({
    method: 'GET',
    url: '/graphql',
    handler: async (request, reply) => {
      const accept = request.headers.accept ?? ''
      if (accept.includes('text/html')) {
        return reply
          .type('text/html; charset=utf-8')
          .header('content-security-policy', `${playgroundContentSecurityPolicy({ endpoint: '/graphql' })}; frame-ancestors 'none'`)
          .send(renderPlaygroundHtml({ endpoint: '/graphql', assetsPrefix: PLAYGROUND_ASSETS_PREFIX, title: 'Test <playground>', defaultQuery: playgroundQuery(schema, new Map()) }))
      }
      return reply.code(400).send({ errors: [{ message: 'no query' }] })
    },
    wsHandler: createSubscriptionHandler({ getSchema: () => schema, context: () => ({}), logger: app.log }),
  })
  app.post('/graphql', async (request) => {
    const body = request.body as { query: string; variables?: Record<string, unknown>; operationName?: string }
    return graphql({ schema, source: body.query, variableValues: body.variables, operationName: body.operationName })
  })
  let base = ''
  if (listen) {
    await app.listen({ host: '127.0.0.1', port: 0 })
    const address = app.server.address()
    if (address === null || typeof address === 'string') throw new Error('no port')
    base = `http://127.0.0.1:${address.port}`
  }
  return { app, base, probe }
}

/** `src`/`href` URLs of the page's `<script>` and `<link>` tags. */
function assetUrls(html: string): string[] {
  return [...html.matchAll(/<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'))
}

t.test('every asset the page references is served with its content type and long caching', async (t) => {
  const { app } = await startApp(t, false)
  const page = await app.inject({ method: 'GET', url: '/graphql', headers: { accept: 'text/html' } })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  const html = page.body
  t.notMatch(html, /https?:\/\/(?!127\.0\.0\.1)/, 'no absolute URL (no CDN)')
  for (const [, attributes, content] of html.matchAll(/<script\b([^>]*)>([^<]*)<\/script>/g)) {
    const inert = attributes!.includes('type="application/json"')
    t.ok(inert || (attributes!.includes(' src="') && content === ''), `<script${attributes}> is inert data or loads a file`)
  }
  t.notMatch(html, /\son[a-z]+=/i, 'no inline event handler')
  t.match(html, '<title>Test &lt;playground&gt;</title>', 'title escaped')

  const urls = assetUrls(html).filter((u) => !u.startsWith('data:'))
  t.same(urls.map((u) => u.replace(/\?v=[0-9a-f]+$/, '')), [
    '/playground/assets/graphiql.min.css', '/playground/assets/playground.css',
    '/playground/assets/react.production.min.js', '/playground/assets/react-dom.production.min.js',
    '/playground/assets/graphiql.min.js', '/playground/assets/playground.js',
  ])

  // the ES module graph: playground.js -> graphql-ws/client.js -> its chunks
  const modules = ['/playground/assets/playground.js']
  const seen = new Set<string>()
  while (modules.length > 0) {
    const url = modules.pop()!
    if (seen.has(url)) continue
    seen.add(url)
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200, `${url} 200`)
    t.equal(res.headers['content-type'], 'text/javascript; charset=utf-8', `${url} is JavaScript`)
    for (const [, spec] of res.body.matchAll(/^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm)) {
      t.match(spec, /^\.\//, `${url} imports ${spec} relatively`)
      modules.push(new URL(spec!, `http://x${url}`).pathname)
    }
  }
  t.ok(seen.has('/playground/assets/graphql-ws/client.js'), 'the graphql-ws client is part of the page')
  t.ok(seen.size >= 3)

  for (const url of urls) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200, `${url} 200`)
    t.equal(res.headers['content-type'], url.includes('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8', `${url} content type`)
    t.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable', `${url} cached for a year`)
    t.equal(res.headers['x-content-type-options'], 'nosniff')
    t.ok(res.body.length > 0)
    const again = await app.inject({ url, headers: { 'if-none-match': String(res.headers.etag) } })
    t.equal(again.statusCode, 304, `${url} revalidates`)
  }

  const big = urls.find((u) => u.includes('graphiql.min.js'))!
  const plain = await app.inject({ url: big })
  const zipped = await app.inject({ url: big, headers: { 'accept-encoding': 'gzip, deflate' } })
  t.equal(zipped.headers['content-encoding'], 'gzip')
  t.ok(zipped.rawPayload.length < plain.rawPayload.length / 2, 'gzip is smaller')
  t.ok(gunzipSync(zipped.rawPayload).equals(plain.rawPayload), 'gzip round-trips')
  t.not(zipped.headers.etag, plain.headers.etag, 'each encoding has its own ETag')
  t.equal((await app.inject({ url: big, headers: { 'accept-encoding': 'gzip', 'if-none-match': String(zipped.headers.etag) } })).statusCode, 304)
  t.notOk((await app.inject({ url: big, headers: { 'accept-encoding': 'gzip;q=0' } })).headers['content-encoding'])

  const stale = await app.inject({ url: '/playground/assets/graphiql.min.js?v=old' })
  t.equal(stale.headers['cache-control'], 'public, max-age=0, must-revalidate', 'a stale version is not cached for long')
  t.equal((await app.inject({ method: 'HEAD', url: big })).statusCode, 200)
  for (const url of ['/playground/assets/nope.js', '/playground/assets/../package.json', '/playground/assets/%2e%2e/package.json', '/playground/assets/']) {
    t.equal((await app.inject({ url })).statusCode, 404, `${url} 404`)
  }
})

t.test('renderPlaygroundHtml escapes its settings and derives the CSP', async (t) => {
  const html = renderPlaygroundHtml({
    endpoint: 'https://api.example.test/graphql',
    subscriptionEndpoint: '/graphql</script><script>alert(1)</script>',
    title: '"><img src=x onerror=alert(1)>',
    assetsPrefix: '/assets/',
    defaultQuery: '{ a } # </script>',
  })
  t.notMatch(html, '</script><script>alert(1)')
  t.notMatch(html, '<img src=x')
  const json = /<script type="application\/json" id="tributary-playground-config">([^<]*)<\/script>/.exec(html)
  t.ok(json, 'config block present')
  t.same(JSON.parse(json![1]!), {
    endpoint: 'https://api.example.test/graphql',
    subscriptionEndpoint: '/graphql</script><script>alert(1)</script>',
    defaultQuery: '{ a } # </script>',
  })
  t.match(html, /href="\/assets\/graphiql\.min\.css\?v=[0-9a-f]{12}"/, 'prefix without a double slash')
  t.match(playgroundContentSecurityPolicy({ endpoint: 'https://api.example.test/graphql' }),
    "connect-src 'self' https://api.example.test wss://api.example.test")
  t.equal(renderPlaygroundHtml({ endpoint: '/graphql', assetsPrefix: '/p' }).includes('__typename'), true, 'the default query runs on any schema')
  t.equal(renderPlaygroundHtml({ endpoint: '/graphql', assetsPrefix: '/p' }).includes('messages'), false, "no other deployment's field")
})

t.test('playgroundQuery: the first stored query of the deployment, else its first root field', async (t) => {
  const schema = makeExecutableSchema({
    typeDefs: /* GraphQL */ `
      type Book { id: Int!, title: String!, author: Author, excerpt(words: Int!): String }
      type Author { name: String }
      type Query { greet(name: String!): String, shelf_findManyBook(take: Int, skip: Int = 0): [Book!]!, count: Int }
      type Mutation { addBook(title: String!): Book }
    `,
  })
  const op = (name: string, kind: 'query' | 'mutation', text: string, internal = false) => [name, { name, kind, stored: { internal, document: parse(text) } }] as const
  t.equal(playgroundQuery(schema, new Map()).replace(/^#.*\n/gm, '').trim(), '{\n  shelf_findManyBook {\n    id\n    title\n  }\n}', 'no operation: the first root field callable without arguments, with its scalar fields')
  const ops = new Map([
    op('AddBook', 'mutation', 'mutation AddBook($t: String!) { addBook(title: $t) { id } }'),
    op('internal/Audit', 'query', 'query Audit { count }', true),
    op('Shelf', 'query', 'query Shelf { shelf_findManyBook(take: 3) { title } }'),
    op('Books', 'query', 'query Books { shelf_findManyBook { id } }'),
  ])
  const text = playgroundQuery(schema, ops)
  t.match(text, /# The stored operation Books \(operations\/Books\.graphql\), also GET\/POST \/operations\/Books\./)
  t.equal(text.replace(/^#.*\n/gm, '').trim(), print(parse('query Books { shelf_findManyBook { id } }')), 'the first query by name, as served')
  t.equal(playgroundQuery(schema, ops), text, 'remembered per schema and operations')
  t.match(playgroundQuery(schema, new Map([op('AddBook', 'mutation', 'mutation AddBook($t: String!) { addBook(title: $t) { id } }'), op('internal/Audit', 'query', 'query Audit { count }', true)])), /mutation AddBook/, 'only a mutation: that one; internal operations never')
  const bare = makeExecutableSchema({ typeDefs: 'type Query { greet(name: String!): String }' })
  t.equal(playgroundQuery(bare, new Map()).replace(/^#.*\n/gm, '').trim(), '{\n  __typename\n}', 'no root field callable without arguments: __typename')
})

t.test('the plugin refuses an endpoint that is not a path or URL', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await t.rejects(async () => { await app.register(playgroundPlugin, { endpoint: 'graphql' }) }, /endpoint must be a path/)
})

t.test('GraphiQL runs in headless Chromium: renders, queries, subscribes, stays on 127.0.0.1', {
  skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent (apt-get install chromium)`,
  timeout: 90_000,
}, async (t) => {
  const { chromium } = await import('playwright-core')
  const { base, probe } = await startApp(t, true)
  const userDataDir = await mkdtemp(join(tmpdir(), 'tributary-chromium-'))
  t.teardown(() => rm(userDataDir, { recursive: true, force: true }))
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  })
  t.teardown(() => context.close())

  const requested: string[] = []
  const refused: string[] = []
  const problems: string[] = []
  await context.route((url) => url.hostname !== '127.0.0.1', async (route) => {
    refused.push(route.request().url())
    await route.abort()
  })
  let introspected = false
  context.on('request', (request) => {
    requested.push(request.url())
    if (request.method() === 'POST' && (request.postData() ?? '').includes('IntrospectionQuery')) introspected = true
  })
  // CSP violations are reported to the console as errors too; this makes sure none goes unseen
  await context.addInitScript(() => {
    const g = globalThis as unknown as { addEventListener(type: string, cb: (e: { violatedDirective: string; blockedURI: string }) => void): void; console: { error(...a: unknown[]): void } }
    g.addEventListener('securitypolicyviolation', (e) => g.console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`))
  })
  const page = context.pages()[0] ?? await context.newPage()
  page.on('websocket', (ws) => { requested.push(ws.url()) })
  page.on('console', (message) => { if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()}`) })
  page.on('pageerror', (err) => { problems.push(`pageerror: ${err.message}`) })

  const response = await page.goto(`${base}/graphql`)
  t.equal(response?.status(), 200)
  await page.waitForSelector('.graphiql-container', { timeout: 20_000 })
  const editorValue = (selector: string): Promise<string> => page.evaluate((sel) => {
    return (globalThis as unknown as BrowserGlobals).document.querySelector(sel)?.CodeMirror?.getValue() ?? ''
  }, selector)
  const QUERY_EDITOR = '.graphiql-query-editor .CodeMirror'
  const RESULT = '.result-window .CodeMirror'
  /** Waits until the result pane matches; on timeout, fails with what the page showed and logged. */
  const waitForResult = async (pattern: RegExp): Promise<void> => {
    const end = Date.now() + 10_000
    while (!pattern.test(await editorValue(RESULT))) {
      if (Date.now() > end) {
        throw new Error(`the result pane never matched ${pattern}: ${JSON.stringify(await editorValue(RESULT))}; console: ${JSON.stringify(problems)}; requests: ${JSON.stringify(requested)}`)
      }
      await sleep(50)
    }
  }

  t.match(await editorValue(QUERY_EDITOR), /messages \{\s+id\s+content\s+\}/, 'the query built from the first root field is in the editor')
  await page.waitForFunction(() => !(globalThis as unknown as BrowserGlobals).document.querySelector('.graphiql-spinner'), undefined, { timeout: 10_000 })
  t.ok(introspected, 'GraphiQL introspected the schema over POST')

  await page.click('.graphiql-execute-button')
  await waitForResult(/"second"/)
  t.pass('a query ran over HTTP POST')

  await page.evaluate((sel) => {
    (globalThis as unknown as BrowserGlobals).document.querySelector(sel)?.CodeMirror?.setValue('subscription Live { messageCreated { id content } }')
  }, QUERY_EDITOR)
  await sleep(1000) // GraphiQL parses the editor's text (documentAST, operation name) after a debounce
  await page.click('.graphiql-execute-button')
  await waitForResult(/"id": ([3-9]|\d\d)/)
  const result = JSON.parse(await editorValue(RESULT)) as { data: { messageCreated: { id: number; content: string } } }
  t.ok(result.data.messageCreated.id >= 3, `subscription results stream in (id ${result.data.messageCreated.id})`)
  t.ok(requested.some((u) => u.startsWith(base.replace('http:', 'ws:'))), 'the subscription went over ws:// to the same host')

  if (process.env.PLAYGROUND_SCREENSHOT) await page.screenshot({ path: process.env.PLAYGROUND_SCREENSHOT })

  await page.click('.graphiql-execute-button') // stop
  // open the documentation explorer and the settings dialog: more of the UI under the CSP
  await page.click('button[aria-label="Show Documentation Explorer"]')
  await page.waitForSelector('.graphiql-doc-explorer', { timeout: 5000 })
  await page.click('button[aria-label="Open settings dialog"]')
  await page.waitForSelector('.graphiql-dialog', { timeout: 5000 })
  const end = Date.now() + 5000
  while (probe.returned === 0 && Date.now() < end) await sleep(20)
  t.equal(probe.returned, 1, 'stopping the subscription in GraphiQL released the server-side iterator')

  t.same(refused, [], 'no request left 127.0.0.1')
  t.ok(requested.length >= 7, `${requested.length} requests seen`)
  t.same(requested.filter((u) => !u.startsWith(base) && !u.startsWith(base.replace('http:', 'ws:')) && !u.startsWith('data:')), [], 'every request went to the gateway')
  t.same(problems, [], 'no console errors, warnings or CSP violations')
})
