/**
 * Stored operations whose variable is a where-input of a table with relations (Chinook's Employee):
 * every input object is one `$defs` entry of the variables JSON Schema, referred to by `$ref`, so the
 * schema covers every relation path and the recursive `AND`/`OR`/`NOT` at a size linear in the number
 * of input types (expanded inline through every relation path it was 4.1 MB). ajv checks a value at
 * any depth: a bad key deep in a filter is a 400 `TRB_ERR_OPERATION_VARIABLES` naming its path, never
 * a 500. The same `$defs` become the OpenAPI document's components and the typed client's input types.
 * Real HTTP, the shipped Chinook SQLite database.
 */
import t from 'tap'
import { database } from '../gateway/config/index.js'
import { buildOpenApiDocument } from '../gateway/codegen/openapi.js'
import { renderClient } from '../gateway/codegen/client.js'
import { getOperation, startGateway } from './helpers/graphql-upstream.js'
import { chinookSqlite } from './helpers/chinook.js'
import { MAX_INPUT_OBJECTS, type JsonSchema } from '../gateway/operations/json-schema.js'
import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { clientProject, root } from './helpers/client-project.js'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { join } from 'node:path'

/** A gateway over a copy of the Chinook SQLite database (namespace `chinook`) serving `operations`. */
async function chinookGateway(t: Parameters<typeof startGateway>[0], operations: Record<string, string>) {
  const db = await chinookSqlite()
  t.teardown(db.cleanup)
  return startGateway(t, { datasources: [database({ url: db.url, namespace: 'chinook' })], operations })
}

t.test('a where-input variable: every input object once in $defs, checked at any depth', async (t) => {
  const { base, gateway } = await chinookGateway(t, {
    Employees: 'query Employees($where: chinook_EmployeeWhereInput) { chinook_findManyEmployee(where: $where, orderBy: [{ employeeId: asc }]) { employeeId lastName } }\n',
  })
  const op = gateway.operations.get('Employees')!
  const schema = op.variablesSchema
  const size = JSON.stringify(schema).length
  t.ok(size < 50_000, `the variables schema is ${size} characters (4.1 MB expanded through every relation)`)
  t.same(schema.properties!['where'], { $ref: '#/$defs/chinook_EmployeeWhereInput', type: ['object', 'null'] }, 'a nullable input object: its reference, object or null')
  const defs = schema.$defs as Record<string, JsonSchema>
  for (const name of ['chinook_EmployeeWhereInput', 'chinook_CustomerWhereInput', 'chinook_InvoiceWhereInput', 'chinook_TrackWhereInput']) {
    t.ok(defs[name], `${name} is defined (reached through the relation filters)`)
  }
  for (const [name, def] of Object.entries(defs)) t.ok(def.additionalProperties === false && def.type === undefined, `${name} is closed, and its references say whether it may be null`)
  const refs = [...JSON.stringify(schema).matchAll(/"\$ref":"#\/\$defs\/([^"]+)"/g)].map((m) => m[1]!)
  for (const name of new Set(refs)) t.ok(defs[name], `#/$defs/${name} resolves`)
  t.match(JSON.stringify(defs['chinook_EmployeeWhereInput']!.properties!['AND']), /"\$ref":"#\/\$defs\/chinook_EmployeeWhereInput"/, 'AND refers back to its own type')

  // Employees supporting a customer in Brazil: a filter three input objects deep (where → relation filter → where → string filter).
  const deep = { customers: { some: { country: { equals: 'Brazil' } } } }
  const ok = await getOperation(base, `Employees?where=${encodeURIComponent(JSON.stringify(deep))}`)
  t.equal(ok.status, 200)
  t.same((ok.body as { chinook_findManyEmployee: { employeeId: number }[] }).chinook_findManyEmployee.map((e) => e.employeeId), [3, 4, 5], 'the support representatives of Brazilian customers')

  // Five input objects deep, through the recursive AND and two relations: still validated, and run.
  const deeper = { AND: [{ customers: { some: { invoices: { some: { total: { gt: 20 } } } } } }] }
  const ran = await getOperation(base, `Employees?where=${encodeURIComponent(JSON.stringify(deeper))}`)
  t.equal(ran.status, 200, JSON.stringify(ran.body))
  t.same((ran.body as { chinook_findManyEmployee: { employeeId: number }[] }).chinook_findManyEmployee.map((e) => e.employeeId), [3, 4, 5], 'support representatives with an invoice over 20')

  // An unknown key deep in a filter: refused by the JSON Schema (ajv), naming its path.
  const bad = { AND: [{ customers: { some: { country: { notAnOperator: 'Brazil' } } } }] }
  const refused = await getOperation(base, `Employees?where=${encodeURIComponent(JSON.stringify(bad))}`)
  t.equal(refused.status, 400)
  const error = refused.body.errors![0]!
  t.equal(error.extensions.code, 'TRB_ERR_OPERATION_VARIABLES')
  t.equal(error.extensions['instancePath'], '/where/AND/0/customers/some/country/notAnOperator')
  t.match(error.message, /where\.AND\.0\.customers\.some\.country/)

  // A wrong type five levels down, and an unknown key at the first level: each named.
  const wrongType = await getOperation(base, `Employees?where=${encodeURIComponent(JSON.stringify({ customers: { some: { invoices: { every: { total: { gt: 'lots' } } } } }, nope: 1 }))}`)
  t.equal(wrongType.status, 400)
  t.same(wrongType.body.errors!.map((e) => e.extensions['instancePath']).sort(), ['/where/customers/some/invoices/every/total/gt', '/where/nope'])
})

