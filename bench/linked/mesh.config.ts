/**
 * The bench's peer (bench/run.mjs, scenario `linked`): Hive Gateway's supergraph of the federation
 * example's countries REST API, composed by `mesh-compose` with @omnigraph/openapi from the document
 * the API serves. `COUNTRIES_API_URL` is the running API (the bench starts it on a free port).
 */
import { defineConfig } from '@graphql-mesh/compose-cli'
import { loadOpenAPISubgraph } from '@omnigraph/openapi'

const url = process.env.COUNTRIES_API_URL || 'http://127.0.0.1:4011'

export const composeConfig = defineConfig({
  subgraphs: [{ sourceHandler: loadOpenAPISubgraph('countries', { source: `${url}/openapi.json`, endpoint: url }) }],
})
