#!/usr/bin/env node
/**
 * Builds the project: compiles TypeScript to dist/, copies the data sources' and examples' non-code
 * assets beside their compiled modules, builds the playground bundle, then (unless --if-needed or
 * --no-generate) writes generated/.
 *
 *   node scripts/build.mjs              full build + generate
 *   node scripts/build.mjs --if-needed  compile only when a source is newer than the last build (npm
 *                                       start, and prepack: `npm pack` packs a fresh dist/ without recompiling)
 */
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const dist = join(root, 'dist')
const stamp = join(dist, '.build-stamp')
const args = process.argv.slice(2)
const ifNeeded = args.includes('--if-needed')
const generate = !ifNeeded && !args.includes('--no-generate')
const inputs = ['gateway', 'console-ui', 'datasources', 'examples', 'scripts', 'config.ts', 'tsconfig.json', 'package.json']
const assetDirs = ['datasources', 'examples']
const assetExt = /\.(graphql|json|sql)$/

function newest(path) {
  if (!existsSync(path)) return 0
  const st = statSync(path)
  if (!st.isDirectory()) return st.mtimeMs
  let max = st.mtimeMs
  for (const entry of readdirSync(path)) {
    if (entry === 'node_modules') continue
    max = Math.max(max, newest(join(path, entry)))
  }
  return max
}

function walk(dir, out = []) {
  if (!existsSync(dir)) return out
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name)
    if (entry.isDirectory()) walk(p, out)
    else out.push(p)
  }
  return out
}

const stale = !existsSync(stamp) || !existsSync(join(dist, 'gateway/http/playground-vendor/graphiql.min.js')) || !existsSync(join(dist, 'gateway/http/console-assets/console.js')) || inputs.some((p) => newest(join(root, p)) > statSync(stamp).mtimeMs)
if (ifNeeded && !stale) process.exit(0)

const step = (msg) => process.stdout.write(`[build] ${msg}\n`)
const started = Date.now()
step('compiling TypeScript (tsc)…')
const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.json')], { stdio: 'inherit' })
if (tsc.status !== 0) {
  process.stderr.write('[build] TypeScript compilation failed\n')
  process.exit(tsc.status ?? 1)
}
// The config schema's validator, precompiled (gateway/config/validate.ts): a built gateway does not
// compile it with ajv at start-up.
{
  const { configValidatorModule, CONFIG_VALIDATOR_FILE } = await import(pathToFileURL(join(dist, 'gateway/config/validate.js')).href)
  writeFileSync(join(dist, 'gateway/config', CONFIG_VALIDATOR_FILE), await configValidatorModule())
  step(`wrote dist/gateway/config/${CONFIG_VALIDATOR_FILE}`)
}
// The server side bundled for start-up (scripts/bundle-gateway.mjs): the entry modules in place of
// tsc's, their code in dist/gateway/chunks/.
{
  step('bundling the gateway (esbuild)…')
  const { bundleGateway } = await import(pathToFileURL(join(root, 'scripts/bundle-gateway.mjs')).href)
  const { files, bytes } = await bundleGateway()
  step(`bundled the gateway: ${files} files, ${(bytes / 1e6).toFixed(1)} MB`)
}
let copied = 0
for (const dir of assetDirs) {
  for (const file of walk(join(root, dir))) {
    if (!assetExt.test(file)) continue
    const target = join(dist, relative(root, file))
    mkdirSync(dirname(target), { recursive: true })
    cpSync(file, target)
    copied++
  }
}
step(`copied ${copied} asset files`)
// The playground's browser files (React's and GraphiQL's UMD builds, with their licences) ship in the
// package itself: graphiql, react and react-dom are devDependencies (gateway/http/playground.ts).
const vendor = join(dist, 'gateway/http/playground-vendor')
mkdirSync(vendor, { recursive: true })
for (const [pkg, from, to] of [
  ['react', 'umd/react.production.min.js', 'react.production.min.js'],
  ['react-dom', 'umd/react-dom.production.min.js', 'react-dom.production.min.js'],
  ['graphiql', 'graphiql.min.js', 'graphiql.min.js'],
  ['graphiql', 'graphiql.min.css', 'graphiql.min.css'],
  ['react', 'LICENSE', 'LICENSE-react'],
  ['react-dom', 'LICENSE', 'LICENSE-react-dom'],
  ['graphiql', 'LICENSE', 'LICENSE-graphiql'],
]) cpSync(join(root, 'node_modules', pkg, from), join(vendor, to))
if (existsSync(join(root, 'scripts/build-playground.mjs'))) {
  step('bundling the playground…')
  const pg = spawnSync(process.execPath, [join(root, 'scripts/build-playground.mjs')], { stdio: 'inherit' })
  if (pg.status !== 0) process.exit(pg.status ?? 1)
}
// The admin console's browser files (gateway/http/console.ts), bundled from devDependencies.
step('bundling the admin console…')
const consoleBuild = spawnSync(process.execPath, [join(root, 'scripts/build-console.mjs')], { stdio: 'inherit' })
if (consoleBuild.status !== 0) process.exit(consoleBuild.status ?? 1)
mkdirSync(dist, { recursive: true })
writeFileSync(stamp, new Date().toISOString())
step(`compiled in ${((Date.now() - started) / 1000).toFixed(1)} s`)

if (generate) {
  step('writing generated/…')
  const gen = spawnSync(process.execPath, [join(dist, 'gateway/cli.js'), 'generate', ...args.filter((a) => a !== '--no-generate')], { stdio: 'inherit' })
  process.exit(gen.status ?? 1)
}
