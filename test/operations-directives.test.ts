/**
 * The data directives of stored operations (README "Operation directives"), on one real gateway: the
 * `todo` SQLite database and a GraphQL upstream on 127.0.0.1 whose every request is counted.
 * `@internalOperation`, `@internal` + `@export` + `_join` (one upstream request per level), `@transform`,
 * `@injectGeneratedUUID`, `@injectCurrentDateTime`, `@injectEnvironmentVariable`, `@jsonSchema`,
 * `@removeNullVariables`; every misuse a load error with file:line:column, every client misuse a 400.
 */
import t from 'tap'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeExecutableSchema } from '@graphql-tools/schema'
import { startGateway, startGraphQLUpstream, postGraphQL } from './helpers/graphql-upstream.js'
import { loadOperationSource } from '../gateway/operations/load.js'
import { formatGoLayout } from '../gateway/operations/directives.js'
import { compileOperation } from '../gateway/operations/compile.js'
import { renderClient } from '../gateway/codegen/client.js'
import * as createTodo from '../datasources/todo/migrations/001-create-todo.js'

const notesSchema = makeExecutableSchema({
  typeDefs: `
    type Note { todoId: Int! text: String! }
    type Query {
      note(todoId: Int!): Note
      echo(value: String): String
      greeting(name: String = "world"): String!
      echoInt(n: Int): Int
      echoList(values: [String!]): [String!]
    }`,
  resolvers: {
    Query: {
      note: (_: unknown, a: { todoId: number }) => {
        if (a.todoId === 113) throw new Error('note 113 is locked')
        return a.todoId % 10 === 0 ? null : { todoId: a.todoId, text: `note of ${a.todoId}` }
      },
      echo: (_: unknown, a: { value?: string | null }) => (a.value === undefined ? 'absent' : a.value),
      greeting: (_: unknown, a: { name: string | null }) => `hello ${a.name}`,
      echoInt: (_: unknown, a: { n?: number | null }) => a.n ?? null,
      echoList: (_: unknown, a: { values?: string[] | null }) => a.values ?? null,
    },
  },
})

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const operations: Record<string, string> = {
  Hidden: 'query Hidden @internalOperation { todo_findManyTodo(take: 2, orderBy: { id: asc }) { id } }',
  TodosWithNotes: `query TodosWithNotes($todoId: Int! @internal, $take: Int = 100) {
  todo_findManyTodo(take: $take, orderBy: { id: asc }) {
    id @export(as: "todoId")
    title
    _join {
      people_note(todoId: $todoId) { text }
    }
  }
}`,
  NoteTexts: `query NoteTexts($todoId: Int! @internal, $suffix: String = "") {
  todo_findManyTodo(take: 3, orderBy: { id: asc }) {
    id @export(as: "todoId")
    note: _join @transform(get: "people_note.text") {
      people_note(todoId: $todoId) { text }
    }
    s: _join @transform(get: "people_echo") { people_echo(value: $suffix) }
  }
}`,
  Titles: `query Titles {
  todo_findManyTodo(take: 3, orderBy: { id: asc }) @transform(get: "title") { title }
  first: todo_findUniqueTodo(where: { id: 1 }) @transform(get: "title") { title }
}`,
  Stamped: `query Stamped($id: String! @injectGeneratedUUID, $at: String! @injectCurrentDateTime, $day: String! @injectCurrentDateTime(customFormat: "2006-01-02"), $secret: String! @injectEnvironmentVariable(name: "TRB_DIRECTIVES_SECRET")) {
  id: people_echo(value: $id)
  at: people_echo(value: $at)
  day: people_echo(value: $day)
  secret: people_echo(value: $secret)
}`,
  Checked: `query Checked($name: String! @jsonSchema(pattern: "^[a-z]+$", maxLength: 8, title: "Name", description: "lower-case letters"), $email: String @jsonSchema(commonPattern: EMAIL), $n: Int @jsonSchema(minimum: 1, maximum: 5), $tags: [String!] @jsonSchema(minItems: 1, maxItems: 2, minLength: 2)) {
  people_greeting(name: $name)
  email: people_echo(value: $email)
  n: people_echoInt(n: $n)
  tags: people_echoList(values: $tags)
}`,
  Descriptions: `query Descriptions($d: String! @internal) {
  todo_findManyTodo(take: 3, orderBy: { id: asc }) { id description @export(as: "d") _join { people_echo(value: $d) } }
}`,
  Chained: `query Chained($id: Int = 2, $title: String! @internal, $echo: String! @internal) {
  first: todo_findUniqueTodo(where: { id: $id }) { id title @export(as: "title") }
  echoed: people_echo(value: $title)
  x: people_echo(value: "x") @export(as: "echo")
  again: people_echo(value: $echo)
}`,
  NullsRemoved: 'query NullsRemoved($name: String) @removeNullVariables { people_greeting(name: $name) }',
  NullsKept: 'query NullsKept($name: String) { people_greeting(name: $name) }',
}

