/**
 * Plan caching. A plan is compiled once per field node of a parsed document and reused for every
 * request that executes that document (graphql-jit compiled queries, mercurius' query cache, stored
 * operations). The key is the first node of `info.fieldNodes` (stable under graphql-js `execute`,
 * whose `fieldNodes` arrays are rebuilt on every execution, and under graphql-jit). Variables are
 * bound at run time; only when a variable's *shape* changes the SQL (a whole `where: $where`
 * object, a list's length, an enum value, null) is a plan compiled per shape and cached by its
 * fingerprint.
 */
import { typeFromAST, type FieldNode, type GraphQLInputType, type GraphQLResolveInfo, type GraphQLSchema } from 'graphql'
import { collectVariables, shapeOf } from './args.js'

interface VarRef {
  name: string
  type: GraphQLInputType
}

interface Group<P> {
  nodes: readonly FieldNode[]
  schema: GraphQLSchema
  vars: VarRef[]
  single?: P
  byShape: Map<string, P>
}

const MAX_SHAPES = 100

/** The subset of GraphQLResolveInfo the compiler reads (graphql-js and graphql-jit provide it). */
export type PlanInfo = Pick<GraphQLResolveInfo, 'fieldNodes' | 'schema' | 'fragments' | 'operation' | 'variableValues'>

/** Caches plans of type `P` for one root field. */
export class PlanCache<P> {
  private readonly groups = new WeakMap<FieldNode, Group<P>>()
  /** Number of compilations, for tests. */
  compiled = 0

  /** Returns the plan for this request, compiling it if needed with `compile`. */
  get(info: PlanInfo, compile: () => P): P {
    const nodes = info.fieldNodes
    const first = nodes[0]!
    let g = this.groups.get(first)
    if (!g || g.schema !== info.schema || !sameNodes(g.nodes, nodes)) {
      g = this.newGroup(info)
      this.groups.set(first, g)
    }
    if (g.vars.length === 0) {
      if (g.single === undefined) {
        this.compiled++
        g.single = compile()
      }
      return g.single
    }
    let key = ''
    const values = info.variableValues
    for (const v of g.vars) key += `${shapeOf(v.type, values[v.name])}|`
    let p = g.byShape.get(key)
    if (p === undefined) {
      this.compiled++
      p = compile()
      if (g.byShape.size >= MAX_SHAPES) g.byShape.clear()
      g.byShape.set(key, p)
    }
    return p
  }

  private newGroup(info: PlanInfo): Group<P> {
    const names = collectVariables(info.fieldNodes, info.fragments)
    const defs = info.operation.variableDefinitions ?? []
    const vars: VarRef[] = []
    for (const name of names) {
      const def = defs.find((d) => d.variable.name.value === name)
      const type = def ? (typeFromAST(info.schema, def.type) as GraphQLInputType | undefined) : undefined
      if (type) vars.push({ name, type })
    }
    return { nodes: [...info.fieldNodes], schema: info.schema, vars, byShape: new Map() }
  }
}

function sameNodes(a: readonly FieldNode[], b: readonly FieldNode[]): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
