/**
 * The authorization directives of operations, WunderGraph style (README "Authentication"):
 *
 * ```graphql
 * query MyTodos($userId: String! @fromClaim(name: "sub")) @requireAuthentication @rbac(requireMatchAny: [admin, editor]) { … }
 * ```
 *
 * - `@requireAuthentication` (operation): a valid token is needed (401 `TRB_ERR_AUTH_REQUIRED`).
 * - `@rbac(requireMatchAny: [...])` / `@rbac(requireMatchAll: [...])` (operation): the token's roles
 *   (`auth.jwt.rolesClaim`) must hold one / all of them (403 `TRB_ERR_AUTH_FORBIDDEN`). Roles may be
 *   written as enum values or strings. Implies `@requireAuthentication`.
 * - `@fromClaim(name: "sub")` (variable): the variable's value is the claim's (a key, else a dotted
 *   path); the client may not send it. `name` may also be one of WunderGraph's enum values (`USERID`
 *   = `sub`, `EMAIL`, `NAME`…, lower-cased). Implies `@requireAuthentication`.
 *
 * The directives are not part of the schema: {@link extractAuthDirectives} removes them before the
 * document is validated, and returns the rules they declare.
 */
import { GraphQLError, Kind, visit, type ArgumentNode, type DirectiveNode, type DocumentNode, type OperationDefinitionNode, type ValueNode } from 'graphql'
import { claimValue, type AuthInfo } from './jwt.js'
import { AuthForbiddenError, AuthRequiredError } from '../errors.js'

/** What an operation's directives require. */
export interface OperationAuthRules {
  /** A valid token is needed (set by any of the three directives). */
  readonly requireAuthentication: boolean
  /** `@rbac(requireMatchAny:)`: at least one of these roles; null when not given. */
  readonly requireMatchAny: readonly string[] | null
  /** `@rbac(requireMatchAll:)`: every one of these roles; null when not given. */
  readonly requireMatchAll: readonly string[] | null
  /** `@fromClaim`: variable name → claim name (or dotted path). */
  readonly fromClaim: Readonly<Record<string, string>>
}

/** The directive names this module handles. */
export const AUTH_DIRECTIVES: ReadonlySet<string> = new Set(['requireAuthentication', 'rbac', 'fromClaim'])

const CLAIM_ENUMS: Readonly<Record<string, string>> = { USERID: 'sub', SUB: 'sub', ISSUER: 'iss', EMAIL: 'email', EMAIL_VERIFIED: 'email_verified', NAME: 'name', NICKNAME: 'nickname', LOCATION: 'location', PROVIDER: 'provider' }

function stringsOf(value: ValueNode): string[] | null {
  const one = (v: ValueNode) => (v.kind === Kind.STRING || v.kind === Kind.ENUM ? v.value : null)
  if (value.kind === Kind.LIST) {
    const out = value.values.map(one)
    return out.every((s): s is string => s !== null) && out.length > 0 ? out : null
  }
  const single = one(value)
  return single === null ? null : [single]
}

function hasAuthDirective(node: { directives?: readonly DirectiveNode[] }): boolean {
  return !!node.directives?.some((d) => AUTH_DIRECTIVES.has(d.name.value))
}

/**
 * Removes the auth directives from a document and reads the rules of its operations.
 * @returns the document without them (the same object when it has none), the rules of each
 *   operation by name (`''` for an anonymous one; operations without any directive are absent), and
 *   the errors of misused directives (a bad argument, a directive in the wrong place), each with its
 *   location, in the shape of validation errors.
 */
export function extractAuthDirectives(document: DocumentNode): { document: DocumentNode; rules: Map<string, OperationAuthRules>; errors: GraphQLError[] } {
  const rules = new Map<string, OperationAuthRules>()
  const errors: GraphQLError[] = []
  let found = false
  for (const def of document.definitions) {
    if (def.kind === Kind.OPERATION_DEFINITION) {
      if (hasAuthDirective(def) || def.variableDefinitions?.some(hasAuthDirective)) found = true
    } else if ('directives' in def && def.directives?.some((d) => AUTH_DIRECTIVES.has(d.name.value))) found = true
  }
  // Directives on fields and fragments are not ours to strip: validation reports them as unknown.
  if (!found) return { document, rules, errors }

  for (const def of document.definitions) {
    if (def.kind !== Kind.OPERATION_DEFINITION) continue
    const r = readOperation(def, errors)
    if (r) rules.set(def.name?.value ?? '', r)
  }
  const stripped = visit(document, {
    OperationDefinition: (node) => (hasAuthDirective(node) ? { ...node, directives: node.directives!.filter((d) => !AUTH_DIRECTIVES.has(d.name.value)) } : undefined),
    VariableDefinition: (node) => (hasAuthDirective(node) ? { ...node, directives: node.directives!.filter((d) => !AUTH_DIRECTIVES.has(d.name.value)) } : undefined),
  })
  return { document: stripped, rules, errors }
}

