/**
 * The deployment of the `auth` bench scenario (bench/run.mjs): the demo's `todo` database with
 * `auth.jwt` verifying RS256 tokens against the JWKS the bench serves (`BENCH_AUTH_JWKS_URL`), and two
 * stored operations with the same selection: `TodoById` (open) and `TodoByIdAuthenticated`
 * (`@requireAuthentication`). Generated files go to a temporary directory.
 */
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineConfig } from '../../gateway/config/index.js'
import demo from '../../config.js'

export default defineConfig({
  ...demo,
  datasources: demo.datasources.filter((d) => d.kind === 'database' && d.namespace === 'todo'),
  services: [],
  routes: [],
  auth: { jwt: { jwksUrl: process.env.BENCH_AUTH_JWKS_URL ?? 'http://127.0.0.1:1/jwks.json', issuer: 'tributary-bench', audience: 'tributary' } },
  operations: { dir: 'bench/auth/operations' },
  generatedDir: join(tmpdir(), `tributary-bench-auth-${process.pid}`),
})
