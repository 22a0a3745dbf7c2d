/**
 * The admin console in headless Chromium (README "Admin console"), on the demo and on Chinook
 * (SQLite): every page loads with no console error and no request leaving 127.0.0.1; the operation
 * form runs TodoById and shows its answer; the schema search finds `Track` without its prefix; the
 * traffic page shows the requests the test made. One browser, one gateway per deployment.
 * Screenshots of each page go to test/screenshots/ (git-ignored); docs/console.png is one of them.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { BrowserContext, Page } from 'playwright-core'
import { startDemo } from './helpers/demo.js'
import { startChinookExample } from './helpers/chinook-example.js'

const CHROMIUM = '/usr/bin/chromium'
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const shots = join(root, 'test/screenshots')

async function launch(): Promise<{ context: BrowserContext; problems: string[]; refused: string[]; close(): Promise<void> }> {
  const { chromium } = await import('playwright-core')
  const userDataDir = mkdtempSync(join(tmpdir(), 'tributary-chromium-'))
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
  const problems: string[] = []
  const refused: string[] = []
  await context.route((url) => url.hostname !== '127.0.0.1' && url.protocol !== 'data:', async (route) => {
    refused.push(route.request().url())
    await route.abort()
  })
  await context.addInitScript(() => {
    const g = globalThis as unknown as { addEventListener(type: string, cb: (e: { violatedDirective: string; blockedURI: string }) => void): void; console: { error(...a: unknown[]): void } }
    g.addEventListener('securitypolicyviolation', (e) => g.console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`))
  })
  context.on('page', (page) => watch(page, problems))
  for (const page of context.pages()) watch(page, problems)
  return { context, problems, refused, close: async () => { await context.close(); rmSync(userDataDir, { recursive: true, force: true }) } }
}

function watch(page: Page, problems: string[]): void {
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`)
  })
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
}

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(shots, { recursive: true })
  await page.screenshot({ path: join(shots, `${name}.png`) })
}

t.test('the console in Chromium', { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent (apt-get install chromium)`, timeout: 120_000 }, async (t) => {
  const browser = await launch()
  t.teardown(() => browser.close())
  const page = browser.context.pages()[0] ?? await browser.context.newPage()

  // ----- the demo -----
  const demo = await startDemo(t, { listen: true })
  const base = demo.url.replace('localhost', '127.0.0.1')
  await page.goto(`${base}/console#/sources`)
  await page.locator('.card.source').nth(2).waitFor()
  t.equal(await page.locator('.card.source').count(), 3, 'the three sources of the demo')
  t.match(await page.locator('[data-source="todo"]').innerText(), /up[\s\S]*database/)
  await shot(page, 'demo-sources')

  await page.goto(`${base}/console#/operations/TodoById`)
  await page.locator('[data-operation="TodoById"]').waitFor()
  await page.fill('#var-id', '1')
  await page.click('button[type=submit]')
  const answer = page.locator('pre[aria-label=answer]')
  await answer.waitFor()
  t.match(await answer.innerText(), /"todo_findUniqueTodo"[\s\S]*"Read docs\/architecture\.md"/, 'the form runs TodoById and shows its answer')
  t.match(await page.locator('.operation').innerText(), /curl 'http:\/\/127\.0\.0\.1:\d+\/operations\/TodoById\?id=1'/, 'the curl line')
  t.match(await page.locator('.operation').innerText(), /client\.TodoById\(\{id: 1\}\)/, 'the typed-client call')
  await shot(page, 'demo-operations')

  await page.goto(`${base}/console#/schema/todo/todo_Todo`)
  await page.locator('.type-detail[data-type="todo_Todo"]').waitFor()
  t.match(await page.locator('.type-detail').innerText(), /title[\s\S]*varchar|title[\s\S]*text/i, 'a field with its column type')
  await page.check('.toolbar input[type=checkbox]')
  await page.locator('svg.graph .node').first().waitFor()
  await shot(page, 'demo-schema-graph')

  await page.goto(`${base}/console#/traffic`)
  const row = page.locator('table[aria-label=Operation] tr', { hasText: 'TodoById' })
  await row.waitFor()
  t.match(await row.innerText(), /TodoById\s+1\b/, 'the traffic page shows the request the form made')
  await shot(page, 'demo-traffic')

  await page.goto(`${base}/console#/graphiql`)
  const graphiql = page.frameLocator('iframe[title=GraphiQL]')
  await graphiql.locator('.graphiql-explorer-root, .docExplorerWrap, [class*=explorer]').first().waitFor({ timeout: 20_000 })
  await graphiql.locator('.graphiql-query-editor').waitFor()
  t.match(await graphiql.locator('.graphiql-query-editor').innerText(), /The stored operation \w+/, 'GraphiQL opens on the deployment\'s default query')
  await shot(page, 'demo-graphiql')

  await page.goto(`${base}/console#/openapi`)
  const swagger = page.frameLocator('iframe[title=OpenAPI]')
  await swagger.locator('.swagger-ui .opblock').first().waitFor({ timeout: 20_000 })
  t.ok(await swagger.locator('.opblock-summary-path', { hasText: '/operations/TodoById' }).count() > 0, 'the OpenAPI viewer lists the operations')
  await shot(page, 'demo-openapi')

  // ----- Chinook -----
  const { app } = await startChinookExample(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const chinook = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`

  await page.goto(`${chinook}/console#/sources`)
  await page.locator('[data-source="chinook"]').waitFor()
  await shot(page, 'chinook-sources')

  await page.goto(`${chinook}/console#/schema`)
  await page.locator('.type-list li').first().waitFor()
  await page.fill('input[type=search]', 'Track')
  await page.locator('.type-detail[data-type="chinook_Track"]').waitFor()
  t.equal(await page.locator('.type-list li a').first().innerText(), 'chinook_Track', 'the search finds Track without its prefix, first')
  t.match(await page.locator('.type-detail').innerText(), /milliseconds[\s\S]*integer/i, 'with its columns and their types')
  await shot(page, 'chinook-schema')

  await page.goto(`${chinook}/console#/operations/TopTracks`)
  await page.locator('[data-operation="TopTracks"]').waitFor()
  await page.fill('#var-genre', 'Jazz')
  await page.click('button[type=submit]')
  await page.locator('pre[aria-label=answer]').waitFor()
  t.match(await page.locator('pre[aria-label=answer]').innerText(), /chinook_findManyTrack/)
  await shot(page, 'chinook-operations')

  await page.goto(`${chinook}/console#/traffic`)
  await page.locator('table[aria-label=Operation] tr', { hasText: 'TopTracks' }).waitFor()
  await page.locator('table[aria-label=Source] tr', { hasText: 'chinook' }).waitFor()
  await shot(page, 'chinook-traffic')

  t.same(browser.problems, [], 'no console error on any page')
  t.same(browser.refused, [], 'no request left 127.0.0.1')
})