t.test('the $defs become OpenAPI components and the typed client\'s input types', async (t) => {
  const { gateway, base } = await chinookGateway(t, {
    Employees: 'query Employees($where: chinook_EmployeeWhereInput) { chinook_findManyEmployee(where: $where, orderBy: [{ employeeId: asc }]) { employeeId } }\n',
    Tracks: 'query Tracks($where: chinook_TrackWhereInput, $take: Int) { chinook_findManyTrack(where: $where, take: $take) { trackId } }\n',
  })
  const doc = buildOpenApiDocument(gateway) as { paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: JsonSchema }> } }>>; components: { schemas: Record<string, JsonSchema> } }
  const text = JSON.stringify(doc)
  t.notOk(text.includes('"$defs"'), 'no $defs inside the document')
  const refs = new Set([...text.matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!))
  for (const ref of refs) t.ok(ref.startsWith('#/components/schemas/') && doc.components.schemas[ref.slice('#/components/schemas/'.length)], `${ref} resolves in the document`)
  t.same(doc.paths['/operations/Employees']!['post']!.requestBody.content['application/json']!.schema.properties!['where'], { $ref: '#/components/schemas/chinook_EmployeeWhereInput', type: ['object', 'null'] })
  t.ok(doc.components.schemas['chinook_TrackWhereInput'] && doc.components.schemas['chinook_EmployeeWhereInput'], 'both operations\' input objects are components, once each')

  const client = renderClient(gateway)
  t.equal(client.match(/^export type chinook_EmployeeWhereInput = \{/gm)?.length, 1, 'one type per input object, shared by the operations')
  t.match(client, /export type EmployeesVariables = \{\n {2}where\?: chinook_EmployeeWhereInput \| null\n\}/)
  t.match(client, /AND\?: chinook_EmployeeWhereInput\[\] \| null/, 'recursive input types refer to themselves')

  // The types are real: a deep filter type-checks and runs; a wrong field five levels down does not compile.
  const project = clientProject(t, client)
  const program = `
import { createClient, type EmployeesVariables } from './client.js'
const where: EmployeesVariables['where'] = { AND: [{ customers: { some: { invoices: { some: { total: { gt: '20' } } } } } }] }
const client = createClient({ baseUrl: process.argv[2] })
const data = await client.Employees({ where })
console.log(JSON.stringify(data.chinook_findManyEmployee.map((e) => e.employeeId)))
// @ts-expect-error total is a Decimal filter: no such operator
const wrong: EmployeesVariables = { where: { customers: { some: { invoices: { some: { total: { nope: 1 } } } } } } }
void wrong
`
  const { main: check, strict } = project.typecheckWithStrict(program)
  t.equal(check.status, 0, `tsc --noEmit passes:\n${check.output}`)
  t.match(strict.output, /'nope' does not exist in type/, 'a wrong deep field is a type error')
  // Asynchronous: the gateway answering the program runs in this process.
  const run = await promisify(execFile)(process.execPath, [join(root, 'node_modules/tsx/dist/cli.mjs'), join(project.dir, 'main.ts'), base], { cwd: project.dir, encoding: 'utf8' })
  t.same(JSON.parse(run.stdout.trim()), [3, 4, 5], 'the typed client sends the deep filter, and the gateway runs it')
})

