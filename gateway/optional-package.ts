/**
 * Loading of the optional peer dependencies: the parts of Tributary that only some configs use
 * (PostgreSQL's `pg`, MySQL's `mysql2`, Redis's `ioredis`, the OpenTelemetry SDK and exporter) are
 * not installed with the package (README "Install size"); they are loaded at the point of use, and a
 * missing one fails with one `TRB_ERR_PACKAGE_MISSING` line that names the package to install.
 */
import { createRequire } from 'node:module'
import { PackageMissingError } from './errors.js'

const requireHere = createRequire(import.meta.url)

/** True when `err` says that `name` itself (not something it imports) cannot be found. */
function isMissing(err: unknown, name: string): boolean {
  const e = err as { code?: string; message?: string }
  if (typeof e?.message !== 'string' || !e.message.includes(`'${name}'`)) return false
  // Node sets a code; a loader hook in front of Node's resolver (tsx, in tests and for `.ts` configs)
  // may rethrow the same "Cannot find package/module '<name>'" without it.
  return e.code === 'MODULE_NOT_FOUND' || e.code === 'ERR_MODULE_NOT_FOUND' || /^Cannot find (package|module) '/.test(e.message)
}

/**
 * Requires the CommonJS package `name` synchronously, resolved from Tributary's own location (as
 * Knex resolves its drivers).
 * @param name the package, e.g. `pg`.
 * @param what who needs it, for the message: "PostgreSQL source 'app'".
 * @throws PackageMissingError (`TRB_ERR_PACKAGE_MISSING`) when the package is not installed.
 */
export function requireOptional<T>(name: string, what: string): T {
  try {
    return requireHere(name) as T
  } catch (err) {
    if (isMissing(err, name)) throw new PackageMissingError(what, name, name)
    throw err
  }
}

/**
 * Imports the package `name` (ESM or CommonJS) at the point of use.
 * @param name the package, e.g. `@opentelemetry/sdk-node`.
 * @param what who needs it, for the message: "telemetry.otlpEndpoint".
 * @param install what the message tells to `npm install` (default `name`): the packages that go together.
 * @throws PackageMissingError (`TRB_ERR_PACKAGE_MISSING`) when the package is not installed.
 */
export async function importOptional<T>(name: string, what: string, install = name): Promise<T> {
  try {
    return (await import(name)) as T
  } catch (err) {
    if (isMissing(err, name)) throw new PackageMissingError(what, name, install)
    throw err
  }
}
