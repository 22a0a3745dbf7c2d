/**
 * Type merging (README "Merged types"): remote sources (`graphql`, `federation`) that list a type in
 * their `merge` config serve one public type with the fields of all of them, stitched with
 * `@graphql-tools/stitch` (its merged-type config: `selectionSet`, `fieldName`, `args`, or `key` +
 * `argsFromKeys` for one batched request per level).
 *
 * Namespacing: a merged type keeps its name in every source (it is the entity's one name, like a
 * shared scalar); everything else of a source, its root fields included, is namespaced as usual.
 * `merge.Product.fieldName` names the source's own root field (`productsByIds`), which is prefixed here.
 *
 * The sources that merge are stitched into one schema, wrapped once more (its resolvers need the
 * stitched schema's `stitchingInfo`, which the gateway schema does not carry) and handed to
 * `compose/` as one composed unit.
 */
import { isObjectType, type GraphQLSchema, type SelectionSetNode } from 'graphql'
import { stitchSchemas } from '@graphql-tools/stitch'
import { wrapSchema } from '@graphql-tools/wrap'
import type { MergedTypeConfig, SubschemaConfig } from '@graphql-tools/delegate'
import { parseSelectionSet } from '@graphql-tools/utils'
import type { ConnectorSubschema } from '../connectors/types.js'
import { ComposeCollisionError, ConfigInvalidError } from '../errors.js'
import { applyNamespace, foreignScalarNames, isGlobalTypeName, remoteRenames } from './namespace.js'
import { relocateFieldErrors } from '../connectors/field-errors.js'

/** An object of the merged type, with (at least) the fields of its `selectionSet`. */
export type MergedObject = Record<string, unknown>

/**
 * How one remote source resolves one merged type (a `@graphql-tools/stitch` merged-type config with
 * declarative forms). With `fieldName` the source can complete objects that another source
 * returned; without it, it only contributes fields to objects its own root fields return.
 */
export interface MergedTypeOptions {
  /**
   * The fields this source needs from an object to complete it, as a selection set (`'{ id }'`).
   * The gateway fetches them from whichever source returned the object. Required with `fieldName`.
   */
  selectionSet?: string
  /** The Query field of this source that returns the type, by its name in the source (`productsByIds`, not `inventory_productsByIds`). */
  fieldName?: string
  /**
   * Not batched: the field's arguments for one object. `{ id: 'id' }` passes the object's `id` as the
   * argument `id`; a function `(object) => args` does anything else. One call per object (the calls
   * of one level still travel in one upstream request).
   */
  args?: Record<string, string> | ((object: MergedObject) => Record<string, unknown>)
  /**
   * Batched (with `argsFromKeys`): the key of one object, a field name (`'id'`), several (`['sku',
   * 'region']`: the key is `{ sku, region }`) or a function. Every object of one level is fetched by
   * one call of `fieldName`, which must return one item per key, in the keys' order (`null` for a
   * missing one).
   */
  key?: string | string[] | ((object: MergedObject) => unknown)
  /** Batched: the arguments from the list of keys. `'ids'` passes them as the list argument `ids`; or a function `(keys) => args`. */
  argsFromKeys?: string | ((keys: readonly unknown[]) => Record<string, unknown>)
  /** When the sources define a field of the type differently, this source's definition is the public one. Default false. */
  canonical?: boolean
}

/** A source that takes part in type merging, as `compose/` sees it. */
export interface MergingSource {
  namespace: string
  name: string
  subschema: ConnectorSubschema
  merge: Readonly<Record<string, MergedTypeOptions>>
}

/**
 * Stitches the merging sources into one schema: merged types once, with the fields of every source
 * that lists them, every other name namespaced as usual.
 * @returns an executable schema with the shared scalars swapped in, ready to merge with the rest.
 * @throws ConfigInvalidError for a merge config that does not match the source (an unknown type,
 *   field or argument, a bad selection set, a key field outside the selection set, a type listed by
 *   one source only, an in-process source).
 * @throws ComposeCollisionError when two of these sources define one (non-merged) name.
 */
