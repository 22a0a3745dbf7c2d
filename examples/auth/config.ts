/**
 * The authentication example (README "Authentication"): a local schema of notes behind `auth.jwt`,
 * with a JWKS side service (jwks-service.mjs) standing in for an identity provider, and operations
 * that use every directive. Run it with `npm start -- --config examples/auth/config.ts`; mint tokens
 * with `node examples/auth/scripts/token.mjs --sub alice --roles editor`.
 */
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig } from '../../gateway/config/index.js'
import notes from './notes.js'
import { AUDIENCE, ISSUER } from './keys.mjs'

const jwksPort = process.env.JWKS_PORT || '4002'
const jwksUrl = `http://127.0.0.1:${jwksPort}/.well-known/jwks.json`

export default defineConfig({
  datasources: [notes],
  services: [
    {
      name: 'JWKS',
      script: fileURLToPath(new URL('./jwks-service.mjs', import.meta.url)),
      url: jwksUrl,
      readyUrl: jwksUrl,
      env: { JWKS_PORT: jwksPort },
    },
  ],
  auth: {
    jwt: { jwksUrl, issuer: ISSUER, audience: AUDIENCE, rolesClaim: 'roles', cookie: 'session' },
    graphql: 'public',
  },
  permissions: { 'Note.internal': { roles: ['admin'] } },
  server: { rateLimit: { max: 300, timeWindowMs: 60_000, key: 'sub' } },
  operations: { dir: 'examples/auth/operations' },
  generatedDir: join(tmpdir(), 'tributary-example-auth'),
})
