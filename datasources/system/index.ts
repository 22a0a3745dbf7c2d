/**
 * The `system` data source: the role REST API (the sample role service, `./service.ts`), wrapped
 * from its committed OpenAPI document `./openapi.json`. The upstream is `SYSTEM_API_URL`
 * (default http://127.0.0.1:4001). Refresh the document with
 * `npx tsx datasources/system/service.ts --write-openapi` after changing the service's routes.
 */
import { fileURLToPath } from 'node:url'
import { rest } from '../../gateway/config/index.js'

export default rest({
  namespace: 'system',
  // The build copies openapi.json next to the compiled module, so this works from tsx and from dist/.
  openapi: fileURLToPath(new URL('./openapi.json', import.meta.url)),
  baseUrl: process.env.SYSTEM_API_URL || `http://127.0.0.1:${process.env.ROLE_SERVICE_PORT || '4001'}`,
})
