/**
 * Role permissions on types and fields, Hasura style (config `permissions`, README "Authentication"):
 *
 * ```ts
 * permissions: { 'todo_Todo': { roles: ['admin', 'user'] }, 'todo_Todo.description': { roles: ['admin'] } }
 * ```
 *
 * - `'Type.field'`: the field resolves only for a caller whose token holds one of the roles;
 *   anyone else gets a `TRB_ERR_AUTH_FORBIDDEN` error at the field's path (its value is null), never
 *   the value.
 * - `'Type'`: every field that returns the type (root fields, relations) is protected so: the
 *   objects are never read for a caller without the roles.
 *
 * - `'Type': { filter }` (database types): a row filter, which this module leaves alone: `runtime.ts`
 *   hands it to the database source (connectors/database/compiler/row-filter.ts). A rule with both
 *   `roles` and `filter` gets both.
 *
 * - Both also guard every other way to the values that a data source declares ({@link READS_EXT}):
 *   aggregates, groupBy, and arguments (`where`, `orderBy`, `cursor`, `distinct`, `by`, `having`…)
 *   that reach a protected field or type: see {@link applyPermissions}.
 *
 * Names are the public, namespaced ones of the composed schema. The resolvers are wrapped once when
 * the gateway is built; operations that touch a protected field, or whose arguments may reach one,
 * do not use direct SQL plans (which skip resolvers), so the check cannot be bypassed.
 */
