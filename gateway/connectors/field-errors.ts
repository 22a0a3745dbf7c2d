/**
 * Errors of stitched schemas at the path of the field that surfaced them (GraphQL spec §7.1.2), used
 * by the federation connector and by type merging (compose/merge.ts).
 */
import { GraphQLError, defaultFieldResolver, isObjectType, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql'

/** `err` without its path when it is a GraphQLError that has one (else `err`), so that the executor locates it where it surfaced. */
function unlocated(err: unknown): unknown {
  if (!(err instanceof GraphQLError) || !err.path) return err
  return new GraphQLError(err.message, { nodes: err.nodes, source: err.source, positions: err.positions, originalError: err.originalError ?? undefined, extensions: err.extensions })
}

/**
 * Makes every field resolver of a stitched schema hand its errors to the executor without a path.
 * graphql-tools relocates an error of a batched call (a federation `_entities` call, a merged type's
 * `argsFromKeys` call) to the list field's path plus the field's (`['topProducts', 'shippingEstimate']`,
 * the item's index lost), or hands the same located error to every item, and graphql-js keeps
 * the path of an error that already has one (`locatedError`); without it, graphql-js and graphql-jit
 * both report the error at the field that surfaced it: `['topProducts', 2, 'shippingEstimate']`
 * (GraphQL spec §7.1.2, "Errors": `path` names the response field). Mutates `schema`'s fields in place.
 */
export function relocateFieldErrors(schema: GraphQLSchema): void {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue
    for (const field of Object.values(type.getFields())) {
      const resolve: GraphQLFieldResolver<unknown, unknown> = field.resolve ?? defaultFieldResolver
      field.resolve = (source, args, context, info) => {
        let value: unknown
        try {
          value = resolve(source, args, context, info)
        } catch (err) {
          throw unlocated(err)
        }
        // Any thenable (graphql-tools may return a non-native one), not only a native Promise.
        if (value !== null && typeof value === 'object' && typeof (value as PromiseLike<unknown>).then === 'function') {
          return Promise.resolve(value).then((v) => (v instanceof GraphQLError ? unlocated(v) : v), (err: unknown) => Promise.reject(unlocated(err)))
        }
        return value instanceof GraphQLError ? unlocated(value) : value
      }
    }
  }
}

