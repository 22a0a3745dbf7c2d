/**
 * generated/client.ts: the typed fetch client. A small program using it is type-checked with tsc
 * (strict, with a deliberate `@ts-expect-error` that proves the variable types are real), then run
 * with tsx against a listening demo gateway.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { resolveConfig, schema } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { startDemo } from './helpers/demo.js'
import { clientProject, root } from './helpers/client-project.js'
import { renderClient } from '../gateway/codegen/client.js'
import { renderGenerated } from '../gateway/codegen/index.js'

const tsxCli = join(root, 'node_modules/tsx/dist/cli.mjs')

const program = `
import { createClient, TributaryError, type TodoByIdResponse, type TodosVariables, type CreateTodoResponse, type DateTime } from './client.js'

const client = createClient({ baseUrl: process.argv[2], headers: () => ({ 'x-test': '1' }) })
const out: Record<string, unknown> = {}

const one: TodoByIdResponse = await client.TodoById({ id: 1 })
const title: string | undefined = one.todo_findUniqueTodo?.title
out.one = { id: one.todo_findUniqueTodo?.id, title }

// @ts-expect-error id is an Int: a string does not type-check
await client.TodoById({ id: 'one' }).catch((e: unknown) => { out.badVariable = e instanceof TributaryError ? { status: e.status, code: e.code, variable: e.errors[0].extensions?.variable } : String(e) })

// @ts-expect-error title is required
void (() => client.CreateTodo({}))

// @ts-expect-error not a variable of Todos
const wrong: TodosVariables = { take: 1, nope: true }
void wrong

const list = await client.Todos({ take: 2, skip: 1 })
out.list = list.todo_findManyTodo.map((todo) => todo.id)

const created: CreateTodoResponse = await client.CreateTodo({ title: 'from the typed client', completed: true })
// Mutation fields are nullable (a failed field is null beside its neighbours' data); a call that failed has thrown.
const todo = created.todo_createOneTodo!
const createdAt: DateTime = todo.createdAt
out.created = { title: todo.title, completed: todo.completed, createdAtIsIso: /^\\d{4}-\\d{2}-\\d{2}T/.test(createdAt) }

const deleted = await client.DeleteTodo({ id: todo.id })
out.deleted = deleted.todo_deleteOneTodo?.id === todo.id
try {
  await client.DeleteTodo({ id: todo.id })
  out.deleteAgain = 'no error'
} catch (e) {
  out.deleteAgain = e instanceof TributaryError ? { status: e.status, code: e.code } : String(e)
}

const ids: number[] = []
for await (const event of client.MessageCreated()) {
  ids.push(Number(event.messageCreated?.id))
  if (ids.length === 2) break
}
out.events = ids

for await (const result of client.live.TodoById({ id: 2 })) {
  out.live = result.todo_findUniqueTodo?.id
  break
}
console.log(JSON.stringify(out))
`

t.test('the generated client type-checks and calls the running gateway', async (t) => {
  const { gateway, url } = await startDemo(t, { listen: true })
  t.equal(renderGenerated(gateway)['client.ts'], renderClient(gateway), 'renderGenerated writes client.ts')

  const project = clientProject(t, renderClient(gateway))
  const dir = project.dir
  t.match(renderClient(gateway), /from 'tributary-gateway\/client'/, 'the client imports the runtime from tributary-gateway/client')
  t.match(renderClient(gateway), /do not edit; `npx tributary generate` writes it again/, 'it names the command that exists in every project')
  t.notMatch(renderClient(gateway), /npm run build/, 'not a script that `tributary init` does not add')

  // Without the @ts-expect-error comments (strict.ts) the wrong calls must fail to compile: the types are real.
  const { main: check, strict } = project.typecheckWithStrict(program)
  t.equal(check.status, 0, `tsc --noEmit passes:\n${check.output}`)
  t.not(strict.status, 0, 'the wrong calls are type errors')
  t.match(strict.output, /strict\.ts\(\d+,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/)
  t.match(strict.output, /Property 'title' is missing/)
  t.match(strict.output, /'nope' does not exist in type/)

  const child = spawn(process.execPath, [tsxCli, join(dir, 'main.ts'), url], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d))
  child.stderr.on('data', (d: Buffer) => (stderr += d))
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  t.equal(code, 0, `the program exits cleanly: ${stderr}`)
  const out = JSON.parse(stdout.trim().split('\n').pop() ?? '{}')
  t.same(out.one, { id: 1, title: 'Read docs/architecture.md' })
  t.same(out.badVariable, { status: 400, code: 'TRB_ERR_OPERATION_VARIABLES', variable: 'id' })
  t.same(out.list, [2, 3])
  t.same(out.created, { title: 'from the typed client', completed: true, createdAtIsIso: true })
  t.equal(out.deleted, true)
  t.same(out.deleteAgain, { status: 404, code: 'TRB_ERR_DB_NOT_FOUND' })
  t.equal(out.events.length, 2)
  t.ok(out.events[1] > out.events[0], `subscription ids increase: ${out.events}`)
  t.equal(out.live, 2)
})

t.test('a project with zero operations: the generated client compiles under strict, noUnusedLocals and noUnusedParameters', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-client-zero-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'operations'))
  const config = resolveConfig({
    datasources: [schema({ typeDefs: 'type Query { now: String }', resolvers: { Query: { now: () => 'now' } } })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  t.teardown(() => gateway.close())
  t.equal(gateway.operations.size, 0)
  const project = clientProject(t, renderClient(gateway))
  const tsconfig = join(project.dir, 'tsconfig.json')
  const parsed = JSON.parse(readFileSync(tsconfig, 'utf8')) as { compilerOptions: Record<string, unknown> }
  writeFileSync(tsconfig, JSON.stringify({ ...parsed, compilerOptions: { ...parsed.compilerOptions, strict: true, noUnusedLocals: true, noUnusedParameters: true } }))
  const check = project.typecheck(`import { createClient, type TributaryClient } from './client.js'\nconst client: TributaryClient = createClient({ baseUrl: 'http://127.0.0.1:1' })\nconsole.log(Object.keys(client.live).length)\n`)
  t.equal(check.status, 0, `tsc --noEmit passes:\n${check.output}`)
})
