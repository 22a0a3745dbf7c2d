/**
 * Renames one in-process subschema with its namespace at build time (docs/architecture.md §2–§4): root fields
 * become `<ns>_<field>`, named types `<ns>_<Type>`, except built-in and shared scalars. Resolvers,
 * `subscribe` functions and `extensions` move with their fields, so nothing is delegated at request time.
 *
 * Shared scalars (README "Naming"): a source's scalar named `DateTime`, `JSON`, `BigInt`, `Decimal` or
 * `Bytes` becomes the very instance of `gateway/scalars.ts` in the renamed schema, so that `compose/`
 * can merge any number of sources that use it, unless it is a *foreign* scalar (see
 * {@link foreignScalarNames}), which is treated like any custom scalar (prefixed with the namespace).
 */
import {
  GraphQLEnumType,
  getNamedType,
  isInterfaceType,
  isObjectType,
  GraphQLInputObjectType,
  GraphQLInterfaceType,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLUnionType,
  GraphQLSchema,
  isScalarType,
  isSpecifiedScalarType,
  type GraphQLFieldConfigMap,
  type GraphQLNamedType,
} from 'graphql'
import { MapperKind, healTypes, mapSchema } from '@graphql-tools/utils'
import { RenameRootFields, RenameTypes } from '@graphql-tools/wrap'
import type { Transform } from '@graphql-tools/delegate'
import { sharedScalars } from '../scalars.js'

/** The serialize/parseValue of a scalar declared without an implementation (graphql-js' identity default). */
const DECLARED_ONLY = new GraphQLScalarType({ name: 'DeclaredOnly' })

const NONE: ReadonlySet<string> = new Set()

/**
 * True for a name that keeps its spelling in every namespace: built-in scalars, shared scalars
 * (unless listed in `foreign`), introspection types.
 * @param foreign the source's foreign scalar names ({@link foreignScalarNames}): they are namespaced.
 */
export function isGlobalTypeName(name: string, foreign: ReadonlySet<string> = NONE): boolean {
  return name.startsWith('__') || (name in sharedScalars && !foreign.has(name)) || ['String', 'Int', 'Float', 'Boolean', 'ID'].includes(name)
}

/**
 * The request-time renames of a remote GraphQL source (`@graphql-tools/wrap` transforms): types
 * become `<ns>_<Type>` except global names and `keep` (merged types), root fields `<ns>_<field>`.
 * @param namespace `''` for none: no transforms.
 * @param foreign the source's foreign scalars ({@link foreignScalarNames}): prefixed.
 * @param keep type names that stay as they are (merged types, `compose/merge.ts`).
 */
export function remoteRenames(namespace: string, foreign: ReadonlySet<string> = NONE, keep: ReadonlySet<string> = NONE): Transform[] {
  if (!namespace) return []
  const prefix = (n: string) => `${namespace}_${n}`
  return [new RenameTypes((n) => (keep.has(n) || isGlobalTypeName(n, foreign) ? n : prefix(n))), new RenameRootFields((_op, n) => prefix(n))]
}

/**
 * The scalars of a source that are named like a shared scalar but do not mean it ("foreign"):
 * - in an in-process source (`remote: false`), a scalar with an implementation of its own, i.e.
 *   whose `serialize`, `parseValue` and `parseLiteral` are neither the shared scalar's nor
 *   graphql-js' defaults of a scalar merely declared in SDL (`scalar DateTime` with no resolver);
 * - in a remote GraphQL API (`remote: true`), whose scalars carry no implementation, one that
 *   declares a `specifiedByURL` (`@specifiedBy`) other than the shared scalar's.
 * Every other same-named scalar is the shared one.
 * @returns the foreign names (empty for almost every source).
 */
export function foreignScalarNames(schema: GraphQLSchema, remote: boolean): Set<string> {
  const out = new Set<string>()
  for (const name of Object.keys(sharedScalars)) {
    const type = schema.getType(name)
    if (!type || !isScalarType(type)) continue // an object type named like a shared scalar collides in compose
    const shared = sharedScalars[name]!
    if (type === shared) continue
    if (remote) {
      if (type.specifiedByURL && type.specifiedByURL !== shared.specifiedByURL) out.add(name)
      continue
    }
    const sameAsShared = type.serialize === shared.serialize && type.parseValue === shared.parseValue && type.parseLiteral === shared.parseLiteral
    const declaredOnly = type.serialize === DECLARED_ONLY.serialize && type.parseValue === DECLARED_ONLY.parseValue
    if (!sameAsShared && !declaredOnly) out.add(name)
  }
  return out
}

