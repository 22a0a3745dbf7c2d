/**
 * Node's module compile cache for the `tributary` command (docs/architecture.md §3 "Start-up"): on
 * Node ≥ 22.1, `module.enableCompileCache()` keeps V8's compiled code of every module loaded after it
 * (the bundle's files, scripts/bundle-gateway.mjs, and the modules it leaves out: graphql, pino…) on disk,
 * so a second start skips compiling them. On Node 20 it does not exist and nothing happens.
 *
 * Where: `node_modules/.cache/tributary/` of the project that runs the gateway (the `node_modules/`
 * that holds this package when it is installed; this repository's own when run from a clone), the
 * conventional place of tools' caches; Node keeps one sub-folder per Node version and checks every
 * entry against its module's source, so an edited or upgraded module is compiled again. Node's own
 * variables win: `NODE_COMPILE_CACHE=<dir>` puts it elsewhere, `NODE_DISABLE_COMPILE_CACHE=1` turns
 * it off. Not turned on under V8 coverage (`NODE_V8_COVERAGE`, test runs): code read from the cache
 * reports less precise coverage.
 *
 * Imports only Node's built-ins: it runs before the rest of the command is loaded.
 */
import module from 'node:module'
import { existsSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** What `module.enableCompileCache` answers (Node ≥ 22.1). */
interface CompileCacheResult {
  /** One of `module.constants.compileCacheStatus`: ENABLED, ALREADY_ENABLED, FAILED, DISABLED. */
  status: number
  message?: string
  directory?: string
}

/** The parts of `node:module` this file uses, absent on older Node versions. */
const nodeModule = module as unknown as {
  enableCompileCache?: (directory?: string) => CompileCacheResult
  flushCompileCache?: () => void
  getCompileCacheDir?: () => string | undefined
  constants?: { compileCacheStatus?: Record<'ENABLED' | 'ALREADY_ENABLED' | 'FAILED' | 'DISABLED', number> }
}

/**
 * The compile cache folder for the package whose root (the folder of its `package.json`) is
 * `packageRoot`: `<node_modules>/.cache/tributary` of the `node_modules/` holding it when it is an
 * installed package (`…/node_modules/tributary-gateway` or `…/node_modules/@scope/name`), else of
 * `<packageRoot>/node_modules`. Undefined when that `node_modules/` does not exist (Node's default,
 * a folder under the system's temporary directory, is used then).
 */
export function compileCacheDir(packageRoot: string): string | undefined {
  const parent = dirname(packageRoot)
  const holder = basename(parent) === 'node_modules' ? parent : basename(dirname(parent)) === 'node_modules' && basename(parent).startsWith('@') ? dirname(parent) : join(packageRoot, 'node_modules')
  return existsSync(holder) ? join(holder, '.cache', 'tributary') : undefined
}

/** This package's root: the nearest folder above this module holding a `package.json`. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir)
  return dir
}

/**
 * Turns Node's module compile cache on for the modules loaded from now on, in the folder
 * {@link compileCacheDir} picks (or `NODE_COMPILE_CACHE`'s). Never throws: a folder that cannot be
 * written leaves the cache off and the start-up as it was.
 * @param env the environment to read `NODE_V8_COVERAGE` from (default `process.env`).
 * @returns the cache folder when the cache is on; undefined on Node < 22.1, under coverage, when
 *   `NODE_DISABLE_COMPILE_CACHE` is set or when Node could not use the folder.
 */
export function enableCompileCache(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!nodeModule.enableCompileCache || env.NODE_V8_COVERAGE) return undefined
  try {
    const result = nodeModule.enableCompileCache(env.NODE_COMPILE_CACHE ? undefined : compileCacheDir(packageRoot()))
    const status = nodeModule.constants?.compileCacheStatus
    return status && (result.status === status.ENABLED || result.status === status.ALREADY_ENABLED) ? result.directory : undefined
  } catch {
    return undefined
  }
}

/**
 * Writes the compiled code gathered so far to the cache folder now (Node ≥ 22.10; Node writes it at
 * exit otherwise, which a killed process never reaches). A no-op when the cache is off.
 */
export function flushCompileCache(): void {
  try {
    nodeModule.flushCompileCache?.()
  } catch {
    // a cache that cannot be written only costs the next start its compiling
  }
}

/**
 * The environment that gives a child Node process (a side service, gateway/services.ts) this
 * process' compile cache: `{ NODE_COMPILE_CACHE: <folder> }` while the cache is on (Node ≥ 22.8),
 * else `{}`. Node turns the cache on in a process started with that variable before it loads anything.
 */
export function compileCacheEnv(): Record<string, string> {
  // getCompileCacheDir() names the folder of this Node version inside the cache folder.
  const dir = nodeModule.getCompileCacheDir?.()
  return dir ? { NODE_COMPILE_CACHE: dirname(dir) } : {}
}
