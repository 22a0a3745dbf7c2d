/**
 * The local schema connector: SDL and resolvers that run in the gateway process.
 */
import { makeExecutableSchema, type IExecutableSchemaDefinition } from '@graphql-tools/schema'
import type { ConnectorContext, LocalSubschema } from '../types.js'
import { sharedScalars } from '../../scalars.js'
import { SourceLoadError } from '../../errors.js'

/** Options of a local schema data source. */
export interface SchemaSourceOptions {
  /** The schema in SDL (GraphQL spec §3). It may declare the shared scalars (`scalar DateTime`); their implementations are supplied. */
  typeDefs: string
  /** graphql-tools resolver map: `{ Query: { field: resolver }, Subscription: { field: { subscribe, resolve } } }`. */
  resolvers?: IExecutableSchemaDefinition['resolvers']
}

/**
 * Builds an executable schema from SDL and resolvers.
 * @throws SourceLoadError (`TRB_ERR_SOURCE_LOAD`) when the SDL does not parse or a resolver names an unknown field.
 */
export async function createSchemaSource(options: SchemaSourceOptions, context: ConnectorContext): Promise<LocalSubschema> {
  const declared = new Set([...options.typeDefs.matchAll(/\bscalar\s+([_A-Za-z][_0-9A-Za-z]*)/g)].map((m) => m[1]))
  const scalarResolvers = Object.fromEntries(Object.entries(sharedScalars).filter(([name]) => declared.has(name)))
  let schema
  try {
    schema = makeExecutableSchema({
      typeDefs: options.typeDefs,
      resolvers: [scalarResolvers, ...(Array.isArray(options.resolvers) ? options.resolvers : options.resolvers ? [options.resolvers] : [])],
    })
  } catch (err) {
    throw new SourceLoadError(context.sourceName, (err as Error).message, { cause: err })
  }
  return {
    kind: 'local',
    schema,
    health: async () => ({ status: 'up' }),
    close: async () => {},
  }
}
