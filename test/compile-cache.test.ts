/**
 * Node's module compile cache for the `tributary` command (gateway/compile-cache.ts): the folder it
 * picks for a clone and for an installed package, off under coverage and on Node < 22.1, and a real
 * `tributary --version` filling it on Node ≥ 22.1 (run this file with a Node 22 or 24 binary to see
 * that branch: `node node_modules/tap/dist/esm/run/index.js test/compile-cache.test.ts`).
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { compileCacheDir, compileCacheEnv, enableCompileCache } from '../gateway/compile-cache.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const [major, minor] = process.versions.node.split('.').map(Number) as [number, number]
const supported = major > 22 || (major === 22 && minor >= 1)

t.test('the folder: node_modules/.cache/tributary of the project that holds the package', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-compile-cache-'))
  t.teardown(() => spawnSync('rm', ['-rf', dir]))
  const app = join(dir, 'app')
  const installed = join(app, 'node_modules', 'tributary-gateway')
  const scoped = join(app, 'node_modules', '@acme', 'gateway')
  mkdirSync(installed, { recursive: true })
  mkdirSync(scoped, { recursive: true })
  t.equal(compileCacheDir(installed), join(app, 'node_modules', '.cache', 'tributary'), 'an installed package: the node_modules holding it')
  t.equal(compileCacheDir(scoped), join(app, 'node_modules', '.cache', 'tributary'), 'a scoped package: the node_modules above its scope')
  t.equal(compileCacheDir(app), join(app, 'node_modules', '.cache', 'tributary'), 'a clone: its own node_modules')
  t.equal(compileCacheDir(join(dir, 'bare')), undefined, 'no node_modules: Node picks its default folder')
})

t.test('off under V8 coverage; on Node < 22.1 nothing to turn on', async (t) => {
  t.equal(enableCompileCache({ NODE_V8_COVERAGE: '/tmp/coverage' }), undefined)
  if (!supported) {
    t.equal(enableCompileCache({}), undefined, `Node ${process.versions.node} has no module.enableCompileCache`)
    t.same(compileCacheEnv(), {})
  }
})

t.test('tributary --version fills the cache on Node ≥ 22.1 and works the same on Node 20', async (t) => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  delete env.NODE_V8_COVERAGE
  delete env.NODE_COMPILE_CACHE
  delete env.NODE_DISABLE_COMPILE_CACHE
  const out = spawnSync(process.execPath, [join(root, 'dist/gateway/cli.js'), '--version'], { cwd: root, env, encoding: 'utf8' })
  t.equal(out.status, 0, out.stderr)
  t.match(out.stdout, /^\d+\.\d+\.\d+/)
  const cache = compileCacheDir(root)!
  const mine = existsSync(cache) ? readdirSync(cache).filter((d) => d.startsWith(`v${process.versions.node}-`)) : []
  if (supported) {
    t.equal(mine.length, 1, `a folder for Node ${process.versions.node} in ${cache}`)
    t.ok(readdirSync(join(cache, mine[0]!)).length > 0, 'holding compiled modules')
  } else t.same(mine, [], 'no cache on this Node version')
})
