/**
 * Playground links: `GET /graphql?query=…` from a browser (Accept: text/html first) opens the
 * playground with that query (and its variables) filled in; a client that asks for JSON still gets
 * the GraphQL-over-HTTP answer. The browser part runs in headless Chromium when it is installed.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { startDemo } from './helpers/demo.js'

const CHROMIUM = '/usr/bin/chromium'
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8'
const QUERY = 'query Link($id: Int) { todo_findUniqueTodo(where: { id: $id }) { id title } }'
const link = `/graphql?query=${encodeURIComponent(QUERY)}&variables=${encodeURIComponent('{"id":2}')}&operationName=Link`

/** The JSON config block the page carries. */
function pageConfig(html: string): { initial?: { query: string; variables?: string; operationName?: string } } {
  const m = /<script type="application\/json" id="tributary-playground-config">(.*?)<\/script>/s.exec(html)
  return JSON.parse(m![1]!) as { initial?: { query: string; variables?: string; operationName?: string } }
}

t.test('the server side of a playground link', async (t) => {
  const { app } = await startDemo(t)
  const page = await app.inject({ method: 'GET', url: link, headers: { accept: BROWSER_ACCEPT } })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /text\/html/)
  t.same(pageConfig(page.body).initial, { query: QUERY, variables: '{"id":2}', operationName: 'Link' }, 'the page opens with the query, variables and operation name')

  const plain = await app.inject({ method: 'GET', url: '/graphql', headers: { accept: BROWSER_ACCEPT } })
  t.equal(pageConfig(plain.body).initial, undefined, 'without ?query= the default query shows')
  const opened = (JSON.parse(/id="tributary-playground-config">(.*?)<\/script>/s.exec(plain.body)![1]!) as { defaultQuery: string }).defaultQuery
  t.match(opened, /# The stored operation Roles \(operations\/Roles\.graphql\)/, 'the playground opens on the first stored query of the deployment')
  t.match(opened, /query Roles/)
  t.notMatch(opened, /messages \{/, 'not the demo query of another schema')

  const hostile = await app.inject({ method: 'GET', url: `/graphql?query=${encodeURIComponent('{ a } # </script><script>alert(1)</script>')}`, headers: { accept: BROWSER_ACCEPT } })
  t.notMatch(hostile.body, /<script>alert/, 'the query cannot close the config block')
  t.equal(pageConfig(hostile.body).initial?.query, '{ a } # </script><script>alert(1)</script>')

  for (const accept of ['application/json', 'application/graphql-response+json', '*/*', 'application/json, text/html']) {
    const res = await app.inject({ method: 'GET', url: link, headers: { accept } })
    t.equal(res.statusCode, 200, accept)
    t.same(res.json(), { data: { todo_findUniqueTodo: { id: 2, title: res.json().data.todo_findUniqueTodo.title } } }, `Accept: ${accept} gets GraphQL over HTTP`)
  }
  const none = await app.inject({ method: 'GET', url: link })
  t.equal(none.json().data.todo_findUniqueTodo.id, 2, 'no Accept: GraphQL over HTTP')
})

t.test('with the playground off (production), a browser link is answered as GraphQL over HTTP', async (t) => {
  const { app } = await startDemo(t, { override: { graphql: { playground: false } } })
  const res = await app.inject({ method: 'GET', url: link, headers: { accept: BROWSER_ACCEPT } })
  t.equal(res.statusCode, 200)
  t.equal(res.json().data.todo_findUniqueTodo.id, 2)
  const page = await app.inject({ method: 'GET', url: '/graphql', headers: { accept: BROWSER_ACCEPT } })
  t.equal(page.statusCode, 404, 'no playground page')
  t.equal(page.json().errors[0].extensions.code, 'TRB_ERR_NOT_FOUND')
})

t.test('a playground link opens GraphiQL with the query in the editor (headless Chromium)', {
  skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent (apt-get install chromium)`,
  timeout: 90_000,
}, async (t) => {
  const { chromium } = await import('playwright-core')
  const { url } = await startDemo(t, { listen: true })
  const userDataDir = await mkdtemp(join(tmpdir(), 'tributary-chromium-'))
  t.teardown(() => rm(userDataDir, { recursive: true, force: true }))
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
  t.teardown(() => context.close())
  await context.route((u) => u.hostname !== '127.0.0.1', (route) => route.abort())
  const page = context.pages()[0] ?? await context.newPage()
  const response = await page.goto(`${url}${link}`)
  t.equal(response?.status(), 200)
  await page.waitForSelector('.graphiql-container', { timeout: 20_000 })
  const value = (selector: string): Promise<string> => page.evaluate((sel) => {
    const g = globalThis as unknown as { document: { querySelector(s: string): { CodeMirror?: { getValue(): string } } | null } }
    return g.document.querySelector(sel)?.CodeMirror?.getValue() ?? ''
  }, selector)
  t.equal(await value('.graphiql-query-editor .CodeMirror'), QUERY, 'the query editor holds the linked query')
  t.equal(await value('.graphiql-editor-tool .CodeMirror'), '{"id":2}', 'the variables editor holds the linked variables')
  await page.click('.graphiql-execute-button')
  const end = Date.now() + 10_000
  while (!/"id": 2/.test(await value('.result-window .CodeMirror')) && Date.now() < end) await sleep(50)
  t.match(await value('.result-window .CodeMirror'), /"id": 2/, 'running it answers for id 2')
})
