/**
 * One transaction per database per request (README "Database connector", write semantics).
 *
 * Every mutation root field of one request that targets the same database runs in ONE transaction:
 * all of them are written or none. graphql-js and graphql-jit run mutation root fields serially, and
 * a field's result is final once its resolver returns, before the next field starts. A field cannot
 * wait for the fields after it, so the FIRST field of a database in the operation runs the whole
 * group: it opens the transaction, runs that database's fields in document order (each with its
 * own resolve info), commits, and keeps each field's outcome; the later fields' resolvers return
 * their kept outcome. When one field fails, the transaction is rolled back; that field reports its
 * own error, the fields before it `TRB_ERR_DB_ROLLED_BACK` (not written) and the fields after it the
 * same code (not run). So the response says exactly which field failed and nothing claims a write
 * that was rolled back.
 *
 * Fields on other sources (another database, REST, GraphQL) run in document order between them, each
 * with its own result. The database's group is written at the position of its first field: a
 * database field placed after a field of another source is written before that other field runs.
 *
 * The outcomes are kept per execution, keyed by the request's coerced variable values object, which
 * graphql-js and graphql-jit create once per execution (no context object is needed).
 */
import {
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  Kind,
  getArgumentValues,
  getDirectiveValues,
  type FieldNode,
  type GraphQLField,
  type GraphQLFieldResolver,
  type GraphQLObjectType,
  type GraphQLResolveInfo,
  type SelectionSetNode,
} from 'graphql'
import { DbRolledBackError } from '../../errors.js'
import { cancelWatchOf } from './compiler/db.js'
import { EXT } from './compiler/read.js'
import type { Runtime, WriteBody } from './resolvers.js'