import { mapSchema, MapperKind } from '@graphql-tools/utils'
import {
  defaultFieldResolver,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLFieldConfig,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql'
import type { AuthInfo } from './jwt.js'
import { AuthForbiddenError, ConfigInvalidError } from '../errors.js'

/**
 * One permission rule of the config: `roles`, a row `filter` (types of database sources), or both
 * (both apply). At least one of `roles` and `filter` is required.
 */
export interface PermissionRule {
  /** Roles (from `auth.jwt.rolesClaim`) of which the caller needs at least one. */
  roles?: string[]
  /**
   * Row filter (`'Type'` keys of database sources only): the model's `where` input syntax (scalar
   * operators, `AND`/`OR`/`NOT`, relation filters) whose leaves may be `{ claim: 'name' }` (a claim
   * of the verified token; a dotted path reaches into objects). ANDed into every statement that
   * reads, updates or deletes rows of the type; rows written by a create, upsert or update must pass
   * it. Validated against the model at startup (`TRB_ERR_CONFIG_INVALID` naming the path).
   * No token: `TRB_ERR_AUTH_REQUIRED`; a claim missing or of the wrong type: `TRB_ERR_AUTH_FORBIDDEN`.
   * E.g. `{ ownerId: { equals: { claim: 'sub' } } }`.
   */
  filter?: Record<string, unknown>
  /** With `filter`: callers with one of these roles read and write every row. Default none. */
  bypassRoles?: string[]
}

/** `extensions` key marking a protected output field: its value is the {@link Need}s of a caller who reads it. */
const MARK = 'tributaryRoles'

/**
 * `extensions` key by which a data source tells which values of its types a schema element reaches
 * (the database connector sets it: connectors/database/build-schema.ts), so that a rule on
 * `'Type.field'` or `'Type'` also guards every other way to those values:
 * - on an object type: `{ model }`, the type's own {@link ModelRef};
 * - on an output field, an input field or an enum value: `{ model, field?, target? }`: the element
 *   reaches the values of field `field` of `model` (a `'Type.field'` rule applies) and rows of
 *   `model` and of `target` (their `'Type'` rules apply). E.g. `NoteWhereInput.secret` and
 *   `NoteMinAggregateOutputType.secret` are `{ model: Note, field: 'secret' }`,
 *   `CommentWhereInput.note` is `{ model: Comment, field: 'note', target: Note }`.
 * Refs are compared by identity, so the tags hold after `compose/` renamed the types.
 */
export const READS_EXT = 'tributaryReads'

/** Identifies one object type of a source across renames; `name` (its own name) is for messages only. */
export interface ModelRef {
  readonly name: string
}

/** The value of {@link READS_EXT} (see there). */
export interface ReadsTag {
  readonly model: ModelRef
  readonly field?: string
  readonly target?: ModelRef
}

/** One rule a caller must pass: its key (`'Type.field'` or `'Type'`) and its roles, of which the caller needs one. */
interface Need {
  readonly key: string
  readonly roles: readonly string[]
}

/**
 * A named input type (input object or enum) from which a guarded input field or enum value can be
 * reached. `guards`: by input field name (input object) or internal value (enum), the needs of
 * using it; `children`: the fields (of an input object) whose named type is itself such a node.
 */
interface InputNode {
  readonly name: string
  readonly guards: Map<unknown, readonly Need[]>
  readonly children: Map<string, InputNode>
  /** {@link reached}'s results by argument value (lists and objects with children walked). */
  readonly seen: WeakMap<object, readonly Need[]>
}

/** The input nodes of each schema made by {@link applyPermissions}, by input type name. */
const guardedSchemas = new WeakMap<GraphQLSchema, ReadonlyMap<string, InputNode>>()

const NO_NEEDS: readonly Need[] = []

/** Adds the needs of `more` that `into` lacks (the same rule is one need); returns `into`, made when null. */
function addNeeds(into: Need[] | null, more: readonly Need[]): Need[] | null {
  for (const n of more) {
    if (!into) into = [n]
    else if (!into.includes(n)) into.push(n)
  }
  return into
}

/** The first need the caller (`context.auth`) does not meet, or undefined. */
function unmet(needs: readonly Need[], context: unknown): Need | undefined {
  const auth = (context as { auth?: AuthInfo | null } | null)?.auth ?? null
  return needs.find((n) => !auth || !n.roles.some((r) => auth.roles.includes(r)))
}

/**
 * The needs of every guarded input field and enum value that a coerced argument value uses (a key
 * present, whatever its value, even null), at any depth. Time linear in the value's size: the result
 * for a list or an object with walked children is remembered per node (`node.seen`), so a variable's
 * value used by many fields (or by a field resolved once per row) is walked once; an object without
 * such children costs its own keys, at most its input type's fields.
 */
function reached(value: unknown, node: InputNode): readonly Need[] {
  if (value === null || value === undefined) return NO_NEEDS
  if (typeof value !== 'object') return node.guards.get(value) ?? NO_NEEDS // an enum's internal value
  const known = node.seen.get(value)
  if (known) return known
  let out: Need[] | null = null
  let inner = Array.isArray(value)
  if (inner) {
    for (const item of value as unknown[]) out = addNeeds(out, reached(item, node))
  } else {
    for (const key of Object.keys(value)) {
      const own = node.guards.get(key)
      if (own) out = addNeeds(out, own)
      const child = node.children.get(key)
      if (!child) continue
      const v = (value as Record<string, unknown>)[key]
      if (v !== null && typeof v === 'object') inner = true
      out = addNeeds(out, reached(v, child))
    }
  }
  const result = out ?? NO_NEEDS
  if (inner) node.seen.set(value, result)
  return result
}

/**
 * Finds the named input types from which a guarded input field or enum value is reachable
 * (breadth-first from the guarded ones up their parents): time linear in the schema's input types.
 */
function inputNodes(schema: GraphQLSchema, needsOf: (tag: unknown) => readonly Need[]): Map<string, InputNode> {
  const nodes = new Map<string, InputNode>()
  const node = (name: string): InputNode => {
    let n = nodes.get(name)
    if (!n) nodes.set(name, (n = { name, guards: new Map(), children: new Map(), seen: new WeakMap() }))
    return n
  }
  const parents = new Map<string, [string, string][]>() // named input type → [input object, field] using it
  for (const type of Object.values(schema.getTypeMap())) {
    if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) {
        const needs = needsOf(field.extensions[READS_EXT])
        if (needs.length) node(type.name).guards.set(field.name, needs)
        const named = getNamedType(field.type)
        if (isInputObjectType(named) || isEnumType(named)) {
          let list = parents.get(named.name)
          if (!list) parents.set(named.name, (list = []))
          list.push([type.name, field.name])
        }
      }
    } else if (isEnumType(type) && !type.name.startsWith('__')) {
      for (const v of type.getValues()) {
        const needs = needsOf(v.extensions[READS_EXT])
        if (needs.length) node(type.name).guards.set(v.value, needs)
      }
    }
  }
  const queue = [...nodes.keys()]
  for (let i = 0; i < queue.length; i++) {
    const child = nodes.get(queue[i]!)!
    for (const [parent, field] of parents.get(child.name) ?? []) {
      if (!nodes.has(parent)) queue.push(parent)
      node(parent).children.set(field, child)
    }
  }
  return nodes
}

