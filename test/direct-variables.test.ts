/**
 * The per-operation variables coercion of direct plans (gateway/operations/direct-plan.ts,
 * `quickCoercion`): whenever it answers, its result is exactly graphql-js' `getVariableValues`; it
 * declines (undefined) every input graphql-js rejects, and every type it does not handle.
 */
import t from 'tap'
import { buildSchema, getVariableValues, parse, type OperationDefinitionNode } from 'graphql'
import { quickCoercion } from '../gateway/operations/direct-plan.js'

const schema = buildSchema(`
  enum Color { RED GREEN }
  input Box { n: Int }
  type Query { q(i: Int, f: Float, s: String, b: Boolean, id: ID, c: Color, l: [Int], box: Box): Int }
`)
// An enum whose internal values differ from its names, as the database connectors' sort orders do.
const colour = schema.getType('Color') as import('graphql').GraphQLEnumType
colour.getValue('RED')!.value = 'red-internal'

function operation(source: string): OperationDefinitionNode {
  return parse(source).definitions[0] as OperationDefinitionNode
}

const VALUES: unknown[] = [undefined, null, 0, 1, -1, 1.5, 2147483647, 2147483648, -2147483648, -2147483649, Number.NaN, '', 'x', '1', 'RED', 'GREEN', 'BLUE', true, false, [], [1], {}, { n: 1 }]

t.test('agrees with getVariableValues on every value of every scalar and enum, nullable and not', async (t) => {
  let answered = 0
  let declined = 0
  for (const type of ['Int', 'Float', 'String', 'Boolean', 'ID', 'Color']) {
    for (const suffix of ['', '!']) {
      for (const def of ['', type === 'Int' ? ' = 7' : type === 'Color' ? ' = GREEN' : type === 'String' ? ' = "d"' : '']) {
        if (suffix === '!' && def) continue
        const op = operation(`query($v: ${type}${suffix}${def}, $w: Int) { q(i: $w) }`)
        const quick = quickCoercion(schema, op.variableDefinitions ?? [])
        t.ok(quick, `${type}${suffix}${def} compiles`)
        for (const v of VALUES) {
          const variables: Record<string, unknown> = v === undefined ? {} : { v }
          const expected = getVariableValues(schema, op.variableDefinitions ?? [], variables)
          const got = quick!(variables)
          if (got === undefined) {
            declined++
            continue
          }
          answered++
          t.notOk(expected.errors, `${type}${suffix}${def} ← ${JSON.stringify(v)}: graphql-js accepts what quickCoercion accepted`)
          t.same(got, expected.coerced, `${type}${suffix}${def} ← ${JSON.stringify(v)}`)
          // Same keys, not only same values: a missing nullable variable stays missing.
          t.same(Object.keys(got).sort(), Object.keys(expected.coerced ?? {}).sort())
        }
      }
    }
  }
  t.ok(answered > 50 && declined > 50, `answered ${answered}, declined ${declined}`)
})

t.test('the enum gives its internal value; lists and input objects are left to graphql-js', async (t) => {
  const op = operation('query($c: Color) { q(c: $c) }')
  t.same(quickCoercion(schema, op.variableDefinitions ?? [])!({ c: 'RED' }), { c: 'red-internal' })
  t.equal(quickCoercion(schema, operation('query($l: [Int]) { q(l: $l) }').variableDefinitions ?? []), undefined)
  t.equal(quickCoercion(schema, operation('query($b: Box) { q(box: $b) }').variableDefinitions ?? []), undefined)
  t.equal(quickCoercion(schema, operation('query($x: Nope) { q }').variableDefinitions ?? []), undefined)
})

t.test('an own property only: a variable named like an Object.prototype member is not read from the prototype', async (t) => {
  const op = operation('query($toString: String) { q(s: $toString) }')
  t.same(quickCoercion(schema, op.variableDefinitions ?? [])!({}), {})
})