export function composeMergedSources(sources: readonly MergingSource[]): GraphQLSchema {
  const names = new Map<string, string>()
  const claim = (key: string, what: string, owner: string) => {
    const other = names.get(key)
    if (other && other !== owner) throw new ComposeCollisionError(`${what} is defined by both ${other} and ${owner}; give one of them a namespace`)
    names.set(key, owner)
  }
  const subschemas: SubschemaConfig[] = sources.map((source) => {
    const { subschema, namespace } = source
    if (subschema.kind !== 'remote') throw new ConfigInvalidError(`${source.name}: merge: only graphql and federation sources take part in type merging`)
    const foreign = foreignScalarNames(subschema.schema, true)
    if (foreign.size && !namespace) {
      throw new ComposeCollisionError(`${source.name} defines its own scalar ${[...foreign][0]}, but that is the name of a shared scalar; give the source a namespace`)
    }
    const keep = new Set(Object.keys(source.merge))
    const prefix = (n: string) => (namespace ? `${namespace}_${n}` : n)
    const schema = subschema.schema
    const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]
    for (const root of roots) {
      if (!root) continue
      const op = root === roots[0] ? 'Query' : root === roots[1] ? 'Mutation' : 'Subscription'
      for (const field of Object.keys(root.getFields())) claim(`${op}.${prefix(field)}`, `${op}.${prefix(field)}`, source.name)
    }
    for (const type of Object.values(schema.getTypeMap())) {
      if (roots.includes(type as never) || isGlobalTypeName(type.name, foreign) || keep.has(type.name)) continue
      claim(prefix(type.name), `type ${prefix(type.name)}`, source.name)
    }
    const merge: Record<string, MergedTypeConfig> = {}
    for (const [typeName, options] of Object.entries(source.merge)) merge[typeName] = mergedTypeConfig(source, typeName, options, prefix)
    return {
      schema,
      executor: subschema.executor,
      transforms: remoteRenames(namespace, foreign, keep),
      merge,
      batch: true,
    }
  })
  const listedBy = new Map<string, string[]>()
  for (const s of sources) for (const type of Object.keys(s.merge)) listedBy.set(type, [...(listedBy.get(type) ?? []), s.name])
  for (const [type, owners] of listedBy) {
    if (owners.length < 2) throw new ConfigInvalidError(`${owners[0]}: merge.${type}: no other source lists ${type}; list it in the merge of every source that serves it`)
  }
  for (const type of listedBy.keys()) {
    if (names.has(type)) throw new ComposeCollisionError(`type ${type} is merged by ${listedBy.get(type)!.join(', ')} and also defined, not merged, by ${names.get(type)}`)
  }
  const stitched = stitchSchemas({ subschemas })
  // A batched call that failed fails each object's fields, each at its own path.
  relocateFieldErrors(stitched)
  return applyNamespace(wrapSchema({ schema: stitched }), '')
}

/** One source's `merge.<typeName>` as a `@graphql-tools/stitch` merged-type config, checked against the source's schema. */
function mergedTypeConfig(source: MergingSource, typeName: string, options: MergedTypeOptions, prefix: (name: string) => string): MergedTypeConfig {
  const at = `${source.name}: merge.${typeName}`
  const invalid = (path: string, message: string) => new ConfigInvalidError(`${at}${path}: ${message}`)
  const type = source.subschema.schema.getType(typeName)
  if (!type || !isObjectType(type)) throw invalid('', `${source.name} has no object type ${typeName}`)

  let selected: Set<string> | undefined
  if (options.selectionSet !== undefined) {
    let node: SelectionSetNode
    try {
      node = parseSelectionSet(options.selectionSet, { noLocation: true })
    } catch (err) {
      throw invalid('.selectionSet', `not a selection set: ${(err as Error).message}`)
    }
    selected = new Set(node.selections.flatMap((s) => (s.kind === 'Field' ? [s.name.value] : [])))
  }
  const config: MergedTypeConfig = { ...(options.selectionSet !== undefined ? { selectionSet: options.selectionSet } : {}), ...(options.canonical ? { canonical: true } : {}) }
  if (options.fieldName === undefined) return config

  const field = source.subschema.schema.getQueryType()?.getFields()[options.fieldName]
  if (!field) throw invalid('.fieldName', `${source.name} has no Query field ${options.fieldName}`)
  const argNames = new Set(field.args.map((a) => a.name))
  const needField = (path: string, name: string) => {
    if (!selected?.has(name)) throw invalid(path, `${name} is not in the selectionSet, so the object does not carry it`)
  }
  const needArg = (path: string, name: string) => {
    if (!argNames.has(name)) throw invalid(path, `${options.fieldName} has no argument ${name}`)
  }
  config.fieldName = prefix(options.fieldName)

  if (options.key !== undefined) {
    const { key, argsFromKeys } = options
    if (typeof key === 'function') config.key = key
    else if (typeof key === 'string') {
      needField('.key', key)
      config.key = (o: MergedObject) => o[key]
    } else {
      key.forEach((k) => needField('.key', k))
      config.key = (o: MergedObject) => Object.fromEntries(key.map((k) => [k, o[k]]))
    }
    if (typeof argsFromKeys === 'string') {
      needArg('.argsFromKeys', argsFromKeys)
      config.argsFromKeys = (keys) => ({ [argsFromKeys]: keys })
    } else if (argsFromKeys) config.argsFromKeys = argsFromKeys
    else throw invalid('.argsFromKeys', 'is required with key')
    return config
  }
  const { args } = options
  if (typeof args === 'function') config.args = args
  else if (args) {
    for (const [arg, from] of Object.entries(args)) {
      needArg(`.args.${arg}`, arg)
      needField(`.args.${arg}`, from)
    }
    config.args = (o: MergedObject) => Object.fromEntries(Object.entries(args).map(([arg, from]) => [arg, o[from]]))
  } else throw invalid('', 'fieldName needs args, or key and argsFromKeys')
  return config
}