/**
 * Swaps same-named scalars for the shared instances and, when `namespace` is non-empty, applies it.
 * Abstract types keep working: a `resolveType` that returns an unprefixed type name is wrapped to
 * return the prefixed one.
 * @param schema an executable schema without prefixes.
 * @param namespace `''` for none.
 * @param foreign scalars named like shared ones that keep their own meaning ({@link foreignScalarNames}):
 *   they are prefixed like custom scalars. With `namespace` `''` the caller must have refused them.
 * @returns a new schema whose every reference to a shared scalar is the instance of `gateway/scalars.ts`;
 *   the input is not modified.
 */
export function applyNamespace(schema: GraphQLSchema, namespace: string, foreign: ReadonlySet<string> = NONE): GraphQLSchema {
  const rootNames = new Set([schema.getQueryType()?.name, schema.getMutationType()?.name, schema.getSubscriptionType()?.name].filter(Boolean))
  const prefix = (name: string) => (namespace ? `${namespace}_${name}` : name)
  const typeName = (name: string) => (rootNames.has(name) || isGlobalTypeName(name, foreign) ? name : prefix(name))

  const mapped = mapSchema(schema, {
    [MapperKind.SCALAR_TYPE]: (type) => {
      if (isSpecifiedScalarType(type) || isGlobalTypeName(type.name, foreign)) return type
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
  return withSharedScalars(mapped)
}

/**
 * Points every reference to a shared scalar at the shared instance. `mapSchema` cannot do it: its
 * final rewiring copies every non-built-in scalar, the shared ones included, and two copies of one
 * scalar are two different types to `compose/` and to `GraphQLSchema`. The types of `mapped` are
 * fresh copies made by `mapSchema`, so healing them in place touches nothing outside it.
 */
export function withSharedScalars(mapped: GraphQLSchema): GraphQLSchema {
  const typeMap: Record<string, GraphQLNamedType> = { ...mapped.getTypeMap() }
  let copies = false
  for (const [name, shared] of Object.entries(sharedScalars)) {
    const type = typeMap[name]
    if (type && type !== shared && isScalarType(type)) {
      typeMap[name] = shared
      copies = true
    }
  }
  if (!copies) return mapped
  const directives = mapped.getDirectives()
  healTypes(typeMap, directives)
  const config = mapped.toConfig()
  return new GraphQLSchema({ ...config, types: Object.values(typeMap), directives: [...directives] })
}

function prefixResolved(value: string | undefined, typeName: (name: string) => string): string | undefined {
  return typeof value === 'string' ? typeName(value) : value
}

/**
 * Keeps the source's root types that its own fields return (GitHub's `relay: Query!`, a mutation
 * payload's `query: Query`) as ordinary object types of the source: each such root type is renamed
 * `<namespace>_<Type>` (`<Type>Root` without a namespace, Shopify's spelling), because the gateway's
 * `Query` is a new type that holds every source's root fields. The renamed type keeps the fields,
 * resolvers and names of the source's root (`github_relay { github_viewer { login } }`); a remote
 * source's proxying resolvers read a nested root field from the parent's answer, so the nested
 * selection travels in the same upstream request as the field above it.
 * @param schema a namespaced subschema ({@link applyNamespace}, or a wrapped remote schema).
 * @returns `schema` itself when no field returns a root type, else a renamed copy.
 */
export function detachReferencedRoots(schema: GraphQLSchema, namespace: string): GraphQLSchema {
  const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].filter((r): r is GraphQLObjectType => !!r)
  const referenced = new Set<string>()
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || !(isObjectType(type) || isInterfaceType(type))) continue
    for (const field of Object.values(type.getFields())) {
      const target = getNamedType(field.type)
      if (roots.includes(target as GraphQLObjectType)) referenced.add(target.name)
    }
  }
  if (!referenced.size) return schema
  const rename = (name: string) => (namespace ? `${namespace}_${name}` : `${name}Root`)
  return mapSchema(schema, {
    [MapperKind.ROOT_OBJECT]: (type) => (referenced.has(type.name) ? new GraphQLObjectType({ ...type.toConfig(), name: rename(type.name) }) : type),
  })
}
