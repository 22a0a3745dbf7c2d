/**
 * Finds and imports a deployment's config file (`.ts`, `.mts`, `.cts`, `.js`, `.mjs`, `.cjs`). A `.ts`
 * file inside this project is loaded from its compiled twin under `dist/` when that is up to date (so
 * the gateway and the config share one copy of every module); any other TypeScript file is loaded
 * through tsx's ES module hooks, as an ES module in CommonJS projects too ({@link LOADER_HOOKS}).
 */
import { existsSync, statSync } from 'node:fs'
import { register } from 'node:module'
import { dirname, relative, resolve, isAbsolute } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { ConfigLoadError } from '../errors.js'
import { resolveConfig, type TributaryConfig } from './index.js'

/** This project's root: the folder holding `package.json` (two levels above `dist/gateway/config` or `gateway/config`). */
export const projectRoot = (() => {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(resolve(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir)
  return dir
})()

/** Config files looked for in the working directory, in this order, when none is named. */
export const DEFAULT_CONFIG_FILES: readonly string[] = ['tributary.config.ts', 'tributary.config.js', 'tributary.config.mjs', 'tributary.config.cjs', 'config.ts']

/**
 * The config file to load: `--config <file>` (or `--config=<file>`), else `TRIBUTARY_CONFIG`, else
 * the first of {@link DEFAULT_CONFIG_FILES} that exists in `cwd` (`tributary.config.ts` when none does,
 * so that the error names the file a user is expected to write).
 * @returns an absolute path.
 */
export function configPathFrom(argv: readonly string[], env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  const i = argv.findIndex((a) => a === '--config' || a.startsWith('--config='))
  const fromArgs = i < 0 ? undefined : argv[i].includes('=') ? argv[i].split('=').slice(1).join('=') : argv[i + 1]
  const chosen = fromArgs || env.TRIBUTARY_CONFIG || DEFAULT_CONFIG_FILES.find((f) => existsSync(resolve(cwd, f))) || DEFAULT_CONFIG_FILES[0]
  return isAbsolute(chosen) ? chosen : resolve(cwd, chosen)
}

/**
 * ES module hooks (Node's `module.register`, run on the loader thread) that tsx's hooks sit under:
 *
 * - a `.ts`/`.tsx`/`.js` file of the user's with `import`/`export` statements loads as an ES module even in a
 *   CommonJS package (`npm init -y` writes `"type": "commonjs"`; no `type` means CommonJS too).
 *   Loaded as CommonJS, its `import … from 'tributary-gateway'` became `require('tributary-gateway')`, which tsx's
 *   CommonJS path answered with a second copy of the gateway and of undici (`TypeError: Illegal
 *   constructor`), and sat in the require cache, which ignores the reload query below (a `.js` config
 *   edited in development kept serving its first version). As an ES module it resolves to the
 *   instance the command already runs;
 * - a development reload (`?tributary-load=N` on the config's URL) passes its query on to the user's
 *   files the config imports, so they load afresh, but never to a file under `node_modules/` or of this
 *   package: `tributary` stays the one instance the gateway uses.
 *
 * `data.packageDirs`: `file:` URL prefixes (ending in `/`) of this package's own modules.
 */
export const LOADER_HOOKS = `
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
let packageDirs = []
export function initialize(data) { packageDirs = data.packageDirs }
const esmSyntax = /^[ \\t]*(?:import[ \\t]*[\\w{*'"]|export[ \\t]+(?:default|const|let|var|function|async|class|type|interface|enum|[{*]))/m
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  if (!resolved.url.startsWith('file:')) return resolved
  const url = new URL(resolved.url)
  if (url.pathname.includes('/node_modules/') || packageDirs.some((d) => resolved.url.startsWith(d))) return resolved
  let out = resolved
  const fresh = context.parentURL?.startsWith('file:') ? new URL(context.parentURL).searchParams.get('tributary-load') : null
  if (fresh && !url.searchParams.has('tributary-load')) {
    url.searchParams.set('tributary-load', fresh)
    out = { ...out, url: url.href }
  }
  if (/\\.(tsx?|js)$/.test(url.pathname) && out.format !== 'module' && esmSyntax.test(readFileSync(fileURLToPath(url), 'utf8'))) out = { ...out, format: 'module' }
  return out
}
`

let hooks: Promise<void> | undefined
let loads = 0

/** Registers tsx's ES module hooks, then {@link LOADER_HOOKS} over them (once per process). */
function registerHooks(): Promise<void> {
  hooks ??= (async () => {
    const { register: registerTsx } = await import('tsx/esm/api')
    registerTsx()
    const packageDirs = ['gateway', 'dist'].map((d) => pathToFileURL(resolve(projectRoot, d)).href + '/')
    register(`data:text/javascript,${encodeURIComponent(LOADER_HOOKS)}`, { data: { packageDirs } })
  })()
  return hooks
}

/**
 * Imports the module at `file`: TypeScript with `import`/`export` as an ES module whatever the `type`
 * of its package ({@link LOADER_HOOKS}), so that its imports of `tributary` are the instance this
 * process already runs; `.js`, `.mjs` and `.cjs` by Node's own rules.
 * @param fresh load a new copy of the file and of the user's files it imports (development reload).
 */
export async function importModule(file: string, fresh = false): Promise<Record<string, unknown>> {
  const ts = /\.(c|m)?tsx?$/.test(file)
  if (ts && !fresh) {
    const twin = resolve(projectRoot, 'dist', relative(projectRoot, file)).replace(/\.(c|m)?ts$/, '.js')
    const inside = !relative(projectRoot, file).startsWith('..')
    if (inside && existsSync(twin) && statSync(twin).mtimeMs >= statSync(file).mtimeMs) {
      return import(pathToFileURL(twin).href) as Promise<Record<string, unknown>>
    }
  }
  if (ts || fresh) await registerHooks()
  const url = pathToFileURL(file).href
  return import(fresh ? `${url}?tributary-load=${++loads}` : url) as Promise<Record<string, unknown>>
}

/**
 * Loads, validates and freezes a config file.
 * @throws ConfigLoadError when the file is missing or fails to import; ConfigInvalidError when it is invalid.
 */
export async function loadConfigFile(file: string, options: { fresh?: boolean } = {}): Promise<TributaryConfig> {
  const shown = relative(process.cwd(), file).startsWith('..') ? file : relative(process.cwd(), file) || file
  if (!existsSync(file)) throw new ConfigLoadError(shown, `no such file (write one with \`tributary init\`, or pass --config <file> or --database <url>)`)
  let mod: Record<string, unknown>
  try {
    mod = await importModule(file, options.fresh)
  } catch (err) {
    throw new ConfigLoadError(shown, (err as Error).message, { cause: err })
  }
  let input = mod.default ?? mod.config
  // A .ts file outside an ESM package is loaded as CommonJS: its default export sits one level down.
  if (input && typeof input === 'object' && !('datasources' in input) && 'default' in input) input = (input as { default: unknown }).default
  if (input === undefined) throw new ConfigLoadError(shown, 'it has no default export')
  return resolveConfig(input)
}
