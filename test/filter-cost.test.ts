/**
 * The relation-filter cost (gateway/operations/filter-cost.ts): its figures on a small schema whose
 * relation filter types carry the connector's marker, and its time on a fragment bomb (each
 * fragment spreads the next twice, 22 levels: 4 million copies if expanded), which must be priced
 * without expanding them, in well under 50 ms of CPU.
 */
import t from 'tap'
import { GraphQLInputObjectType, GraphQLInt, GraphQLList, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString, Kind, getOperationAST, parse } from 'graphql'
import type { GraphQLFieldConfigArgumentMap } from 'graphql'
import { filterCost } from '../gateway/operations/filter-cost.js'
import { RELATION_FILTER_EXTENSION } from '../gateway/connectors/types.js'

const StringFilter = new GraphQLInputObjectType({ name: 'StringFilter', fields: { equals: { type: GraphQLString }, in: { type: new GraphQLList(GraphQLString) } } })
const Where: GraphQLInputObjectType = new GraphQLInputObjectType({
  name: 'NodeWhereInput',
  fields: () => ({
    AND: { type: new GraphQLList(new GraphQLNonNull(Where)) },
    name: { type: StringFilter },
    children: { type: ListRelation },
    parent: { type: OneRelation },
  }),
})
const ListRelation = new GraphQLInputObjectType({
  name: 'NodeListRelationFilter',
  extensions: { [RELATION_FILTER_EXTENSION]: 'many' },
  fields: () => ({ some: { type: Where }, every: { type: Where }, none: { type: Where } }),
})
const OneRelation = new GraphQLInputObjectType({
  name: 'NodeRelationFilter',
  extensions: { [RELATION_FILTER_EXTENSION]: 'one' },
  fields: () => ({ is: { type: Where }, isNot: { type: Where } }),
})
const listArgs: GraphQLFieldConfigArgumentMap = { take: { type: GraphQLInt }, where: { type: Where } }
const Node: GraphQLObjectType = new GraphQLObjectType({
  name: 'Node',
  fields: () => ({ id: { type: GraphQLInt }, name: { type: GraphQLString }, children: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(Node))), args: listArgs } }),
})
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { findManyNode: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(Node))), args: listArgs } } }),
})

/** The cost of `query` for `variables` (defaultListSize 10); `variablesOnly` as stored operations price. */
function cost(query: string, variables?: Record<string, unknown>, variablesOnly = false): number {
  const document = parse(query)
  return filterCost(schema, document, getOperationAST(document)!, 10, variables, variablesOnly)
}

t.test('each relation level multiplies like a list', async (t) => {
  t.equal(cost('{ findManyNode(where: { name: { equals: "x" } }) { id } }'), 0, 'scalar filters cost nothing')
  t.equal(cost('{ findManyNode(where: { children: { some: { name: { equals: "x" } } } }) { id } }'), 10 * 10, 'one to-many level: 10 objects × 10')
  t.equal(cost('{ findManyNode(where: { children: { some: { children: { every: {} } } } }) { id } }'), 10 * (10 * (1 + 10)), 'two levels')
  t.equal(cost('{ findManyNode(where: { parent: { is: { children: { none: {} } } } }) { id } }'), 10 * (1 * (1 + 10)), 'a to-one level counts 1 × (1 + inner)')
  t.equal(cost('{ findManyNode(take: 3, where: { children: { some: {} } }) { id } }'), 3 * 10, 'take is the number of objects')
  t.equal(cost('{ findManyNode(where: { AND: [{ children: { some: {} } }, { children: { none: {} } }] }) { id } }'), 10 * 20, 'AND adds up')
  t.equal(cost('{ findManyNode(take: 2) { children(where: { children: { some: {} } }) { id } } }'), 2 * 10 * 10, 'a nested field, per object of the enclosing lists')
  t.equal(cost('{ findManyNode(where: { children: null }) { id } }'), 0, 'null costs nothing')
})

t.test('filters in variables are priced per request', async (t) => {
  const query = 'query ($w: NodeWhereInput, $n: Int) { findManyNode(take: $n, where: $w) { id } }'
  const twoLevels = { children: { some: { children: { some: {} } } } }
  t.equal(cost(query, { w: twoLevels }), 10 * 110)
  t.equal(cost(query, { w: twoLevels, n: 2 }), 2 * 110, 'with its take variable')
  t.equal(cost(query, {}), 0, 'absent')
  t.equal(cost(query, { w: { AND: [twoLevels, twoLevels] } }), 10 * 220, 'a list in a variable')
  t.equal(cost(query, { w: { children: 'not an object', ['__proto__']: { children: { some: {} } } } }), 0, 'wrong shapes and unknown keys cost nothing')
  const inner = 'query ($w: NodeWhereInput) { findManyNode(where: { children: { some: $w } }) { id } }'
  t.equal(cost(inner, { w: { children: { some: {} } } }), 10 * (10 + 10 * 10), 'a variable inside a literal level')
  t.equal(cost(inner, { w: { children: { some: {} } } }, true), 10 * 10 * 10, 'stored operations: only what the variable brings, multiplied by the literal level')
  t.equal(cost('{ findManyNode(where: { children: { some: {} } }) { id } }', undefined, true), 0, 'stored operations: literals are the deployer’s')
})

t.test('a fragment bomb is priced without expanding it', async (t) => {
  const levels = 22
  const fragments = Array.from({ length: levels }, (_, i) => `fragment F${i} on Node { children(take: 1, where: { children: { some: {} } }) { id ...F${i + 1} ...F${i + 1} } }`)
  fragments.push(`fragment F${levels} on Node { id }`)
  const query = `{ findManyNode(take: 1) { ...F0 } } ${fragments.join(' ')}`
  t.ok(query.length < 3000, `${query.length} characters`)
  const document = parse(query)
  t.equal(document.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION).length, levels + 1)
  const before = process.cpuUsage()
  const c = filterCost(schema, document, getOperationAST(document)!, 10, undefined)
  const used = process.cpuUsage(before)
  // c(Fi) = 10 + 2 c(Fi+1), c(F22) = 0: 10 × (2^22 − 1).
  t.equal(c, 10 * (2 ** levels - 1))
  const ms = (used.user + used.system) / 1000
  t.ok(ms < 50, `priced in ${ms.toFixed(1)} ms of CPU`)
})
