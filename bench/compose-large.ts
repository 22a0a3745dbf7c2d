/**
 * Composition of ten large sources (issue 29.5, "Composition of large graphs"): the CPU time and the
 * peak RSS of `createGateway` — load, convert, compose, generate — over eight REST sources shaped
 * and sized like the APIs of the issue (GitHub, Stripe, Twilio, Slack, Asana, OpenAI, Spotify,
 * Petstore: synthetic documents from test/helpers/large-openapi.ts, so the bench needs no network),
 * the Chinook database (SQLite) and a GraphQL-style local schema. Target: under 3 s of CPU and under
 * 400 MB of RSS.
 *
 *   npx tsx bench/compose-large.ts              # one run, prints one JSON line
 *   npx tsx bench/compose-large.ts --runs 3     # several runs, each in a fresh process
 *   npx tsx bench/compose-large.ts --scale 2    # documents twice as large
 *   npx tsx bench/compose-large.ts --profile /tmp/c.cpuprofile   # a V8 profile of the composition alone
 *
 * Each run is its own process (`--child`), so the figures are of one cold composition (after a small
 * one that loads the modules of every source kind, whose compilation by tsx is not composition): `cpuMs`
 * is the process's user + system CPU spent in `createGateway` (process.cpuUsage), `wallMs` its wall time,
 * `rssMb` the peak RSS of the process (getrusage maxrss, which includes node and tsx: `baseRssMb` is
 * the peak before composing), `operations` and `types` the size of the composed schema.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { pino } from 'pino'
import { Session } from 'node:inspector'

/** One inspector command, as a promise. */
const post = (session: Session, method: string): Promise<unknown> =>
  new Promise((resolve, reject) => session.post(method, (err, result) => (err ? reject(err) : resolve(result))))

const args = process.argv.slice(2)
const option = (name: string, fallback: number): number => {
  const i = args.indexOf(name)
  return i >= 0 && Number(args[i + 1]) > 0 ? Number(args[i + 1]) : fallback
}
const TARGET_CPU_MS = 3000
const TARGET_RSS_MB = 400

/** Resources per API (each is 5 operations and 2 component schemas), roughly each API's size. */
const APIS: Array<[name: string, resources: number, properties: number]> = [
  ['github', 180, 14], // ~900 operations
  ['stripe', 110, 20], // ~550 operations, wide objects
  ['twilio', 90, 12],
  ['slack', 35, 10],
  ['asana', 40, 12],
  ['openai', 30, 12],
  ['spotify', 18, 10],
  ['petstore', 4, 6],
]

async function child(): Promise<void> {
  const scale = option('--scale', 1)
  const { largeOpenApi } = await import('../test/helpers/large-openapi.js')
  const { chinookSqliteFile } = await import('../examples/chinook/load.js')
  const { resolveConfig, schema, database } = await import('../gateway/config/index.js')
  const { createGateway } = await import('../gateway/runtime.js')
  const dir = mkdtempSync(join(tmpdir(), 'tributary-compose-large-'))
  try {
    const sources = APIS.map(([name, resources, properties]) => {
      const file = join(dir, `${name}.json`)
      writeFileSync(file, JSON.stringify(largeOpenApi({ name, resources: Math.round(resources * scale), properties })))
      return { kind: 'rest' as const, namespace: name, openapi: file }
    })
    const typeDefs = `type Query { country(code: ID!): Country countries: [Country!]! }
      type Country { code: ID! name: String! capital: String currency: String languages: [Language!]! }
      type Language { code: ID! name: String! native: String }`
    const config = resolveConfig({
      mode: 'production',
      datasources: [...sources, database({ namespace: 'chinook', url: `sqlite://${chinookSqliteFile}` }), schema({ namespace: 'countries', typeDefs, resolvers: {} })],
      generatedDir: join(dir, 'generated'),
      operations: { dir: join(dir, 'operations') },
    })
    // The modules every source kind needs are loaded first by a small composition (under tsx, compiling
    // them costs about a second of CPU that a built gateway does not spend): the figures are composition.
    const warm = await createGateway(resolveConfig({
      mode: 'production',
      datasources: [sources[sources.length - 1]!, database({ namespace: 'chinook', url: `sqlite://${chinookSqliteFile}` }), schema({ namespace: 'countries', typeDefs, resolvers: {} })],
      generatedDir: join(dir, 'generated-warm'),
      operations: { dir: join(dir, 'operations') },
    }), { logger: pino({ level: 'silent' }), cwd: dir })
    await warm.close()
    const baseRssMb = process.resourceUsage().maxRSS / 1024
    const profileFile = args.includes('--profile') ? args[args.indexOf('--profile') + 1] : undefined
    const session = profileFile ? new Session() : undefined
    if (session) {
      session.connect()
      await post(session, 'Profiler.enable')
      await post(session, 'Profiler.start')
    }
    const cpu = process.cpuUsage()
    const started = performance.now()
    const gateway = await createGateway(config, { logger: pino({ level: 'silent' }), cwd: dir })
    const wallMs = performance.now() - started
    const used = process.cpuUsage(cpu)
    if (session && profileFile) {
      const { profile } = (await post(session, 'Profiler.stop')) as { profile: unknown }
      writeFileSync(profileFile, JSON.stringify(profile))
      session.disconnect()
    }
    const rssMb = process.resourceUsage().maxRSS / 1024
    const query = gateway.schema.getQueryType()!.getFields()
    const mutation = gateway.schema.getMutationType()?.getFields() ?? {}
    const result = {
      scale,
      sources: config.datasources.length,
      operations: Object.keys(query).length + Object.keys(mutation).length,
      types: Object.keys(gateway.schema.getTypeMap()).length,
      cpuMs: Math.round((used.user + used.system) / 1000),
      wallMs: Math.round(wallMs),
      rssMb: Math.round(rssMb),
      baseRssMb: Math.round(baseRssMb),
    }
    await gateway.close()
    process.stdout.write(`${JSON.stringify({ ...result, pass: result.cpuMs < TARGET_CPU_MS && result.rssMb < TARGET_RSS_MB })}\n`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (args.includes('--child')) {
  await child()
} else {
  const runs = option('--runs', 1)
  // With the node flags of `npm start`, read from package.json's scripts.start.
  const { START_NODE_FLAGS } = (await import('./lib/processes.mjs')) as { START_NODE_FLAGS: string[] }
  for (let i = 0; i < runs; i++) {
    const res = spawnSync(process.execPath, [...process.execArgv, ...START_NODE_FLAGS, fileURLToPath(import.meta.url), '--child', ...args], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' })
    if (res.status !== 0) throw new Error(`run ${i + 1} failed (exit ${res.status})`)
    process.stdout.write(res.stdout)
  }
}
