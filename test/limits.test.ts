/** Depth and alias limits on parsed documents. */
import t from 'tap'
import { getIntrospectionQuery, parse } from 'graphql'
import { checkDocumentLimits } from '../gateway/http/limits.js'

const nest = (depth: number) => `{ ${'a { '.repeat(depth - 1)}b${' }'.repeat(depth - 1)} }`

t.test('depth counts root fields as 1 and follows fragments', async (t) => {
  t.same(checkDocumentLimits(parse(nest(5)), { maxDepth: 5, maxAliases: 10 }), [])
  const errors = checkDocumentLimits(parse(nest(6)), { maxDepth: 5, maxAliases: 10 })
  t.equal(errors.length, 1)
  t.match(errors[0].message, /has depth 6, more than the maximum of 5/)
  t.equal(errors[0].extensions.code, 'TRB_ERR_GRAPHQL_LIMIT')
  const viaFragment = parse('{ a { ...F } } fragment F on T { a { a { a { b } } } }')
  t.equal(checkDocumentLimits(viaFragment, { maxDepth: 4, maxAliases: 10 }).length, 1)
  t.equal(checkDocumentLimits(viaFragment, { maxDepth: 5, maxAliases: 10 }).length, 0)
})

t.test('introspection has its own depth limit', async (t) => {
  t.same(checkDocumentLimits(parse(getIntrospectionQuery()), { maxDepth: 2, maxAliases: 10 }), [], 'the standard query passes')
  const deep = `{ __schema { types { fields { type ${'{ ofType '.repeat(14)}{ name }${' }'.repeat(14)} } } } }`
  const errors = checkDocumentLimits(parse(deep), { maxDepth: 2, maxAliases: 10 })
  t.equal(errors.length, 1, 'a deeper introspection query does not')
  t.match(errors[0].message, /introspection depth \d+, more than the maximum of 16/)
})

t.test('aliases are counted over the whole document', async (t) => {
  const doc = parse(`{ ${Array.from({ length: 16 }, (_, i) => `x${i}: b`).join(' ')} }`)
  t.equal(checkDocumentLimits(doc, { maxDepth: 5, maxAliases: 15 }).length, 1)
  t.equal(checkDocumentLimits(doc, { maxDepth: 5, maxAliases: 16 }).length, 0)
})

t.test('fragments are measured once: a doubling bomb is priced and measured without being expanded', async (t) => {
  const { buildSchema } = await import('graphql')
  const { buildCostPlan, checkFragmentLimits } = await import('../gateway/http/limits.js')
  const { fragmentBomb } = await import('./helpers/fragment-bomb.js')
  const schema = buildSchema('type T { id: Int children: [T!]! } type Query { ts(take: Int): [T!]! }')
  // A 40-level bomb on the root type whose last fragment selects one list: 2^40 copies of it.
  const rooted = parse(fragmentBomb(40, { on: 'Query', leaf: 'ts { id }' }))
  const plan = buildCostPlan(schema, rooted, rooted.definitions[0] as never, 10)
  t.equal(plan.constant, 2 ** 40 * 10, 'the cost of every copy: 2^40 lists of 10')
  // The same on an object type, with `take` from the variables: priced per request.
  const dynamic = parse(`query Q($n: Int) { ts(take: 1) { ...T0 } } ${fragmentBomb(30, { on: 'T', leaf: 'children { id }' }).replace(/^query.*\n/, '')}`.replace('children { id }', 'children { id } more: children { ...L }') + ' fragment L on Query { ts(take: $n) { id } }')
  const dynamicPlan = buildCostPlan(schema, dynamic, dynamic.definitions[0] as never, 10)
  t.equal(dynamicPlan.constant, undefined, 'depends on $n')
  t.equal(dynamicPlan.cost({ n: 0 }), 1 * (1 + 2 ** 30 * (10 * 1 + 10 * 1)), 'take: $n read per request')
  const depth = checkDocumentLimits(rooted, { maxDepth: 1, maxAliases: 0 })
  t.match(depth[0]?.message, /has depth 2, more than the maximum of 1/, 'depth follows the fragments once')
  t.match(checkFragmentLimits(rooted, { maxFragmentSpreads: 100, maxSelections: 5000 })?.message, /has 2199023255552 selections once its fragments are expanded/)
  t.match(checkFragmentLimits(rooted, { maxFragmentSpreads: 10, maxSelections: 5000 })?.message, /81 fragment spreads, more than the maximum of 10/)
  // A chain of 3,000 fragments, each spreading the next: no recursion over the chain.
  const chain = parse(`{ ts { ...C0 } } ${Array.from({ length: 3000 }, (_, i) => `fragment C${i} on T { ${i < 2999 ? `...C${i + 1}` : 'id'} }`).join(' ')}`)
  t.equal(buildCostPlan(schema, chain, chain.definitions[0] as never, 10).constant, 10)
  t.same(checkDocumentLimits(chain, { maxDepth: 2, maxAliases: 0 }), [])
})
