/**
 * Row filters (config `permissions: { 'ns_Type': { filter } }`, README "Authentication"): a condition
 * in the model's own `where` syntax, whose leaves may be `{ claim: 'name' }` (a claim of the verified
 * token, dotted paths reach into objects), ANDed by the compiler (read.ts `rowFilterCond`) into every
 * statement that reads or writes rows of the model.
 *
 * The SQL never depends on the caller: a claim is a bound parameter whose getter reads the request's
 * identity, which resolvers attach to the bound variables with {@link withAuth}. So plans stay cached
 * per operation (plan-cache.ts) and are shared by every caller without leaking a value.
 *
 * At bind time (before any statement is sent):
 * - no token, and the filter reads a claim: `TRB_ERR_AUTH_REQUIRED` (401);
 * - the claim is missing, null, or not a value of the compared field's GraphQL type (a number for a
 *   String column…): `TRB_ERR_AUTH_FORBIDDEN` (403);
 * - a caller with one of `bypassRoles` reads every row (the bound flag of `(? = 1 OR filter)`).
 */
import {
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isScalarType,
  type GraphQLInputObjectType,
  type GraphQLInputType,
} from 'graphql'
import type { AuthInfo } from '../../../auth/jwt.js'
import { claimValue } from '../../../auth/jwt.js'
import { AuthForbiddenError, AuthRequiredError, ConfigInvalidError } from '../../../errors.js'
import { Leaf, NULL, type ArgValue } from './args.js'
import type { Getter, Vars } from './frag.js'

/** Key of the request's identity (`AuthInfo`, or null when anonymous) on the bound variables object. */
export const AUTH_VAR: unique symbol = Symbol('tributary.auth')

/** One configured row filter, as the connector receives it. */
export interface RowFilterRule {
  /** The filter: the model's `where` input, leaves may be `{ claim: 'name' }`. */
  filter: unknown
  /** Roles whose callers are not filtered. Default none. */
  bypassRoles?: readonly string[]
  /** Config path for error messages (`permissions.todo_Todo.filter`). */
  path: string
}

/** A row filter compiled for the read compiler. */
export interface RowFilter {
  /** The filter as an argument tree (constants for literals, claim getters for claims). */
  where: ArgValue
  /** Roles that bypass it (empty: everyone is filtered). */
  bypassRoles: readonly string[]
  /** Reads the bypass flag (1 or 0) from the bound variables; null without `bypassRoles`. */
  bypass: Getter | null
}

/**
 * The variables to bind a plan with: `vars` plus the request's identity under {@link AUTH_VAR}.
 * Every resolver of a source with row filters binds through this.
 */
export function withAuth(vars: Vars, context: unknown): Vars {
  const auth = (context as { auth?: AuthInfo | null } | null | undefined)?.auth ?? null
  // One object per execution (its variables object), so that per-request bookkeeping keyed by the
  // bound variables (the nested-write budget) sees every field of the request.
  const known = withAuthCache.get(vars)
  if (known && (known as Record<symbol, unknown>)[AUTH_VAR] === auth) return known
  const out = { ...vars, [AUTH_VAR]: auth } as Vars
  withAuthCache.set(vars, out)
  return out
}

const withAuthCache = new WeakMap<Vars, Vars>()

/**
 * The identity bound by {@link withAuth}.
 * @throws Error when nothing was bound (a resolver that forgot `withAuth`): fails closed.
 */
function authOf(vars: Vars): AuthInfo | null {
  const auth = (vars as Record<symbol, unknown>)[AUTH_VAR] as AuthInfo | null | undefined
  if (auth === undefined) throw new Error('a row-filtered statement was bound without the request identity')
  return auth
}

function bypasses(auth: AuthInfo | null, roles: readonly string[]): boolean {
  return auth !== null && roles.length > 0 && roles.some((r) => auth.roles.includes(r))
}

