/**
 * Serves a resolved config over real HTTP on 127.0.0.1 (an ephemeral port), as tests and the fuzzer
 * need it: the gateway built, its fastify app listening, both closed at teardown.
 */
import { pino } from 'pino'
import type { FastifyInstance } from 'fastify'
import type { TributaryConfig } from '../../gateway/config/index.js'
import { createGateway, type CreateGatewayOptions, type Gateway } from '../../gateway/runtime.js'
import { buildApp } from '../../gateway/http/app.js'

/** Anything with tap's `teardown`. */
interface Teardown {
  teardown(fn: () => unknown): void
}

/** What {@link serveGateway} returns. */
export interface ServedGateway {
  app: FastifyInstance
  gateway: Gateway
  /** `http://127.0.0.1:<port>` */
  url: string
}

/**
 * Builds the gateway for `config` (a silent logger unless `options.logger` is given) and listens on
 * 127.0.0.1. At `t`'s teardown the app closes, cutting open keep-alive sockets first (so aborted
 * requests do not hold `close()`), then the gateway.
 */
export async function serveGateway(t: Teardown, config: TributaryConfig, options: Partial<CreateGatewayOptions> = {}): Promise<ServedGateway> {
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }), ...options })
  t.teardown(() => gateway.close())
  const app = await buildApp(gateway, { logger: false })
  t.teardown(async () => {
    app.server.closeAllConnections()
    await app.close()
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  return { app, gateway, url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` }
}
