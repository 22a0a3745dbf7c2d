#!/usr/bin/env node
/**
 * Bundles the gateway's server side for start-up (issue 30, "the demo ready in under 1.5 s after
 * build"; docs/architecture.md §3 "Start-up"). Loading the gateway's ~1,300 ES and CommonJS modules
 * one by one (resolving, reading, compiling each) was more than half of a start; a few bundled
 * files load in a fraction of that.
 *
 * What it writes (run by scripts/build.mjs after tsc, from the TypeScript sources, with esbuild):
 * - the **entry modules**, in place of tsc's output of the same path: `dist/gateway/cli.js` (the
 *   `tributary` command), `index.js` (the package's `.` and `./config`), `config/index.js`,
 *   `operations/define.js`, `cluster/index.js` and `runtime.js` (the modules that code outside
 *   the gateway imports by path: the demo's config, data sources and operations, the examples).
 *   They share their code through
 * - `dist/gateway/chunks/*.js`: code splitting, so that a module has one instance however it is
 *   reached (an `OperationError` thrown by an operation module that imported `tributary` is the
 *   class the gateway checks), and a part loaded at first use (`await import(…)`) stays a chunk of
 *   its own, loaded then.
 * tsc's output of every other module stays in `dist/` (declarations, source maps, and the modules
 * nothing at run time imports any more).
 *
 * Not bundled (imported from `node_modules` at run time as before):
 * - `graphql`: a config's schemas and the gateway's must be made by one graphql ("Cannot use
 *   GraphQLSchema from another module or realm");
 * - `better-sqlite3` (a native addon), `pino` and `pino-pretty` (their transports run files in
 *   worker threads), `tsx` (registers its loader by file), `undici` (loaded at first use), and
 *   `swagger2openapi` (Swagger 2 sources only);
 * - every package that is not one of the package's `dependencies`: the optional drivers, brokers
 *   and SDKs (pg, mysql2, ioredis, nats, amqplib, mqtt, openid-client, OpenTelemetry's SDK, zod…),
 *   which `gateway/optional-package.ts` loads when a config uses them, and the optional drivers of
 *   the libraries bundled (knex's other dialects, ws's native helpers).
 *
 * A module's own location: `import.meta.url` in a gateway module is replaced with the URL of the
 * file tsc emitted for it (`dist/gateway/<path>.js`), computed from the bundle file's own URL, so
 * that files found beside a module (`config/config-validator.cjs`, `http/playground-vendor/`,
 * `http/console-assets/`, `service-guard.js`) are found as before, wherever the package is installed.
 * Every output file defines `require` (`createRequire(import.meta.url)`), which esbuild's ES module
 * output uses for the external packages that bundled CommonJS code requires.
 *
 *   node scripts/bundle-gateway.mjs     (after tsc; scripts/build.mjs runs it)
 */
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const gatewaySrc = join(root, 'gateway')
const out = join(root, 'dist/gateway')

/** The entry modules (paths under gateway/, without extension). */
export const ENTRIES = ['cli', 'index', 'config/index', 'operations/define', 'cluster/index', 'runtime']

/** Age (ms) after which a chunk that the last build did not write is removed. */
const STALE_CHUNK_MS = 10 * 60 * 1000

/** Packages of `dependencies` left out of the bundle (see the header). */
export const KEEP_EXTERNAL = new Set(['graphql', 'better-sqlite3', 'pino', 'pino-pretty', 'thread-stream', 'tsx', 'undici', 'swagger2openapi'])

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const bundled = new Set(Object.keys(pkg.dependencies ?? {}).filter((name) => !KEEP_EXTERNAL.has(name)))
const builtins = new Set(builtinModules)