t.test('a where-input that reaches 300 tables: the nearest MAX_INPUT_OBJECTS input objects are expanded, the rest left to GraphQL', async (t) => {
  // A chain of foreign keys t0300 → … → t0001 (and every third table → t0001): t0001's where-input
  // reaches over 600 input objects, a chain of references ajv's compiler cannot follow (stack overflow).
  const dir = mkdtempSync(join(tmpdir(), 'tributary-chain-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'chain.sqlite')
  const db = new Database(file)
  for (let i = 1; i <= 300; i++) {
    const name = (n: number) => `t${String(n).padStart(4, '0')}`
    const fks = i > 1 ? `, prev integer references ${name(i - 1)}(id)${i % 3 === 0 ? ', root integer references t0001(id)' : ''}` : ''
    db.exec(`create table ${name(i)} (id integer primary key, code text not null${fks})`)
  }
  db.exec("insert into t0001 (id, code) values (1, 'a'); insert into t0002 (id, code, prev) values (1, 'b', 1)")
  db.close()
  const { base, gateway } = await startGateway(t, {
    datasources: [database({ url: `sqlite:${file}`, namespace: 'db' })],
    operations: {
      Chain: 'query Chain($where: db_T0001WhereInput) { db_findManyT0001(where: $where) { id } }\n',
      // Its own variable: T0002WhereInput is expanded here, while Chain (named first) leaves it open.
      Near: 'query Near($where: db_T0002WhereInput) { db_findManyT0002(where: $where) { id } }\n',
    },
  })
  const defs = gateway.operations.get('Chain')!.variablesSchema.$defs as Record<string, JsonSchema>
  const expanded = Object.values(defs).filter((d) => d.properties)
  t.equal(expanded.length, MAX_INPUT_OBJECTS, `${MAX_INPUT_OBJECTS} of ${Object.keys(defs).length} input objects expanded`)
  t.ok(defs['db_T0001WhereInput']!.properties && defs['db_T0002ListRelationFilter']!.properties, 'breadth-first: the variable\'s own input object and its relation filters first')
  t.match(defs['db_T0002WhereInput']!.description, /Not expanded/, 'a farther one is open, and says why')

  const get = (where: unknown) => getOperation(base, `Chain?where=${encodeURIComponent(JSON.stringify(where))}`)
  const expandedLevel = await get({ t0002s: { nope: 1 } })
  t.equal(expandedLevel.status, 400)
  t.same(expandedLevel.body.errors!.map((e) => [e.extensions.code, e.extensions['instancePath']]), [['TRB_ERR_OPERATION_VARIABLES', '/where/t0002s/nope']], 'an expanded input object: ajv names the path')
  const openLevel = await get({ t0002s: { some: { nope: 1 } } })
  t.equal(openLevel.status, 400)
  t.equal(openLevel.body.errors![0]!.extensions.code, 'TRB_ERR_GRAPHQL_VALIDATION', 'past the bound: GraphQL\'s coercion refuses it')
  const ok = await get({ t0002s: { some: { code: { equals: 'b' } } } })
  t.equal(ok.status, 200, JSON.stringify(ok.body))
  t.same(ok.body['db_findManyT0001'], [{ id: 1 }])

  // One component and one client type per input object: the expanded entry, whichever operation has it.
  t.ok((gateway.operations.get('Near')!.variablesSchema.$defs as Record<string, JsonSchema>)['db_T0002WhereInput']!.properties, 'Near expands T0002WhereInput')
  const component = (buildOpenApiDocument(gateway) as { components: { schemas: Record<string, JsonSchema> } }).components.schemas['db_T0002WhereInput']!
  t.same(Object.keys(component.properties ?? {}).slice(0, 4), ['AND', 'OR', 'NOT', 'id'], 'the OpenAPI component is the expanded entry, not Chain\'s open one')
  t.match(renderClient(gateway), /^export type db_T0002WhereInput = \{\n {2}AND\?: db_T0002WhereInput\[\] \| null/m, 'so is the client type')
})
