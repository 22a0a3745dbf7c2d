/**
 * A config file in each kind of project a user has: CommonJS as `npm init -y` leaves it (`"type":
 * "commonjs"`), `"type": "module"`, and no `type` at all. `tributary` is linked into the project's
 * node_modules, and the loader runs in plain node (dist/), as the installed command does: the tests
 * themselves run under tsx, which would hide the difference.
 *
 * Each config must load, and its `import … from 'tributary-gateway'` must be the instance the command runs
 * (a second copy loaded undici twice: `TypeError: Illegal constructor`), also after a development reload,
 * which loads the user's own files afresh.
 */
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const work = mkdtempSync(join(tmpdir(), 'tributary-projects-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'development', LOG_LEVEL: 'warn' }
for (const name of ['TRIBUTARY_CONFIG', 'NODE_OPTIONS', 'DATABASE_URL']) delete env[name]

const esmConfig = (part: string) => `import { defineConfig, schema } from 'tributary-gateway'
import { stamp } from './${part}'
export { defineConfig }
export const partStamp = stamp
export default defineConfig({ datasources: [schema({ namespace: 'meta', typeDefs: 'type Query { v: Int }' })] })
`
const cjsConfig = `const { defineConfig, schema } = require('tributary-gateway')
module.exports = { defineConfig, default: defineConfig({ datasources: [schema({ namespace: 'meta', typeDefs: 'type Query { v: Int }' })] }) }
`

/** Loads each file twice (once fresh) in a plain node process; prints what it found. */
const probe = `
import { importModule, loadConfigFile } from ${JSON.stringify(pathToFileURL(join(root, 'dist/gateway/config/load.js')).href)}
import * as api from ${JSON.stringify(pathToFileURL(join(root, 'dist/gateway/index.js')).href)}
const out = {}
for (const file of process.argv.slice(1)) {
  try {
    const first = await importModule(file)
    const fresh = await importModule(file, true)
    const config = await loadConfigFile(file, { fresh: true })
    out[file] = { same: first.defineConfig === api.defineConfig && fresh.defineConfig === api.defineConfig, sources: config.datasources.length, reloaded: first.partStamp === undefined ? null : first.partStamp !== fresh.partStamp }
  } catch (err) { out[file] = { error: String(err?.message ?? err).split('\\n')[0] } }
}
console.log(JSON.stringify(out))
`

/** Runs a command without blocking the event loop (the three projects run side by side); its exit status and output. */
function run(file: string, args: string[], cwd: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    child.on('close', (status) => resolve({ status, stdout, stderr }))
  })
}

// `npm init -y` runs once (a second of CPU each time); each project starts from its package.json.
mkdirSync(join(work, 'npm-init'))
const init = spawnSync('npm', ['init', '-y'], { cwd: join(work, 'npm-init'), env, encoding: 'utf8' })
const initPackage = readFileSync(join(work, 'npm-init/package.json'), 'utf8')

// Three projects of a few CLI-sized processes each, side by side: up to 3 minutes on a loaded machine.
t.setTimeout(6 * 60_000)
t.jobs = 3

for (const kind of ['commonjs', 'module', 'none'] as const) {
  t.test(`a project with ${kind === 'none' ? 'no "type"' : `"type": "${kind}"`}`, async (t) => {
    const dir = join(work, kind)
    mkdirSync(join(dir, 'node_modules'), { recursive: true })
    t.equal(init.status, 0, init.stderr)
    const pkg = JSON.parse(initPackage) as { type?: string }
    if (kind === 'commonjs') t.not(pkg.type, 'module', 'npm init -y leaves a CommonJS project')
    else if (kind === 'module') pkg.type = 'module'
    else delete pkg.type
    writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2))
    symlinkSync(root, join(dir, 'node_modules/tributary-gateway'))
    writeFileSync(join(dir, 'part.ts'), 'export const stamp: number = Math.random()\n')
    writeFileSync(join(dir, 'part.mjs'), 'export const stamp = Math.random()\n')
    const files: Record<string, string> = {
      'tributary.config.ts': esmConfig('part.js'),
      'tributary.config.mts': esmConfig('part.js'),
      'tributary.config.mjs': esmConfig('part.mjs'),
      'tributary.config.cjs': cjsConfig,
      'tributary.config.js': kind === 'module' ? esmConfig('part.mjs') : cjsConfig,
    }
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)

    const r = await run(process.execPath, ['--input-type=module', '-e', probe, ...Object.keys(files).map((f) => join(dir, f))], dir)
    t.equal(r.status, 0, r.stderr)
    const found = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>
    for (const name of Object.keys(files)) {
      const esm = /from 'tributary-gateway'/.test(files[name])
      t.same(found[join(dir, name)], { same: true, sources: 1, reloaded: esm ? true : null }, `${name} loads, with the one tributary instance`)
    }

    const gen = await run(process.execPath, [join(root, 'dist/gateway/cli.js'), 'generate'], dir)
    t.equal(gen.status, 0, `tributary generate with tributary.config.ts:\n${gen.stdout}${gen.stderr}`)
    t.match(readFileSync(join(dir, 'generated/schema.graphql'), 'utf8'), /meta_v: Int/)
  })
}
