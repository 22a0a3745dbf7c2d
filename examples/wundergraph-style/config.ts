/**
 * The wundergraph-style example (examples/wundergraph-style/README.md): WunderGraph's main features
 * on two sources of two kinds.
 * - `chinook`: the Chinook SQLite database shipped in examples/chinook (`CHINOOK_DATABASE_URL` for another copy);
 * - `charts`: a REST API with an OpenAPI document (./services/charts.ts), `CHARTS_API_URL`, default http://127.0.0.1:4013;
 * - a TypeScript operation calling two stored operations (operations/AlbumCard.ts);
 * - an `onOriginRequest` hook adding a header to every request to `charts`;
 * - `@export` + `_join` from the database into the REST API (operations/ArtistCharts.graphql);
 * - cookie login with OpenID Connect against a development provider (./services/oidc-provider.ts,
 *   `OIDC_ISSUER`, default http://127.0.0.1:4014) and an operation reading the session's `email`
 *   claim with `@fromClaim` (operations/Me.graphql).
 * The two side services are started unless their URL already answers. Development only: the
 * provider accepts any password and the secrets below are public unless set in the environment.
 *
 * Run it from the repository root:
 *   npm start -- --config examples/wundergraph-style/config.ts
 */
import { fileURLToPath } from 'node:url'
import { database, defineConfig, rest } from '../../gateway/config/index.js'

const gatewayUrl = process.env.GATEWAY_URL || `http://127.0.0.1:${process.env.PORT || 4000}`
const chartsPort = process.env.CHARTS_PORT || '4013'
const oidcPort = process.env.OIDC_PORT || '4014'
const chartsUrl = process.env.CHARTS_API_URL || `http://127.0.0.1:${chartsPort}`
const issuer = process.env.OIDC_ISSUER || `http://127.0.0.1:${oidcPort}`
// Development defaults; set both in the environment for anything else.
const clientSecret = process.env.OIDC_CLIENT_SECRET || 'wundergraph-style-dev-client-secret'
const cookieSecret = process.env.COOKIE_SECRET || 'wundergraph-style-dev-cookie-secret-0123456789'
const script = (name: string) => fileURLToPath(new URL(`./services/${name}.js`, import.meta.url))
const serviceEnv = { LOG_LEVEL: process.env.LOG_LEVEL || 'warn' }

/** The header the hook adds to each request to the charts API, which echoes it as `via`. */
export const VIA_HEADER = 'x-example-via'

export default defineConfig({
  datasources: [
    database({ namespace: 'chinook', url: process.env.CHINOOK_DATABASE_URL || 'sqlite:examples/chinook/chinook.sqlite' }),
    rest({ namespace: 'charts', openapi: `${chartsUrl}/openapi.json` }),
  ],
  services: [
    { name: 'charts API', script: script('charts'), url: chartsUrl, readyUrl: `${chartsUrl}/openapi.json`, env: { ...serviceEnv, CHARTS_PORT: chartsPort } },
    { name: 'OpenID provider', script: script('oidc-provider'), url: issuer, readyUrl: `${issuer}/.well-known/openid-configuration`, env: { ...serviceEnv, OIDC_PORT: oidcPort, GATEWAY_URL: gatewayUrl, OIDC_CLIENT_SECRET: clientSecret } },
  ],
  hooks: {
    global: {
      // Runs before each request to the charts API (README "Hooks"): one more header.
      onOriginRequest: {
        namespaces: ['charts'],
        hook: ({ request }) => ({ ...request, headers: { ...request.headers, [VIA_HEADER]: 'tributary-hook' } }),
      },
    },
  },
  auth: {
    oidc: {
      providers: [{
        id: 'local',
        issuer,
        clientId: 'tributary',
        clientSecret,
        scopes: ['openid', 'profile', 'email', 'roles'],
      }],
      // `secure: false` so that the browser sends the cookie back over plain http://127.0.0.1.
      cookie: { secrets: [cookieSecret], secure: false },
      redirectUris: [`${gatewayUrl}/`],
    },
  },
  operations: { dir: 'examples/wundergraph-style/operations' },
  generatedDir: 'examples/wundergraph-style/generated',
})
