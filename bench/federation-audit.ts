/**
 * The federation gateway audit (github graphql-hive/federation-gateway-audit), run by hand against this
 * checkout (README "The federation gateway audit, by hand"). The audit's server must be running:
 *
 *   node --import ./polyfill.mjs --import tsx src/cli.ts serve --port 4200     # in the audit's clone
 *   npx tsx bench/federation-audit.ts [--audit http://127.0.0.1:4200] [--mode supergraph|subgraphs] [--suite name]
 *
 * Modes: `supergraph` (the audit's supergraph, composed by Apollo's composition), `subgraphs` (composed in
 * the gateway with `@theguild/federation-composition` and the gateway's corrections). Each suite gets one gateway with
 * one federation source and no namespace; each test's query is POSTed to `/graphql` and
 * `{ data, errors: !!errors }` is compared as the audit's `src/test.ts` does. Prints the failures and
 * `passed/total`.
 */
import { isDeepStrictEqual } from 'node:util'
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { resolveConfig, federation } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'

const args = process.argv.slice(2)
const arg = (name: string, fallback?: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback)
const audit = arg("--audit", "http://127.0.0.1:4200")!.replace(/\/$/, '')
const mode = arg('--mode', 'supergraph')!
const only = arg('--suite')
const verbose = args.includes('--verbose')

const suites = ((await (await fetch(`${audit}/tests`)).json()) as string[]).map((u) => new URL(u).pathname.split('/')[1]!).filter((s) => !only || s === only)
let passed = 0
let total = 0
const failures: string[] = []
for (const suite of suites) {
  const tests = (await (await fetch(`${audit}/${suite}/tests`)).json()) as { query: string; expected: { data?: unknown; errors?: boolean } }[]
  let source
  if (mode === 'supergraph') source = federation({ supergraph: `${audit}/${suite}/supergraph` })
  else {
    const subgraphs = ((await (await fetch(`${audit}/${suite}/subgraphs`)).json()) as { name: string; url: string }[]).map((s) => ({ name: s.name, url: s.url.replace('localhost', '127.0.0.1') }))
    source = federation({ subgraphs })
  }
  let app: Awaited<ReturnType<typeof buildApp>> | undefined
  let gateway: Awaited<ReturnType<typeof createGateway>> | undefined
  try {
    const dir = mkdtempSync(join(tmpdir(), 'tributary-audit-'))
    mkdirSync(join(dir, 'ops'))
    gateway = await createGateway(resolveConfig({ datasources: [source], operations: { dir: join(dir, 'ops') }, generatedDir: join(dir, 'generated') }), { logger: pino({ level: 'silent' }) })
    app = await buildApp(gateway, { logger: false })
  } catch (err) {
    total += tests.length
    failures.push(`${suite} (all ${tests.length}): ${(err as Error).message.slice(0, 300)}`)
    continue
  }
  for (const [i, { query, expected }] of tests.entries()) {
    total++
    const res = await app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json' }, payload: { query } })
    const body = res.json() as { data?: unknown; errors?: { message: string }[] }
    const optional = typeof expected.errors !== 'boolean'
    const received = { data: body.data ?? null, errors: optional ? null : !!body.errors?.length }
    const want = { data: expected.data ?? null, errors: optional ? null : (expected.errors ?? false) }
    if (isDeepStrictEqual(received, want)) passed++
    else failures.push(`${suite} ${i}: ${body.errors?.map((e) => e.message).join(' | ') ?? ''}${verbose ? `\n  want ${JSON.stringify(want)}\n  got  ${JSON.stringify(received)}` : ''}`)
  }
  await app.close()
  await gateway.close()
}
console.log(failures.join('\n'))
console.log(`${mode}: ${passed}/${total}`)
process.exit(0)
