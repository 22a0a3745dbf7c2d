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
