/**
 * Stored operations whose variable is a where-input of a table with relations (Chinook's Employee):
 * the variables JSON Schema is expanded MAX_EXPANDED_INPUT_DEPTH input objects deep, not through every
 * relation path (4.1 MB before), and a value below that depth is still checked, by GraphQL's variable
 * coercion: a 400 with a code, never a 500. Real HTTP, the shipped Chinook SQLite database.
 */
import t from 'tap'
import { database } from '../gateway/config/index.js'
import { MAX_EXPANDED_INPUT_DEPTH } from '../gateway/operations/json-schema.js'
import { getOperation, startGateway } from './helpers/graphql-upstream.js'
import { chinookSqlite } from './helpers/chinook.js'

t.test('a where-input variable: a small schema, deep filters run, bad deep values are a coded 400', async (t) => {
  const db = await chinookSqlite()
  t.teardown(db.cleanup)
  const { base, gateway } = await startGateway(t, {
    datasources: [database({ url: db.url, namespace: 'chinook' })],
    operations: {
      Employees: 'query Employees($where: chinook_EmployeeWhereInput) { chinook_findManyEmployee(where: $where, orderBy: [{ employeeId: asc }]) { employeeId lastName } }\n',
    },
  })
  const op = gateway.operations.get('Employees')!
  const size = JSON.stringify(op.variablesSchema).length
  t.ok(size < 100_000, `the variables schema is ${size} characters (4.1 MB expanded through every relation)`)
  t.equal(MAX_EXPANDED_INPUT_DEPTH, 3)
  const where = op.variablesSchema.properties!['where']!
  t.ok(JSON.stringify(where).includes('"additionalProperties":false'), 'the first levels stay closed')

  // Employees supporting a customer in Brazil: a filter three input objects deep (where → relation filter → where → string filter).
  const deep = { customers: { some: { country: { equals: 'Brazil' } } } }
  const ok = await getOperation(base, `Employees?where=${encodeURIComponent(JSON.stringify(deep))}`)
  t.equal(ok.status, 200)
  t.same((ok.body as { chinook_findManyEmployee: { employeeId: number }[] }).chinook_findManyEmployee.map((e) => e.employeeId), [3, 4, 5], 'the support representatives of Brazilian customers')

  // An unknown key below the expanded depth: refused by GraphQL's coercion, with a code.
  const bad = { customers: { some: { country: { notAnOperator: 'Brazil' } } } }
  const refused = await getOperation(base, `Employees?where=${encodeURIComponent(JSON.stringify(bad))}`)
  t.equal(refused.status, 400)
  const error = refused.body.errors![0]!
  t.equal(error.extensions.code, 'TRB_ERR_GRAPHQL_VALIDATION')
  t.match(error.message, /notAnOperator/)

  // An unknown key at the first level: refused by the JSON Schema (ajv) as before.
  const top = await getOperation(base, `Employees?where=${encodeURIComponent(JSON.stringify({ nope: 1 }))}`)
  t.equal(top.status, 400)
  t.equal(top.body.errors![0]!.extensions.code, 'TRB_ERR_OPERATION_VARIABLES')
})
