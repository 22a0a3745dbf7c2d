/**
 * Composition: namespaces every subschema once and merges them into the gateway schema
 * (docs/architecture.md §2.3). In-process sources are renamed at build time with `mapSchema` (or built with
 * their public names by their connector, `LocalSubschema.namespaced`: REST) and merged
 * without delegation; remote GraphQL APIs are wrapped with graphql-tools `RenameTypes` /
 * `RenameRootFields` transforms, the only request-time delegation.
 */
import {
  GraphQLObjectType,
  GraphQLSchema,
  isObjectType,
  specifiedDirectives,
  type GraphQLDirective,
  type GraphQLFieldConfigMap,
  type GraphQLNamedType,
} from 'graphql'
import { wrapSchema } from '@graphql-tools/wrap'
import type { ConnectorSubschema } from '../connectors/types.js'
import { ComposeCollisionError, ComposeNamespaceError } from '../errors.js'
import { applyNamespace, detachReferencedRoots, foreignScalarNames, remoteRenames } from './namespace.js'
import { composeMergedSources, type MergedTypeOptions, type MergingSource } from './merge.js'

/** One loaded data source, ready to compose. */
export interface ComposableSource {
  /** The namespace, or `''` for none. */
  namespace: string
  /** The name used in messages: the namespace or `source#<index>`. */
  name: string
  subschema: ConnectorSubschema
  /** Types merged with other remote sources (`compose/merge.ts`); absent or empty for none. */
  merge?: Readonly<Record<string, MergedTypeOptions>>
}

const NAME = /^[_A-Za-z][_0-9A-Za-z]*$/

function namespaced(source: ComposableSource): GraphQLSchema {
  const { subschema, namespace } = source
  // Built with its public names by its connector (REST): nothing to rename, no foreign scalars by contract.
  if (subschema.kind === 'local' && subschema.namespaced?.namespace === namespace) return detachReferencedRoots(subschema.namespaced.schema, namespace)
  const foreign = foreignScalarNames(subschema.schema, subschema.kind === 'remote')
  if (foreign.size && !namespace) {
    const [name] = foreign
    throw new ComposeCollisionError(
      `${source.name} defines its own scalar ${name}, but ${name} is the name of a shared scalar; give the source a namespace (its scalar becomes <namespace>_${name}) or rename the scalar`,
    )
  }
  if (subschema.kind === 'local') return detachReferencedRoots(applyNamespace(subschema.schema, namespace, foreign), namespace)
  // batch: the root fields of one execution bound for this source travel as one document (aliased),
  // so a `_join` level (operations/joins.ts) or a query with several of its root fields is one request.
  const wrapped = wrapSchema({ schema: subschema.schema, executor: subschema.executor, transforms: remoteRenames(namespace, foreign), batch: true })
  // Shared scalars and root-type normalisation still apply to the wrapped schema (foreign ones are prefixed by now).
  return detachReferencedRoots(applyNamespace(wrapped, ''), namespace)
}

const isMerging = (s: ComposableSource): s is ComposableSource & MergingSource => !!s.merge && Object.keys(s.merge).length > 0

/**
 * The sources as composed units, in config order: each source namespaced on its own, except the
 * sources with merged types, which form one stitched unit (`compose/merge.ts`) at the first one's place.
 */
function units(sources: readonly ComposableSource[]): { name: string; schema: GraphQLSchema }[] {
  const merging = sources.filter(isMerging)
  const out: { name: string; schema: GraphQLSchema }[] = []
  for (const source of sources) {
    if (!isMerging(source)) out.push({ name: source.name, schema: namespaced(source) })
    else if (source === merging[0]) out.push({ name: merging.map((s) => s.name).join(' + '), schema: composeMergedSources(merging) })
  }
  return out
}

function describeType(type: GraphQLNamedType): string {
  return `${type.constructor.name.replace(/^GraphQL/, '').replace(/Type$/, '').toLowerCase()} ${type.name}`
}

/**
 * Composes the data sources into one schema.
 * @param sources in config order.
 * @returns the gateway schema: `Query`, `Mutation` and `Subscription` hold every source's root fields.
 * @throws ComposeNamespaceError when two sources share a namespace or a namespace is not a GraphQL name.
 * @throws ComposeCollisionError when two sources define the same type or root field name, naming both sources.
 */
export function composeSchema(sources: readonly ComposableSource[]): GraphQLSchema {
  const seenNs = new Map<string, string>()
  for (const s of sources) {
    if (!s.namespace) continue
    if (!NAME.test(s.namespace) || s.namespace.includes('__') || s.namespace.endsWith('_')) {
      throw new ComposeNamespaceError(`${s.name}: namespace "${s.namespace}" is not a valid GraphQL name prefix`)
    }
    if (seenNs.has(s.namespace)) throw new ComposeNamespaceError(`namespace "${s.namespace}" is used by ${seenNs.get(s.namespace)} and ${s.name}`)
    seenNs.set(s.namespace, s.name)
  }

  const types = new Map<string, { type: GraphQLNamedType; source: string }>()
  const roots = { query: {}, mutation: {}, subscription: {} } as Record<'query' | 'mutation' | 'subscription', GraphQLFieldConfigMap<unknown, unknown>>
  const rootOwner = new Map<string, string>()
  const directives = new Map<string, GraphQLDirective>(specifiedDirectives.map((d) => [d.name, d]))

  for (const source of units(sources)) {
    const schema = source.schema
    const rootTypes = {
      query: schema.getQueryType(),
      mutation: schema.getMutationType(),
      subscription: schema.getSubscriptionType(),
    }
    const rootTypeNames = new Set(Object.values(rootTypes).filter(Boolean).map((t) => t!.name))
    for (const [op, rootType] of Object.entries(rootTypes) as [keyof typeof roots, GraphQLObjectType | null | undefined][]) {
      if (!rootType) continue
      for (const [name, field] of Object.entries(rootType.toConfig().fields)) {
        const key = `${op}.${name}`
        const owner = rootOwner.get(key)
        if (owner) throw new ComposeCollisionError(`${rootType.name}.${name} is defined by both ${owner} and ${source.name}; give one of them a namespace`)
        rootOwner.set(key, source.name)
        roots[op][name] = field
      }
    }
    for (const type of Object.values(schema.getTypeMap())) {
      if (type.name.startsWith('__') || rootTypeNames.has(type.name)) continue
      if (['Query', 'Mutation', 'Subscription'].includes(type.name) && isObjectType(type)) {
        throw new ComposeCollisionError(`${source.name} defines a non-root type named ${type.name}, which is reserved for the gateway's root types`)
      }
      const existing = types.get(type.name)
      if (existing && existing.type !== type) {
        throw new ComposeCollisionError(
          `type ${type.name} is defined by both ${existing.source} (${describeType(existing.type)}) and ${source.name} (${describeType(type)}); give one of them a namespace`,
        )
      }
      if (!existing) types.set(type.name, { type, source: source.name })
    }
    for (const d of schema.getDirectives()) {
      if (!directives.has(d.name)) directives.set(d.name, d)
    }
  }

  const root = (name: string, fields: GraphQLFieldConfigMap<unknown, unknown>) =>
    Object.keys(fields).length ? new GraphQLObjectType({ name, fields }) : undefined
  const query = root('Query', roots.query)
  if (!query) throw new ComposeCollisionError('no data source provides a Query field')
  return new GraphQLSchema({
    query,
    mutation: root('Mutation', roots.mutation),
    subscription: root('Subscription', roots.subscription),
    types: [...types.values()].map((t) => t.type),
    directives: [...directives.values()],
  })
}