/** The getter of one `{ claim }` leaf; `parse` checks the value against the field's type. */
function claimGetter(model: string, name: string, typeName: string, parse: (v: unknown) => unknown, bypassRoles: readonly string[]): Getter {
  return (vars) => {
    const auth = authOf(vars)
    if (auth === null) throw new AuthRequiredError(`rows of ${model} are filtered by the token's "${name}" claim`)
    if (bypasses(auth, bypassRoles)) return null
    const value = claimValue(auth.claims, name)
    if (value === undefined || value === null) throw new AuthForbiddenError(`the token has no "${name}" claim, which the row filter of ${model} needs`)
    let parsed: unknown
    try {
      parsed = parse(value)
    } catch {
      parsed = undefined
    }
    if (parsed === undefined || parsed === null) throw new AuthForbiddenError(`the "${name}" claim of the token is not a ${typeName}, which the row filter of ${model} compares it with`)
    return parsed
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** `{ claim: 'name' }` exactly. */
function claimRef(v: unknown): string | undefined {
  if (!isPlainObject(v)) return undefined
  const keys = Object.keys(v)
  return keys.length === 1 && keys[0] === 'claim' ? (typeof v['claim'] === 'string' && v['claim'] !== '' ? v['claim'] : '') : undefined
}

/**
 * Compiles a configured filter against the model's `XWhereInput` type.
 * @param model the model's GraphQL name, for messages
 * @param whereType the model's where input type (of the source's own schema)
 * @returns the compiled filter
 * @throws ConfigInvalidError (`TRB_ERR_CONFIG_INVALID`) naming the path of an unknown field or
 *   operator, a literal of the wrong type, an empty claim name, or a claim standing for a list or an
 *   input object
 */
export function compileRowFilter(model: string, whereType: GraphQLInputObjectType, rule: RowFilterRule): RowFilter {
  const bypassRoles = rule.bypassRoles ?? []
  const fail = (path: string, why: string): never => {
    throw new ConfigInvalidError(`${path}: ${why}`)
  }
  const convert = (value: unknown, type: GraphQLInputType, path: string, fieldName: string): ArgValue => {
    if (value === null) return NULL
    const t = getNullableType(type) as GraphQLInputType
    if (isListType(t)) {
      const item = t.ofType as GraphQLInputType
      if (claimRef(value) !== undefined && !isInputObjectType(getNullableType(item))) return fail(path, 'a claim stands for one value, not a list: write [{ claim: … }]')
      const items = Array.isArray(value) ? value : [value]
      return items.map((x, i) => convert(x, item, `${path}[${i}]`, fieldName))
    }
    if (isInputObjectType(t)) {
      const fields = t.getFields()
      const claim = claimRef(value)
      // `field: { claim }` is `field: { equals: { claim } }`, as `field: "x"` would be.
      if (claim !== undefined && fields['equals'] && !fields['claim']) return { equals: convert(value, fields['equals'].type, `${path}.equals`, 'equals') }
      if (claim !== undefined) return fail(path, `a claim cannot stand for a ${t.name}`)
      if (!isPlainObject(value)) return fail(path, `expected an object (${t.name})`)
      const out: { [key: string]: ArgValue } = {}
      for (const [key, v] of Object.entries(value)) {
        const f = fields[key]
        if (!f) return fail(`${path}.${key}`, `${t.name} has no field ${key} (fields: ${Object.keys(fields).join(', ')})`)
        if (v === undefined) continue
        out[key] = convert(v, f.type, `${path}.${key}`, key)
      }
      return out
    }
    const claim = claimRef(value)
    if (claim === '') return fail(path, 'the claim name must be a non-empty string')
    if (isScalarType(t)) {
      if (claim !== undefined) {
        const parse = (v: unknown): unknown => t.parseValue(v)
        return new Leaf(claimGetter(model, claim, t.name, parse, bypassRoles))
      }
      let parsed: unknown
      try {
        parsed = t.parseValue(value)
      } catch (err) {
        return fail(path, `not a ${t.name}: ${(err as Error).message}`)
      }
      return new Leaf(() => parsed, { value: parsed }, parsed)
    }
    if (isEnumType(t)) {
      if (claim !== undefined) return fail(path, `${fieldName}: a claim cannot stand for a value of the enum ${t.name}`)
      const v = typeof value === 'string' ? t.getValue(value) : undefined
      if (!v) return fail(path, `not a value of the enum ${t.name}`)
      const internal = v.value as unknown
      return new Leaf(() => internal, { value: internal }, internal)
    }
    return fail(path, 'unsupported input')
  }
  if (!isPlainObject(rule.filter)) fail(rule.path, `expected an object (${whereType.name})`)
  const where = convert(rule.filter, whereType, rule.path, '')
  const roles = [...bypassRoles]
  return {
    where,
    bypassRoles: roles,
    bypass: roles.length > 0 ? (vars) => (bypasses(authOf(vars), roles) ? 1 : 0) : null,
  }
}
