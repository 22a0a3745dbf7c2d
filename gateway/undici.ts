/**
 * undici, the HTTP client of the REST and GraphQL connectors, the document loader and the event
 * triggers' webhooks, loaded at its first use rather than with the gateway's modules (issue 30,
 * start-up): about 70 ms of module loading on Node 20 that a config without those parts never pays,
 * and that a REST source pays at its first upstream call instead of before the gateway is ready.
 * undici is CommonJS: `require` returns the same module instance an `import` of it would.
 */
import { createRequire } from 'node:module'
import type * as Undici from 'undici'

const requireHere = createRequire(import.meta.url)
let loaded: typeof Undici | undefined

/**
 * The undici module, required on the first call (synchronously, once per process).
 * @returns undici's exports (`Pool`, `Agent`, `request`, `FormData`...)
 */
export function undici(): typeof Undici {
  return (loaded ??= requireHere('undici') as typeof Undici)
}
