/**
 * Renames one in-process subschema with its namespace at build time (docs/architecture.md §2–§4): root fields
 * become `<ns>_<field>`, named types `<ns>_<Type>`, except built-in and shared scalars. Resolvers,
 * `subscribe` functions and `extensions` move with their fields, so nothing is delegated at request time.
 */
import {
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLInterfaceType,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLUnionType,
  isSpecifiedScalarType,
  type GraphQLFieldConfigMap,
  type GraphQLSchema,
} from 'graphql'
import { MapperKind, mapSchema } from '@graphql-tools/utils'
import { sharedScalars } from '../scalars.js'

/** True for a name that keeps its spelling in every namespace: built-in scalars, shared scalars, introspection types. */
export function isGlobalTypeName(name: string): boolean {
  return name.startsWith('__') || name in sharedScalars || ['String', 'Int', 'Float', 'Boolean', 'ID'].includes(name)
}

/**
 * Swaps same-named scalars for the shared instances and, when `namespace` is non-empty, applies it.
 * Abstract types keep working: a `resolveType` that returns an unprefixed type name is wrapped to
 * return the prefixed one.
 * @param schema an executable schema without prefixes.
 * @param namespace `''` for none.
 * @returns a new schema; the input is not modified.
 */
export function applyNamespace(schema: GraphQLSchema, namespace: string): GraphQLSchema {
  const rootNames = new Set([schema.getQueryType()?.name, schema.getMutationType()?.name, schema.getSubscriptionType()?.name].filter(Boolean))
  const prefix = (name: string) => (namespace ? `${namespace}_${name}` : name)
  const typeName = (name: string) => (rootNames.has(name) || isGlobalTypeName(name) ? name : prefix(name))

  return mapSchema(schema, {
    [MapperKind.SCALAR_TYPE]: (type) => {
      if (isSpecifiedScalarType(type)) return type
      const shared = sharedScalars[type.name]
      if (shared) return shared
      return namespace ? new GraphQLScalarType({ ...type.toConfig(), name: prefix(type.name) }) : type
    },
    [MapperKind.ROOT_OBJECT]: (type) => {
      if (!namespace) return type
      const config = type.toConfig()
      const fields: GraphQLFieldConfigMap<unknown, unknown> = {}
      for (const [name, field] of Object.entries(config.fields)) fields[prefix(name)] = field
      return new GraphQLObjectType({ ...config, fields })
    },
    [MapperKind.OBJECT_TYPE]: (type) => (namespace ? new GraphQLObjectType({ ...type.toConfig(), name: typeName(type.name) }) : type),
    [MapperKind.INPUT_OBJECT_TYPE]: (type) => (namespace ? new GraphQLInputObjectType({ ...type.toConfig(), name: typeName(type.name) }) : type),
    [MapperKind.ENUM_TYPE]: (type) => (namespace ? new GraphQLEnumType({ ...type.toConfig(), name: typeName(type.name) }) : type),
    [MapperKind.INTERFACE_TYPE]: (type) => {
      if (!namespace) return type
      const config = type.toConfig()
      const resolveType = config.resolveType
      return new GraphQLInterfaceType({
        ...config,
        name: typeName(type.name),
        resolveType: resolveType ? async (...args) => prefixResolved(await resolveType(...args), typeName) : undefined,
      })
    },
    [MapperKind.UNION_TYPE]: (type) => {
      if (!namespace) return type
      const config = type.toConfig()
      const resolveType = config.resolveType
      return new GraphQLUnionType({
        ...config,
        name: typeName(type.name),
        resolveType: resolveType ? async (...args) => prefixResolved(await resolveType(...args), typeName) : undefined,
      })
    },
  })
}

function prefixResolved(value: string | undefined, typeName: (name: string) => string): string | undefined {
  return typeof value === 'string' ? typeName(value) : value
}
