/**
 * The wundergraph-style example's OpenID provider (examples/wundergraph-style/README.md): a real
 * `oidc-provider` (a dev dependency of Tributary, so this example is for development only) with its
 * development login and consent forms: any login name and any password log in.
 *
 * Accounts: the login `luis` is the Chinook customer 1 (`email` luisg@embraer.com.br, role
 * `customer`); any other login `x` gets `email` x@example.test and no role.
 * One client: `client_id` `tributary`, secret `OIDC_CLIENT_SECRET` (default the example's dev
 * secret), redirect URI `<GATEWAY_URL>/auth/cookie/callback/local`.
 *
 * As a script it listens on `OIDC_PORT` (default 4014) at 127.0.0.1; its issuer is
 * `http://127.0.0.1:<port>`.
 */
import Fastify, { type FastifyInstance } from 'fastify'
import Provider from 'oidc-provider'
import { listenIfMain } from '../../federation/services/listen.js'


/** Chinook customers that can log in, by login name. */
const ACCOUNTS: Record<string, { email: string; name: string; roles: string[] }> = {
  luis: { email: 'luisg@embraer.com.br', name: 'Luís Gonçalves', roles: ['customer'] },
}

/**
 * Builds the provider as a fastify app (it does not listen). The provider itself is created on the
 * first request, when the listening port (hence the issuer) is known.
 * @param options.clientSecret the client's secret. Default `OIDC_CLIENT_SECRET` (the config passes its own), else the example's dev secret.
 * @param options.gatewayUrl the gateway's base URL (a function: read at the first request), for the
 *   client's redirect URI. Default `GATEWAY_URL`, else `http://127.0.0.1:<PORT or 4000>`.
 */
export async function createOidcService(options: { clientSecret?: string; gatewayUrl?: () => string } = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  const gatewayUrl = options.gatewayUrl ?? (() => process.env.GATEWAY_URL || `http://127.0.0.1:${process.env.PORT || 4000}`)
  let callback: ReturnType<Provider['callback']> | undefined
  const provider = () => {
    const port = (app.server.address() as { port: number }).port
    const p = new Provider(`http://127.0.0.1:${port}`, {
      clients: [{
        client_id: 'tributary',
        client_secret: options.clientSecret ?? (process.env.OIDC_CLIENT_SECRET || 'wundergraph-style-dev-client-secret'),
        redirect_uris: [`${gatewayUrl()}/auth/cookie/callback/local`],
        response_types: ['code'],
        grant_types: ['authorization_code'],
      }],
      async findAccount(_ctx: unknown, sub: string) {
        const account = ACCOUNTS[sub] ?? { email: `${sub}@example.test`, name: sub, roles: [] }
        return { accountId: sub, claims: async () => ({ sub, ...account }) }
      },
      claims: { openid: ['sub'], email: ['email'], profile: ['name'], roles: ['roles'] },
      scopes: ['openid', 'profile', 'email', 'roles'],
      features: { devInteractions: { enabled: true } },
      cookies: { keys: ['wundergraph-style-provider-cookie-key'] },
    })
    return p.callback()
  }
  // Every request goes to the provider untouched (no fastify routing or body parsing).
  app.addHook('onRequest', async (req, reply) => {
    reply.hijack()
    callback ??= provider()
    void callback(req.raw, reply.raw)
    return reply
  })
  return app
}

await listenIfMain(import.meta.url, createOidcService, 'OIDC_PORT', 4014, 'OpenID provider')