/**
 * Wraps the resolvers of the fields the rules protect, and of the fields whose arguments can reach
 * a protected value (README "Authentication"): a field protected by `'Type.field'` is guarded
 * wherever its values are reached — selected, aggregated (`_min`, `_max`, `_avg`, `_sum`, `_count`
 * of it), grouped by (`by`, `having`, groupBy's selection), filtered on (`where` at any depth,
 * through relation filters and `AND`/`OR`/`NOT`), ordered by, used as `cursor` or `distinct`, or
 * as a unique key (`findUnique`, `connect`) — and a type protected by `'Type'` wherever its rows are
 * reached (root and relation fields, aggregates, relation filters, relation order terms, relation
 * `_count`s, write results). Where a field's arguments reach a protected value, the coerced
 * arguments (literals and variables alike) are checked before the resolver runs: a caller without
 * the role gets `TRB_ERR_AUTH_FORBIDDEN` at the field's path and the field is never resolved.
 * Which input fields and enum values are protected is computed once here, per input type; fields
 * whose arguments cannot reach any are not wrapped (no cost).
 * @returns a new schema (the same one when no rule has `roles`).
 * @throws ConfigInvalidError (`TRB_ERR_CONFIG_INVALID`, `permissions.<key>: …`) for a type or field
 *   the schema does not have.
 */
export function applyPermissions(schema: GraphQLSchema, rules: Readonly<Record<string, PermissionRule>>): GraphQLSchema {
  const entries = Object.entries(rules)
  if (entries.length === 0) return schema
  const needs = new Map<string, Need[]>() // rule key ('Type.field' or 'Type') → its needs (one per rule)
  for (const [key, rule] of entries) {
    const [typeName, fieldName] = key.split('.')
    if (!rule.roles) continue // a row filter only: the database connector applies it (runtime.ts)
    const type = schema.getType(typeName!)
    if (!type || !(isObjectType(type) || isInterfaceType(type))) throw new ConfigInvalidError(`permissions.${key}: the schema has no object type ${typeName}`)
    if (fieldName !== undefined && !type.getFields()[fieldName]) throw new ConfigInvalidError(`permissions.${key}: ${typeName} has no field ${fieldName}`)
    const k = fieldName === undefined ? typeName! : key
    needs.set(k, [...(needs.get(k) ?? []), { key: k, roles: rule.roles }])
  }
  if (needs.size === 0) return schema // row filters only
  // The public name of each model a source tagged (READS_EXT), and the needs of a tag.
  const publicName = new Map<ModelRef, string>()
  for (const t of Object.values(schema.getTypeMap())) {
    const tag = isObjectType(t) ? (t.extensions[READS_EXT] as ReadsTag | undefined) : undefined
    if (tag && tag.field === undefined && tag.target === undefined) publicName.set(tag.model, t.name)
  }
  const needsOf = (value: unknown): readonly Need[] => {
    const tag = value as ReadsTag | undefined
    const model = tag && publicName.get(tag.model)
    if (!model) return NO_NEEDS
    let out: Need[] | null = null
    if (tag.field !== undefined) out = addNeeds(out, needs.get(`${model}.${tag.field}`) ?? NO_NEEDS)
    out = addNeeds(out, needs.get(model) ?? NO_NEEDS)
    const target = tag.target && publicName.get(tag.target)
    if (target) out = addNeeds(out, needs.get(target) ?? NO_NEEDS)
    return out ?? NO_NEEDS
  }
  const nodes = inputNodes(schema, needsOf)
  const protectedSchema = mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (config: GraphQLFieldConfig<unknown, unknown>, fieldName, typeName) => {
      // Its own rule, the rules of the type it returns, and those of the values its tag says it reaches.
      let own = addNeeds(null, needs.get(`${typeName}.${fieldName}`) ?? NO_NEEDS)
      own = addNeeds(own, needs.get(getNamedType(config.type).name) ?? NO_NEEDS)
      own = addNeeds(own, needsOf(config.extensions?.[READS_EXT]))
      const args: [string, InputNode][] = []
      for (const [name, arg] of Object.entries(config.args ?? {})) {
        const n = nodes.get(getNamedType(arg.type).name)
        if (n) args.push([name, n])
      }
      if (!own && args.length === 0) return config
      const check = (context: unknown, argValues: Record<string, unknown>) => {
        const missing = own && unmet(own, context)
        if (missing) throw new AuthForbiddenError(`${typeName}.${fieldName} needs one of the roles ${missing.roles.join(', ')}`)
        for (const [name, n] of args) {
          const reach = reached(argValues[name], n)
          const lacking = reach.length ? unmet(reach, context) : undefined
          if (lacking) throw new AuthForbiddenError(`the argument ${name} of ${typeName}.${fieldName} reaches ${lacking.key}, which needs one of the roles ${lacking.roles.join(', ')}`)
        }
      }
      const resolve = config.resolve ?? defaultFieldResolver
      const subscribe = config.subscribe
      return {
        ...config,
        extensions: { ...config.extensions, ...(own ? { [MARK]: own } : {}) },
        resolve: (source, argValues, context, info) => {
          check(context, argValues)
          return resolve(source, argValues, context, info)
        },
        ...(subscribe
          ? {
              subscribe: (source: unknown, argValues: Record<string, unknown>, context: unknown, info: Parameters<typeof resolve>[3]) => {
                check(context, argValues)
                return subscribe(source, argValues, context, info)
              },
            }
          : {}),
      }
    },
  })
  guardedSchemas.set(protectedSchema, nodes)
  return protectedSchema
}