t.test('operation directives on a SQLite database and a GraphQL upstream', async (t) => {
  process.env.TRB_DIRECTIVES_SECRET = 's3cret'
  const upstream = await startGraphQLUpstream(t, notesSchema)
  const dir = mkdtempSync(join(tmpdir(), 'tributary-directives-'))
  const { base, gateway } = await startGateway(t, {
    dir,
    datasources: [
      { kind: 'database', namespace: 'todo', url: `sqlite:${join(dir, 'todo.sqlite')}`, migrations: { '001-create-todo': createTodo } },
      { kind: 'graphql', namespace: 'people', url: upstream.url },
    ],
    operations,
  })
  // 120 todos: ids 1..120 (ids divisible by 10 have no note upstream).
  const created = await postGraphQL(base, `mutation { todo_createManyTodo(data: [${Array.from({ length: 120 }, (_, i) => `{ title: "todo ${i + 1}" }`).join(', ')}]) { count } }`)
  t.same(created.body, { data: { todo_createManyTodo: { count: 120 } } })
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}/operations/${path}`, { headers })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { errors?: { message: string; extensions: Record<string, unknown> }[] } }
  }
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}/operations/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { errors?: { message: string; extensions: Record<string, unknown> }[] } }
  }
  const load = (name: string, source: string) => loadOperationSource(name, `operations/${name}.graphql`, source, gateway.schema)

  t.test('@internalOperation: 404 over HTTP like an unknown operation, absent from OpenAPI and the client, callable in process', async (t) => {
    const unknown = await get('Nope')
    for (const res of [await get('Hidden'), await post('Hidden', {}), await get('Hidden', { accept: 'text/event-stream' })]) {
      t.equal(res.status, 404)
      t.same(res.body, JSON.parse(JSON.stringify(unknown.body).replace('Nope', 'Hidden')), 'the same body as an unknown operation')
    }
    const openapi = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: Record<string, unknown> }
    t.notOk(openapi.paths['/operations/Hidden'], 'not in the OpenAPI document')
    t.ok(openapi.paths['/operations/Titles'], 'public operations are')
    t.notMatch(renderClient(gateway), /Hidden/, 'not in the typed client')
    const viaGraphql = await postGraphQL(base, operations.Stamped!)
    t.match(viaGraphql.body.errors?.[0]?.message, /Unknown directive "@injectGeneratedUUID"/, 'the data directives are for stored operations: /graphql refuses them')
    const op = gateway.operations.get('Hidden')!
    t.equal(op.internal, true, 'CompiledOperation.internal')
    const result = await op.execute(op.authorize({}, null), {})
    t.same(result.data, { todo_findManyTodo: [{ id: 1 }, { id: 2 }] }, 'runs in process')
  })

  t.test('@export + _join: one upstream request for a level of 100 parents', async (t) => {
    const before = upstream.dataRequests().length
    const res = await get('TodosWithNotes')
    t.equal(res.status, 200, JSON.stringify(res.body).slice(0, 300))
    const todos = res.body.todo_findManyTodo as { id: number; title: string; _join: { people_note: { text: string } | null } }[]
    t.equal(todos.length, 100)
    t.same(todos[0], { id: 1, title: 'todo 1', _join: { people_note: { text: 'note of 1' } } })
    t.same(todos[9]!._join, { people_note: null }, 'a joined field may be null')
    t.ok(todos.every((x) => x.id % 10 === 0 || x._join.people_note?.text === `note of ${x.id}`), 'each parent gets its own answer')
    const calls = upstream.dataRequests().slice(before)
    t.equal(calls.length, 1, 'one request to the upstream for the whole level, not 100')
    t.equal(calls[0]!.query.match(/\bnote\(/g)?.length, 100, 'the 100 joined fields travel as aliases of one document')

    const failing = await get('TodosWithNotes?take=120')
    const errors = failing.body.errors as unknown as { message: string; path: (string | number)[] }[]
    t.same(errors.map((e) => e.path), [['todo_findManyTodo', 112, '_join', 'people_note']], 'an error of a joined field is at its parent\'s path')
    t.match(errors[0]!.message, /note 113 is locked/)
    t.equal((failing.body.data as { todo_findManyTodo: unknown[] }).todo_findManyTodo.length, 120, 'the other parents keep their answers')

    const few = await get('TodosWithNotes?take=3')
    t.equal((few.body.todo_findManyTodo as unknown[]).length, 3, 'public variables still work beside @internal ones')
    const schema = gateway.operations.get('TodosWithNotes')!.responseSchema
    t.match(JSON.stringify(schema), /"_join"/, 'the response schema holds the joined selection')
  })

  t.test('@internal: not public input; a client sending it gets a 400 like an unknown variable', async (t) => {
    const op = gateway.operations.get('TodosWithNotes')!
    t.notOk(op.variablesSchema.properties?.todoId, 'not in the variables JSON Schema')
    t.ok(op.variablesSchema.properties?.take)
    for (const res of [await get('TodosWithNotes?todoId=3'), await post('TodosWithNotes', { todoId: 3 })]) {
      t.equal(res.status, 400)
      t.equal(res.body.errors![0]!.extensions.code, 'TRB_ERR_OPERATION_VARIABLES')
      t.equal(res.body.errors![0]!.extensions.variable, 'todoId')
      t.match(res.body.errors![0]!.message, /not a variable of this operation/)
    }
    t.notMatch(renderClient(gateway).split('TodosWithNotesVariables')[1]!.split('\n')[0], /todoId/, 'not in the typed client')
  })

  t.test('@transform(get:): the value at the path, in the answer, the response schema and the client', async (t) => {
    const joined = await get('NoteTexts')
    t.same(joined.body, { todo_findManyTodo: [{ id: 1, note: 'note of 1', s: '' }, { id: 2, note: 'note of 2', s: '' }, { id: 3, note: 'note of 3', s: '' }] })
    const suffixed = await get('NoteTexts?suffix=!')
    t.same((suffixed.body.todo_findManyTodo as { s: string }[]).map((x) => x.s), ['!', '!', '!'], 'a public variable used only inside _join stays public input')
    t.throws(() => load('U', 'query U($v: Int! @internal, $w: Int) { todo_findManyTodo { id @export(as: "v") _join { people_note(todoId: $v) { text } } } }'), /U\.graphql:1:29: Variable "\$w" is never used in operation "U"/)
    const titles = await get('Titles')
    t.same(titles.body, { todo_findManyTodo: ['todo 1', 'todo 2', 'todo 3'], first: 'todo 1' }, 'lists map; an object becomes its field')
    const schema = gateway.operations.get('Titles')!.responseSchema
    t.same(schema.properties!.todo_findManyTodo, { type: 'array', items: { type: 'string' } })
    t.same([...(schema.properties!.first!.type as string[])].sort(), ['null', 'string'])
    t.match(renderClient(gateway), /first: string \| null/, 'the typed client has the flattened type')
    t.throws(() => compileOperation(load('BadGet', 'query BadGet { todo_findUniqueTodo(where: { id: 1 }) @transform(get: "nope") { title } }'), gateway.schema), /operations\/BadGet\.graphql: @transform\(get: "nope"\) on todo_findUniqueTodo: the selection has no such path/)
    t.throws(() => load('BadGet2', 'query BadGet2 { todo_findUniqueTodo(where: { id: 1 }) @transform(got: "title") { title } }'), /operations\/BadGet2\.graphql:1:66: @transform has no argument "got"/)
  })

  t.test('@inject…: values set by the server, not public input', async (t) => {
    const a = await get('Stamped')
    t.equal(a.status, 200, JSON.stringify(a.body))
    t.match(a.body.id, UUID, '@injectGeneratedUUID')
    t.match(a.body.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, '@injectCurrentDateTime is ISO 8601 by default')
    t.ok(Math.abs(Date.parse(a.body.at as string) - Date.now()) < 60_000, 'the current time')
    t.equal(a.body.day, new Date().toISOString().slice(0, 10), 'customFormat: a Go layout')
    t.equal(a.body.secret, 's3cret', '@injectEnvironmentVariable')
    const b = await get('Stamped')
    t.not(b.body.id, a.body.id, 'a new UUID per request')
    const op = gateway.operations.get('Stamped')!
    t.same(Object.keys(op.variablesSchema.properties ?? {}), [], 'none of them is public input')
    for (const res of [await get('Stamped?secret=x'), await post('Stamped', { id: 'mine' })]) {
      t.equal(res.status, 400, 'a client cannot override them')
      t.equal(res.body.errors![0]!.extensions.code, 'TRB_ERR_OPERATION_VARIABLES')
    }
    t.throws(() => load('Env', 'query Env($v: String! @injectEnvironmentVariable(name: "TRB_DIRECTIVES_UNSET")) { people_echo(value: $v) }'), /operations\/Env\.graphql:1:23: @injectEnvironmentVariable: the environment variable TRB_DIRECTIVES_UNSET is not set/)
    t.throws(() => load('Fmt', 'query Fmt($v: String! @injectCurrentDateTime(format: Nope)) { people_echo(value: $v) }'), /Fmt\.graphql:1:46: @injectCurrentDateTime\(format:\) must be one of ISO8601/)
    t.throws(() => load('Typ', 'query Typ($v: Int! @injectGeneratedUUID) { todo_findUniqueTodo(where: { id: $v }) { id } }'), /Typ\.graphql:1:20: @injectGeneratedUUID needs a String or ID or UUID variable, and \$v is Int/)
    t.throws(() => load('Two', 'query Two($v: String! @injectGeneratedUUID @internal) { people_echo(value: $v) }'), /Two\.graphql:1:11: \$v can take only one of/)
    t.equal(formatGoLayout(new Date(Date.UTC(2024, 1, 5, 14, 7, 9, 42)), 'Mon Jan _2 15:04:05.000 MST 2006 | 3:04PM | 002'), 'Mon Feb  5 14:07:09.042 UTC 2024 | 2:07PM | 036')
  })

  t.test('@jsonSchema: the keywords are in the variables JSON Schema, the 400 and the OpenAPI document', async (t) => {
    const ok = await post('Checked', { name: 'ada', email: 'ada@example.com', n: 3, tags: ['ab'] })
    t.same(ok.body, { people_greeting: 'hello ada', email: 'ada@example.com', n: 3, tags: ['ab'] })
    const bad = await post('Checked', { name: 'Ada!', email: 'nope', n: 9, tags: [] })
    t.equal(bad.status, 400)
    t.same(
      bad.body.errors!.map((e) => e.extensions.schemaPath).sort(),
      ['#/properties/email/format', '#/properties/n/maximum', '#/properties/name/pattern', '#/properties/tags/minItems'],
      'each violated rule is named',
    )
    t.match(bad.body.errors!.find((e) => e.extensions.variable === 'name')!.message, /Variable "name" must match pattern "\^\[a-z\]\+\$"/)
    const items = await post('Checked', { name: 'abcdefghij', tags: ['a', 'bb', 'cc'] })
    t.same(items.body.errors!.map((e) => e.extensions.schemaPath).sort(), ['#/properties/name/maxLength', '#/properties/tags/items/minLength', '#/properties/tags/maxItems'], 'value keywords apply to the items of a list')
    const query = await get('Checked?name=x1')
    t.equal(query.status, 400, 'GET is checked too')
    const openapi = JSON.stringify(await (await fetch(`${base}/openapi.json`)).json())
    t.match(openapi, /"pattern":"\^\[a-z\]\+\$"/, 'the OpenAPI document carries the rules')
    t.match(openapi, /"description":"lower-case letters\. Rules: pattern \^\[a-z\]\+\$, maxLength 8\."/, 'with the rules written out')
    t.match(renderClient(gateway), /\/\*\* lower-case letters\. Rules: pattern \^\[a-z\]\+\$, maxLength 8\. \*\/\n\s+name: string/, 'the typed client\'s docstring names the rules')
    t.throws(() => load('Re', 'query Re($s: String @jsonSchema(pattern: "([a-z")) { people_echo(value: $s) }'), /Re\.graphql:1:33: @jsonSchema\(pattern:\) is not a valid regular expression/)
    t.throws(() => load('Num', 'query Num($s: String @jsonSchema(minimum: 1)) { people_echo(value: $s) }'), /Num\.graphql:1:34: @jsonSchema\(minimum:\) applies to Int or Float variables, and \$s is String/)
    t.throws(() => load('Items', 'query Items($s: String @jsonSchema(maxItems: 1)) { people_echo(value: $s) }'), /Items\.graphql:1:36: @jsonSchema\(maxItems:\) applies to list variables/)
    t.throws(() => load('Unk', 'query Unk($s: String @jsonSchema(colour: "red")) { people_echo(value: $s) }'), /Unk\.graphql:1:34: @jsonSchema has no argument "colour"/)
    t.throws(() => load('Len', 'query Len($s: String @jsonSchema(minLength: -1)) { people_echo(value: $s) }'), /Len\.graphql:1:34: @jsonSchema\(minLength:\) must be a whole number/)
  })

  t.test('@removeNullVariables: a null variable is removed, so the argument takes its default', async (t) => {
    t.same((await post('NullsRemoved', { name: null })).body, { people_greeting: 'hello world' })
    t.same((await post('NullsKept', { name: null })).body, { people_greeting: 'hello null' }, 'without it, null is sent')
    t.same((await post('NullsRemoved', { name: 'ada' })).body, { people_greeting: 'hello ada' })
    t.throws(() => load('Arg', 'query Arg @removeNullVariables(all: true) { people_greeting }'), /Arg\.graphql:1:32: @removeNullVariables takes no arguments/)
  })

  t.test('@export misuse is a load error with file:line:column', async (t) => {
    const cases: [string, RegExp][] = [
      ['query A($v: Int! @internal) { todo_findManyTodo { id @export(as: "w") _join { people_note(todoId: $v) { text } } } }', /A\.graphql:1:54: @export\(as: "w"\): the operation declares no variable \$w/],
      ['query A($v: Int! @internal) { todo_findManyTodo { title @export(as: "v") _join { people_note(todoId: $v) { text } } } }', /A\.graphql:1:57: @export\(as: "v"\): the field's type String! does not fit \$v: Int!/],
      ['query A($v: Int! @internal) { todo_findUniqueTodo(where: { id: 1 }) @export(as: "v") { id } _join { people_note(todoId: $v) { text } } }', /A\.graphql:1:69: @export\(as: "v"\): only scalar and enum fields can be exported/],
      ['query A($v: Int!) { todo_findManyTodo { id @export(as: "v") _join { people_note(todoId: $v) { text } } } }', /A\.graphql:1:44: @export\(as: "v"\): \$v must be marked @internal/],
      ['query A($v: Int! @internal) { todo_findManyTodo { id @export(as: "v") } }', /A\.graphql:1:54: @export in a list needs a _join field beside it/],
      ['query A($v: Int! @internal) { todo_findManyTodo { id } }', /A\.graphql:1:9: \$v is @internal but no field @export/],
      ['query A($v: Int! @internal) { todo_findManyTodo { id @export(as: "v") _join { people_nope(todoId: $v) } } }', /A\.graphql:1:79: Cannot query field "people_nope" on type "Query"/],
      ['mutation A($v: Int! @internal) { todo_deleteManyTodo { count @export(as: "v") _join { people_note(todoId: $v) { text } } } }', /_join is supported in queries only/],
    ]
    for (const [source, error] of cases) t.throws(() => load('A', source), error, source)
  })

  t.test('@export outside lists: later root fields run with the value', async (t) => {
    const res = await get('Chained')
    t.same(res.body, { first: { id: 2, title: 'todo 2' }, x: 'x', echoed: 'todo 2', again: 'x' }, 'a nested field and a root field export into later root fields')
    const missing = await get('Chained?id=99999')
    t.same((missing.body.data as Record<string, unknown>).first, null)
    t.match(missing.body.errors?.[0]?.message, /Variable "\$title" of non-null type "String!" must not be null/, 'a null exported value into a non-null variable is an error, not a silent null')
    t.same(Object.keys(gateway.operations.get('Chained')!.responseSchema.properties ?? {}).sort(), ['again', 'echoed', 'first', 'x'])
    t.throws(() => load('B', 'query B($v: String! @internal) { a: people_echo(value: "x") @export(as: "v") }'), /B\.graphql:1:9: \$v is exported but no later root field uses it/)
  })

  t.test('a null exported value gives a null join without an upstream call', async (t) => {
    const before = upstream.dataRequests().length
    const res = await get('Descriptions')
    t.same(res.body, { todo_findManyTodo: [1, 2, 3].map((id) => ({ id, description: null, _join: null })) })
    t.equal(upstream.dataRequests().length, before, 'no upstream call')
    t.equal(gateway.operations.get('NoteTexts')!.direct, null, 'joins and transforms take the executor path')
  })
})
