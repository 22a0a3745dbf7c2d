/** The demo data source: a local schema with no namespace (messages, deatail, messageCreated). */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { schema } from '../../gateway/config/index.js'
import { resolvers } from './resolvers.js'

export default schema({
  name: 'demo',
  typeDefs: readFileSync(fileURLToPath(new URL('./schema.graphql', import.meta.url)), 'utf8'),
  resolvers,
})
