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
 * Names are the public, namespaced ones of the composed schema. The resolvers are wrapped once when
 * the gateway is built; operations that touch a protected field do not use direct SQL plans (which
 * skip resolvers), so the check cannot be bypassed.
 */
import { mapSchema, MapperKind } from '@graphql-tools/utils'
import {
  defaultFieldResolver,
  getNamedType,
  isInterfaceType,
  isObjectType,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLFieldConfig,
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

/** `extensions` key marking a protected field: its value is the role groups that may read it. */
const MARK = 'tributaryRoles'
/** Schemas made by {@link applyPermissions} that protect at least one field. */
const protectedSchemas = new WeakSet<GraphQLSchema>()

/**
 * Wraps the resolvers of the fields the rules protect.
 * @returns a new schema (the same one when `rules` is empty).
 * @throws ConfigInvalidError (`TRB_ERR_CONFIG_INVALID`, `permissions.<key>: …`) for a type or field
 *   the schema does not have.
 */
export function applyPermissions(schema: GraphQLSchema, rules: Readonly<Record<string, PermissionRule>>): GraphQLSchema {
  const entries = Object.entries(rules)
  if (entries.length === 0) return schema
  const byField = new Map<string, readonly string[]>() // `Type.field` -> roles (every applicable rule must pass)
  const add = (key: string, roles: readonly string[]) => byField.set(key, [...(byField.get(key) ?? []), `\u0000`, ...roles])
  for (const [key, rule] of entries) {
    const [typeName, fieldName] = key.split('.')
    if (!rule.roles) continue // a row filter only: the database connector applies it (runtime.ts)
    const type = schema.getType(typeName!)
    if (!type || !(isObjectType(type) || isInterfaceType(type))) throw new ConfigInvalidError(`permissions.${key}: the schema has no object type ${typeName}`)
    if (fieldName !== undefined) {
      if (!type.getFields()[fieldName]) throw new ConfigInvalidError(`permissions.${key}: ${typeName} has no field ${fieldName}`)
      add(key, rule.roles)
      continue
    }
    for (const t of Object.values(schema.getTypeMap())) {
      if (!isObjectType(t) || t.name.startsWith('__')) continue
      for (const f of Object.values(t.getFields())) if (getNamedType(f.type).name === typeName) add(`${t.name}.${f.name}`, rule.roles)
    }
  }
  const protectedSchema = mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (config: GraphQLFieldConfig<unknown, unknown>, fieldName, typeName) => {
      const marked = byField.get(`${typeName}.${fieldName}`)
      if (!marked) return config
      // Each rule that applies is one group of roles (separated by NUL): the caller needs one role of every group.
      const groups: string[][] = []
      for (const r of marked) if (r === '\u0000') groups.push([]); else groups.at(-1)!.push(r)
      const resolve = config.resolve ?? defaultFieldResolver
      const subscribe = config.subscribe
      const check = (context: unknown) => {
        const auth = (context as { auth?: AuthInfo | null } | null)?.auth ?? null
        for (const roles of groups) {
          if (!auth || !roles.some((r) => auth.roles.includes(r))) throw new AuthForbiddenError(`${typeName}.${fieldName} needs one of the roles ${roles.join(', ')}`)
        }
      }
      return {
        ...config,
        extensions: { ...config.extensions, [MARK]: groups },
        resolve: (source, args, context, info) => {
          check(context)
          return resolve(source, args, context, info)
        },
        ...(subscribe
          ? {
              subscribe: (source: unknown, args: Record<string, unknown>, context: unknown, info: Parameters<typeof resolve>[3]) => {
                check(context)
                return subscribe(source, args, context, info)
              },
            }
          : {}),
      }
    },
  })
  protectedSchemas.add(protectedSchema)
  return protectedSchema
}

/** True when the document selects a field that {@link applyPermissions} protects (so it must run through resolvers). */
export function selectsProtectedField(schema: GraphQLSchema, document: DocumentNode): boolean {
  if (!protectedSchemas.has(schema)) return false
  const typeInfo = new TypeInfo(schema)
  let found = false
  visit(document, visitWithTypeInfo(typeInfo, {
    Field() {
      if (typeInfo.getFieldDef()?.extensions?.[MARK]) found = true
    },
  }))
  return found
}