/** The package name of a bare import specifier (`@scope/name/x` → `@scope/name`, `lodash/get` → `lodash`). */
function packageName(spec) {
  const parts = spec.split('/')
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

/**
 * esbuild plugin: external packages (see the header). From a gateway module, a package is bundled
 * only when it is one of `dependencies` (not in {@link KEEP_EXTERNAL}); from a bundled package, what
 * it imports is bundled unless it is in {@link KEEP_EXTERNAL}, one of this package's optional peers
 * (knex's `pg`, `mysql2`…), or cannot be resolved (an optional driver nobody installed).
 */
const externals = {
  name: 'tributary-externals',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === 'resolving') return undefined
      if (args.path.startsWith('node:') || builtins.has(args.path)) return { path: args.path, external: true }
      const name = packageName(args.path)
      if (KEEP_EXTERNAL.has(name)) return { path: args.path, external: true }
      const fromGateway = !args.importer.includes(`${join('node_modules')}/`)
      if (fromGateway ? !bundled.has(name) : pkg.peerDependencies?.[name] !== undefined) return { path: args.path, external: true }
      const found = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: 'resolving' })
      if (found.errors.length > 0) return { path: args.path, external: true }
      return found
    })
  },
}

/** esbuild plugin: a gateway module's `import.meta.url` → the URL of tsc's output of it (see the header). */
const moduleUrls = {
  name: 'tributary-module-urls',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      if (!args.path.startsWith(`${gatewaySrc}/`)) return undefined
      const source = readFileSync(args.path, 'utf8')
      if (!source.includes('import.meta.url')) return { contents: source, loader: 'ts' }
      const rel = relative(gatewaySrc, args.path).replace(/\.ts$/, '.js')
      return { contents: source.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, __trbGatewayDir).href`), loader: 'ts' }
    })
  },
}

// Every output file: `require` for bundled CommonJS code, and the URL of dist/gateway/ (the folder
// holding this file: dist/gateway/, one of its sub-folders or chunks/).
const banner = [
  "import { createRequire as __trbCreateRequire } from 'node:module';",
  'const require = __trbCreateRequire(import.meta.url);',
  "const __trbGatewayDir = import.meta.url.slice(0, import.meta.url.lastIndexOf('/dist/gateway/') + '/dist/gateway/'.length);",
].join(' ')

/**
 * Writes the bundle (see the header).
 * @returns the number of output JavaScript files, their total size in bytes, and esbuild's metafile
 *   (`outputs[<file>].inputs[<module>].bytesInOutput`: what each chunk holds, to see what a start loads)
 * @throws esbuild's build failure (with its messages printed)
 */
export async function bundleGateway() {
  const result = await build({
    entryPoints: Object.fromEntries(ENTRIES.map((e) => [e, join(gatewaySrc, `${e}.ts`)])),
    absWorkingDir: root,
    outdir: out,
    allowOverwrite: true,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    chunkNames: 'chunks/[name]-[hash]',
    sourcemap: 'linked',
    tsconfig: join(root, 'tsconfig.json'),
    banner: { js: banner },
    plugins: [externals, moduleUrls],
    metafile: true,
    logLevel: 'warning',
  })
  // Chunks of earlier builds are removed once this one is written and they are 10 minutes old
  // (content-hashed names: a chunk still in use is written again and keeps its file), so that a
  // gateway started from the last build (a test, a dev server) can still load its lazy chunks.
  const written = new Set(Object.keys(result.metafile.outputs).map((file) => resolve(root, file)))
  const chunks = join(out, 'chunks')
  for (const name of existsSync(chunks) ? readdirSync(chunks) : []) {
    const file = join(chunks, name)
    if (!written.has(file) && Date.now() - statSync(file).mtimeMs > STALE_CHUNK_MS) rmSync(file, { force: true })
  }
  const files = Object.entries(result.metafile.outputs).filter(([file]) => file.endsWith('.js'))
  return { files: files.length, bytes: files.reduce((sum, [, o]) => sum + o.bytes, 0), metafile: result.metafile }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { files, bytes } = await bundleGateway()
  process.stdout.write(`[build] bundled the gateway: ${files} files, ${(bytes / 1e6).toFixed(1)} MB\n`)
}