function readOperation(op: OperationDefinitionNode, errors: GraphQLError[]): OperationAuthRules | null {
  let requireAuthentication = false
  let requireMatchAny: string[] | null = null
  let requireMatchAll: string[] | null = null
  const fromClaim: Record<string, string> = {}
  const arg = (d: DirectiveNode, name: string): ArgumentNode | undefined => d.arguments?.find((a) => a.name.value === name)
  const seen = new Set<string>()
  for (const d of op.directives ?? []) {
    const name = d.name.value
    if (!AUTH_DIRECTIVES.has(name)) continue
    if (seen.has(name)) errors.push(new GraphQLError(`The directive "@${name}" can only be used once at this location.`, { nodes: d }))
    seen.add(name)
    if (name === 'fromClaim') {
      errors.push(new GraphQLError('@fromClaim belongs on a variable definition: ($id: String! @fromClaim(name: "sub"))', { nodes: d }))
    } else if (name === 'requireAuthentication') {
      if (d.arguments?.length) errors.push(new GraphQLError('@requireAuthentication takes no arguments', { nodes: d }))
      requireAuthentication = true
    } else {
      requireAuthentication = true
      for (const a of d.arguments ?? []) {
        const roles = stringsOf(a.value)
        if (a.name.value !== 'requireMatchAny' && a.name.value !== 'requireMatchAll') {
          errors.push(new GraphQLError(`@rbac has no argument "${a.name.value}" (requireMatchAny, requireMatchAll)`, { nodes: a }))
        } else if (!roles) {
          errors.push(new GraphQLError(`@rbac(${a.name.value}:) must be a non-empty list of roles, e.g. [admin, editor]`, { nodes: a }))
        } else if (a.name.value === 'requireMatchAny') requireMatchAny = roles
        else requireMatchAll = roles
      }
      if (!d.arguments?.length) errors.push(new GraphQLError('@rbac needs requireMatchAny or requireMatchAll', { nodes: d }))
    }
  }
  for (const v of op.variableDefinitions ?? []) {
    for (const d of v.directives ?? []) {
      if (!AUTH_DIRECTIVES.has(d.name.value)) continue
      if (d.name.value !== 'fromClaim') {
        errors.push(new GraphQLError(`@${d.name.value} belongs on the operation, not on a variable`, { nodes: d }))
        continue
      }
      const name = arg(d, 'name')
      const value = name?.value
      const claim = value?.kind === Kind.STRING ? value.value : value?.kind === Kind.ENUM ? (CLAIM_ENUMS[value.value] ?? value.value.toLowerCase()) : undefined
      if (!claim || (d.arguments?.length ?? 0) > 1) {
        errors.push(new GraphQLError('@fromClaim needs exactly one argument, name: "<claim>"', { nodes: d }))
        continue
      }
      if (v.defaultValue) errors.push(new GraphQLError(`$${v.variable.name.value} comes from a claim and cannot have a default value`, { nodes: v }))
      fromClaim[v.variable.name.value] = claim
      requireAuthentication = true
    }
  }
  if (!requireAuthentication) return null
  return Object.freeze({ requireAuthentication, requireMatchAny, requireMatchAll, fromClaim: Object.freeze(fromClaim) })
}

/**
 * Checks an identity against an operation's rules.
 * @param what the operation, for messages (`operation MyTodos`).
 * @throws AuthRequiredError (401) when a token is needed and `auth` is null; AuthForbiddenError
 *   (403) when the roles do not match `@rbac`.
 */
export function authorize(rules: OperationAuthRules | null | undefined, auth: AuthInfo | null, what: string): void {
  if (!rules?.requireAuthentication) return
  if (!auth) throw new AuthRequiredError(`${what} needs a token`)
  if (rules.requireMatchAny && !rules.requireMatchAny.some((r) => auth.roles.includes(r))) {
    throw new AuthForbiddenError(`${what} needs one of the roles ${rules.requireMatchAny.join(', ')}`)
  }
  if (rules.requireMatchAll && !rules.requireMatchAll.every((r) => auth.roles.includes(r))) {
    throw new AuthForbiddenError(`${what} needs the roles ${rules.requireMatchAll.join(', ')}`)
  }
}

/**
 * The `@fromClaim` variables' values, read from a verified identity.
 * @throws AuthForbiddenError (403) when the token lacks a claim a variable reads.
 */
export function claimVariables(rules: OperationAuthRules, auth: AuthInfo): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [variable, claim] of Object.entries(rules.fromClaim)) {
    const value = claimValue(auth.claims, claim)
    if (value === undefined || value === null) throw new AuthForbiddenError(`the token has no "${claim}" claim, which $${variable} needs`)
    out[variable] = value
  }
  return out
}

/**
 * One sentence on what an operation's rules require, for generated documentation (OpenAPI
 * descriptions, typed-client docstrings), e.g. `Needs a token with one of the roles admin, editor;
 * $userId comes from the token's "sub" claim.`
 * @returns undefined when `rules` is null.
 */
export function describeAuthRules(rules: OperationAuthRules | null | undefined): string | undefined {
  if (!rules) return undefined
  const parts = ['Needs a token']
  if (rules.requireMatchAny) parts[0] += ` with one of the roles ${rules.requireMatchAny.join(', ')}`
  if (rules.requireMatchAll) parts[0] += `${rules.requireMatchAny ? ' and' : ' with'} all the roles ${rules.requireMatchAll.join(', ')}`
  for (const [variable, claim] of Object.entries(rules.fromClaim)) parts.push(`$${variable} comes from the token's "${claim}" claim`)
  return `${parts.join('; ')}.`
}