/**
 * Carries the guards {@link applyPermissions} registered for `from` over to `to`, a schema rebuilt
 * from it with the same type names and the same (wrapped) resolvers (the Federation subgraph schema
 * of `server.federation`). Without it {@link selectsProtectedField} knows nothing of `to`, and a
 * document selecting, filtering or ordering by a protected field would take the direct SQL plan,
 * which skips the resolvers that check the caller.
 * @param from a schema returned by {@link applyPermissions} (nothing is carried when it registered none)
 * @param to the schema rebuilt from it
 */
export function inheritPermissionGuards(from: GraphQLSchema, to: GraphQLSchema): void {
  const nodes = guardedSchemas.get(from)
  if (nodes && from !== to) guardedSchemas.set(to, nodes)
}

/**
 * True when the document selects a field that {@link applyPermissions} protects, or may reach a
 * protected value through an argument: a guarded input field or enum value written in a literal,
 * or a variable (or a variable's default) of an input type that can reach one. Such a document
 * must run through resolvers, which check the caller (a direct SQL plan skips them). Time linear in
 * the document's size.
 */
export function selectsProtectedField(schema: GraphQLSchema, document: DocumentNode): boolean {
  const nodes = guardedSchemas.get(schema)
  if (!nodes) return false
  const typeInfo = new TypeInfo(schema)
  let found = false
  const named = (t: GraphQLInputType | null | undefined) => (t ? getNamedType(t) : undefined)
  visit(document, visitWithTypeInfo(typeInfo, {
    Field() {
      if (typeInfo.getFieldDef()?.extensions?.[MARK]) found = true
    },
    ObjectField(node) {
      const parent = named(typeInfo.getParentInputType())
      if (parent && nodes.get(parent.name)?.guards.has(node.name.value)) found = true
    },
    EnumValue(node) {
      const type = named(typeInfo.getInputType())
      if (type && isEnumType(type) && nodes.get(type.name)?.guards.has(type.getValue(node.value)?.value)) found = true
    },
    Variable() {
      const type = named(typeInfo.getInputType())
      if (type && nodes.has(type.name)) found = true
    },
  }))
  return found
}