/** What a mutation field carries in `extensions.tributary.write`: its database and its work. */
export interface WriteField {
  /** The database (one runtime per source): fields with the same runtime share a transaction. */
  rt: Runtime
  body: WriteBody
  /** Converts a driver error the body threw to a Tributary error (constraint names → fields). */
  mapError: (err: unknown) => unknown
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

/** Per execution (its variable values object), per database: each field's outcome by response key. */
const executions = new WeakMap<object, Map<Runtime, Map<string, Promise<Outcome>>>>()

function writeOf(field: GraphQLField<unknown, unknown> | undefined): WriteField | undefined {
  return (field?.extensions?.[EXT] as { write?: WriteField } | undefined)?.write
}

/** The operation's root fields by response key, in document order (`@skip`/`@include` and fragments applied). */
function rootFields(info: GraphQLResolveInfo): Map<string, FieldNode[]> {
  const out = new Map<string, FieldNode[]>()
  const seen = new Set<string>()
  const included = (node: FieldNode | { directives?: FieldNode['directives'] }): boolean => {
    const n = node as FieldNode
    if (getDirectiveValues(GraphQLSkipDirective, n, info.variableValues)?.['if'] === true) return false
    return getDirectiveValues(GraphQLIncludeDirective, n, info.variableValues)?.['if'] !== false
  }
  const visit = (set: SelectionSetNode): void => {
    for (const sel of set.selections) {
      if (!included(sel as FieldNode)) continue
      if (sel.kind === Kind.FIELD) {
        const key = sel.alias?.value ?? sel.name.value
        const list = out.get(key)
        if (list) list.push(sel)
        else out.set(key, [sel])
      } else if (sel.kind === Kind.INLINE_FRAGMENT) visit(sel.selectionSet)
      else if (!seen.has(sel.name.value)) {
        seen.add(sel.name.value)
        const frag = info.fragments[sel.name.value]
        if (frag) visit(frag.selectionSet)
      }
    }
  }
  visit(info.operation.selectionSet)
  return out
}

/** The resolve info of another root field of the same operation. */
function infoFor(info: GraphQLResolveInfo, key: string, nodes: FieldNode[], def: GraphQLField<unknown, unknown>): GraphQLResolveInfo {
  const parentType = info.parentType as GraphQLObjectType
  return {
    fieldName: def.name,
    fieldNodes: nodes,
    returnType: def.type,
    parentType,
    path: { prev: undefined, key, typename: parentType.name },
    schema: info.schema,
    fragments: info.fragments,
    rootValue: info.rootValue,
    operation: info.operation,
    variableValues: info.variableValues,
  }
}

function fieldLabel(key: string, def: GraphQLField<unknown, unknown>): string {
  return key === def.name ? `\`${key}\`` : `\`${key}\` (${def.name})`
}

/**
 * Runs the group of `field`'s database: every mutation root field of the operation on that database,
 * in document order, in one transaction. Returns each field's outcome by response key.
 */
function runGroup(field: WriteField, context: unknown, info: GraphQLResolveInfo, ownKey: string, ownArgs: Record<string, unknown>): Map<string, Promise<Outcome>> {
  const parentFields = (info.parentType as GraphQLObjectType).getFields()
  const members: { key: string; def: GraphQLField<unknown, unknown>; write: WriteField; info: GraphQLResolveInfo; args: Record<string, unknown> }[] = []
  for (const [key, nodes] of rootFields(info)) {
    const def = parentFields[nodes[0]!.name.value]
    const write = writeOf(def)
    if (!def || !write || write.rt !== field.rt) continue
    if (key === ownKey) members.push({ key, def, write, info, args: ownArgs })
    else members.push({ key, def, write, info: infoFor(info, key, nodes, def), args: getArgumentValues(def, nodes[0]!, info.variableValues) })
  }
  // The resolver's own field is always part of its group (even if the walk above missed it).
  if (!members.some((m) => m.key === ownKey)) {
    const def = parentFields[info.fieldName]!
    members.unshift({ key: ownKey, def, write: field, info, args: ownArgs })
  }
  const done = (async (): Promise<Map<string, Outcome>> => {
    const outcomes = new Map<string, Outcome>()
    let failed: { index: number; error: unknown } | undefined
    try {
      await field.rt.db().transaction(async (conn) => {
        for (let i = 0; i < members.length; i++) {
          const m = members[i]!
          try {
            outcomes.set(m.key, { ok: true, value: await m.write.body(conn, m.info, m.args, context) })
          } catch (err) {
            failed = { index: i, error: m.write.mapError(err) }
            throw failed.error
          }
        }
      }, cancelWatchOf(context))
    } catch (err) {
      // A failure outside the bodies (BEGIN, COMMIT, a cancellation between statements) fails every field.
      failed ??= { index: -1, error: field.mapError(err) }
    }
    if (!failed) return outcomes
    const cause = failed.index >= 0 ? `${fieldLabel(members[failed.index]!.key, members[failed.index]!.def)} failed` : 'the transaction failed'
    members.forEach((m, i) => {
      if (i === failed!.index || failed!.index < 0) outcomes.set(m.key, { ok: false, error: failed!.error })
      else if (i < failed!.index) outcomes.set(m.key, { ok: false, error: new DbRolledBackError(`${fieldLabel(m.key, m.def)} was rolled back because ${cause} (the request's fields on one database are written all or nothing)`) })
      else outcomes.set(m.key, { ok: false, error: new DbRolledBackError(`${fieldLabel(m.key, m.def)} was not run because ${cause} (the request's fields on one database are written all or nothing)`) })
    })
    return outcomes
  })()
  const byKey = new Map<string, Promise<Outcome>>()
  for (const m of members) byKey.set(m.key, done.then((o) => o.get(m.key) ?? { ok: false, error: new DbRolledBackError(`${fieldLabel(m.key, m.def)} was not run`) }))
  return byKey
}

/**
 * The resolver of a mutation root field on a database: joins (or opens) the request's transaction
 * on that database (see the module comment) and returns the field's outcome.
 * @throws the field's own error, or `TRB_ERR_DB_ROLLED_BACK` when another field of its group failed
 */
export function writeResolver(field: WriteField): GraphQLFieldResolver<unknown, unknown> {
  return async (_source, args, context, info) => {
    const key = typeof info.path.key === 'string' ? info.path.key : info.fieldName
    const vars = info.variableValues as object
    let byDb = executions.get(vars)
    if (!byDb) {
      byDb = new Map()
      executions.set(vars, byDb)
    }
    let group = byDb.get(field.rt)
    if (!group || !group.has(key)) {
      group = runGroup(field, context, info, key, args as Record<string, unknown>)
      byDb.set(field.rt, group)
    }
    const outcome = await group.get(key)!
    if (outcome.ok) return outcome.value
    throw outcome.error
  }
}
