/**
 * Serves a subgraph of the subgraphs example over GraphQL over HTTP (POST JSON at `/graphql`) on
 * 127.0.0.1, with node:http and graphql-js:
 *
 *   node --import tsx examples/federation-subgraphs/subgraphs/serve.ts users 4302
 *   node --import tsx examples/federation-subgraphs/subgraphs/serve.ts comments 4303
 */
import { createServer, type Server } from 'node:http'
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { graphql, type GraphQLSchema } from 'graphql'
import { usersSubgraph } from './users.js'
import { commentsSubgraph } from './comments.js'

/** The example's Apollo subgraphs by name. */
export const subgraphs: Record<string, () => GraphQLSchema> = { users: usersSubgraph, comments: commentsSubgraph }

/** Largest request body read, in bytes. */
const MAX_BODY = 1024 * 1024

/**
 * Starts `schema` on 127.0.0.1:`port` (0: any free port).
 * @returns the server and its `/graphql` URL
 */
export async function serveSubgraph(schema: GraphQLSchema, port: number): Promise<{ server: Server; url: string }> {
  const server = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) {
      body += chunk
      if (body.length > MAX_BODY) return void res.writeHead(413).end()
    }
    res.setHeader('content-type', 'application/json')
    try {
      const { query, variables, operationName } = JSON.parse(body) as { query: string; variables?: Record<string, unknown>; operationName?: string }
      res.end(JSON.stringify(await graphql({ schema, source: query, variableValues: variables, operationName })))
    } catch {
      res.writeHead(400).end(JSON.stringify({ errors: [{ message: 'bad request' }] }))
    }
  })
  await new Promise<void>((ok) => server.listen(port, '127.0.0.1', ok))
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/graphql` }
}

const main = !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
if (main) {
  const [name = '', port = '0'] = process.argv.slice(2)
  const make = subgraphs[name]
  if (!make) throw new Error(`usage: serve.ts <${Object.keys(subgraphs).join('|')}> <port>`)
  const { url } = await serveSubgraph(make(), Number(port))
  console.log(`${name} subgraph listening on ${url}`)
}
