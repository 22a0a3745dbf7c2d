// The config validator written at build time (gateway/config/validate.ts configValidatorModule, written by
// scripts/build.mjs to dist/gateway/config/config-validator.cjs) decides and reports exactly as the
// validator compiled at start-up does.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import t from 'tap'
import type { ValidateFunction } from 'ajv'
import { compileConfigValidator, configValidatorModule } from '../gateway/config/validate.js'

t.test('the precompiled module and the compiled validator agree', async (t) => {
  // Inside the project, so that its requires of ajv's runtime resolve as they do from dist/.
  const dir = mkdtempSync(join(process.cwd(), '.tmp-config-validator-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'config-validator.cjs')
  writeFileSync(file, await configValidatorModule())
  const built = createRequire(import.meta.url)(file) as ValidateFunction & { schemaHash?: string }
  t.type(built, 'function')
  t.match(built.schemaHash, /^[0-9a-f]{64}$/)
  const compiled = compileConfigValidator()
  const inputs: Array<[string, unknown]> = [
    ['empty', {}],
    ['sources', { datasources: [{ kind: 'rest', namespace: 'pets', openapi: 'pets.json' }, { kind: 'database', url: 'sqlite://x.db' }] }],
    ['bad namespace', { datasources: [{ kind: 'rest', namespace: 'a__b', openapi: 'x' }] }],
    ['unknown option', { nope: 1 }],
    ['a hook that is not a function', { hooks: { global: { onOriginRequest: { hook: 5 } } } }],
    ['a hook', { hooks: { global: { onOriginRequest: { hook: () => null } } } }],
    ['wrong type', { server: { port: 'eighty' } }],
  ]
  let refused = 0
  for (const [label, input] of inputs) {
    const ok = compiled(input)
    t.equal(built(input), ok, `${label}: same verdict`)
    t.same(built.errors ?? null, compiled.errors ?? null, `${label}: same errors`)
    if (!ok) refused++
  }
  t.ok(refused >= 3, 'the invalid inputs are refused')
})
