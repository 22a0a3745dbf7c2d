/**
 * Finds and imports a deployment's config file (`.ts` or `.js`). A `.ts` file inside this project is
 * loaded from its compiled twin under `dist/` when that is up to date (so the gateway and the config
 * share one copy of every module); any other `.ts` file is loaded through tsx.
 */
import { existsSync, statSync } from 'node:fs'
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
export const DEFAULT_CONFIG_FILES: readonly string[] = ['tributary.config.ts', 'tributary.config.js', 'tributary.config.mjs', 'config.ts']

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
 * Imports the module at `file`.
 * @param fresh load a new copy of the module graph (development reload): always through tsx.
 */
export async function importModule(file: string, fresh = false): Promise<Record<string, unknown>> {
  if (/\.(c|m)?ts$/.test(file)) {
    const twin = resolve(projectRoot, 'dist', relative(projectRoot, file)).replace(/\.(c|m)?ts$/, '.js')
    const inside = !relative(projectRoot, file).startsWith('..')
    if (!fresh && inside && existsSync(twin) && statSync(twin).mtimeMs >= statSync(file).mtimeMs) {
      return import(pathToFileURL(twin).href) as Promise<Record<string, unknown>>
    }
    const { tsImport } = await import('tsx/esm/api')
    return tsImport(pathToFileURL(file).href, import.meta.url) as Promise<Record<string, unknown>>
  }
  const url = pathToFileURL(file).href
  return import(fresh ? `${url}?t=${Date.now()}` : url) as Promise<Record<string, unknown>>
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
