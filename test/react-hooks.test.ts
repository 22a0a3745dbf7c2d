/**
 * generated/react.ts: the TanStack Query hooks (`codegen.react`). The consumer app of
 * test/fixtures/react-hooks/TodoApp.tsx is type-checked with tsc (strict, its wrong uses must fail),
 * then rendered with react-dom in jsdom (@testing-library/react) against a listening demo gateway:
 * a query, a disabled query, a mutation followed by a refetch, a mutation error, a subscription and
 * a live query over Server-Sent Events (and one the gateway refuses), and unmounting closes the streams.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { JSDOM } from 'jsdom'
import { startDemo } from './helpers/demo.js'
import { spawnSync } from 'node:child_process'
import { clientProject, root } from './helpers/client-project.js'
import { namesOf, renderClient } from '../gateway/codegen/client.js'
import { hookNamesOf, renderReactHooks } from '../gateway/codegen/react.js'
import type { CompiledOperation } from '../gateway/operations/compile.js'
import { renderGenerated } from '../gateway/codegen/index.js'
import type { Gateway } from '../gateway/runtime.js'

const fixture = readFileSync(new URL('./fixtures/react-hooks/TodoApp.tsx', import.meta.url), 'utf8')

t.test('react.ts is written only when codegen.react is true', async (t) => {
  const { gateway } = await startDemo(t)
  t.equal(gateway.config.codegen.react, true, 'the demo turns it on')
  t.equal(renderGenerated(gateway)['react.ts'], renderReactHooks(gateway))
  const off = { ...gateway, config: { ...gateway.config, codegen: { react: false } } } as Gateway
  t.notOk('react.ts' in renderGenerated(off), 'default off: a project without react keeps compiling')
  t.match(renderReactHooks(gateway), /from '@tanstack\/react-query'/)
  t.match(renderReactHooks(gateway), /from '\.\/client\.js'/, 'on top of the generated client')
  // The server never loads react: only the generated file (and the application) imports it.
  const grep = spawnSync('grep', ['-rlE', `from '(react|react-dom|@tanstack/[^']+)'`, 'gateway', 'datasources', 'config.ts'], { cwd: root, encoding: 'utf8' })
  const importers = grep.stdout.split('\n').filter((f) => f && f !== 'gateway/codegen/react.ts') // that one holds the generated file's text
  t.same(importers, [], 'no module of the gateway imports react or @tanstack/*')

  // Also the hooks of the operations-demo fixture: folders (`users/GetUser`), required variables, auth directives.
  const fixtures = await startDemo(t, { rawSql: true, override: { operations: { dir: fileURLToPath(new URL('./fixtures/operations-demo', import.meta.url)) } } })
  const other = renderReactHooks(fixtures.gateway)
  t.match(other, /"users\/GetUser": \{ input: Users_GetUserVariables;/, 'a folder operation keeps its name')
  t.match(other, /useUsers_GetUserQuery\(/)
  t.notMatch(other, /Secret/, 'internal operations have no hook')
  const project = clientProject(t, renderClient(gateway), {
    files: { 'react.ts': renderReactHooks(gateway), 'fixtures/client.ts': renderClient(fixtures.gateway), 'fixtures/react.ts': other },
    packages: ['react', '@types/react', '@tanstack/react-query', '@tanstack/query-core'],
    mainExtension: '.tsx',
  })
  const main = fixture.replaceAll("'../../../generated/react.js'", "'./react.js'").replaceAll("'../../../generated/client.js'", "'./client.js'")
  const { main: check, strict } = project.typecheckWithStrict(main)
  t.equal(check.status, 0, `the hooks and the app type-check under strict:\n${check.output}`)
  t.not(strict.status, 0, 'the wrong uses are type errors')
  t.match(strict.output, /Type 'string' is not assignable to type 'number'/, 'a wrong variable type')
  t.match(strict.output, /'"CreateTodo"' is not assignable to type 'keyof Queries'/, 'a mutation is not a query')
  t.match(strict.output, /Property 'title' is missing/, 'a required variable')
  t.match(strict.output, /Property 'nope' does not exist/, 'the response type is real')
  t.equal(strict.output.split(/\n(?=\S)/).length, 4, `exactly the four wrong uses fail:\n${strict.output}`)
})

t.test('hook names are unique in the file', async (t) => {
  const ops = [
    { name: 'Todos', kind: 'query' },
    { name: 'TodosLive', kind: 'query' },
    { name: 'users/Get', kind: 'query' },
    { name: 'users-Get', kind: 'mutation' },
    { name: 'Tick', kind: 'subscription' },
  ] as unknown as CompiledOperation[]
  const hooks = hookNamesOf(ops, namesOf(ops))
  t.same(
    ops.map((op) => hooks.get(op)),
    [
      { main: 'useTodosQuery', live: 'useTodosLiveQuery_2' },
      { main: 'useTodosLiveQuery', live: 'useTodosLiveLiveQuery' },
      { main: 'useUsers_GetQuery', live: 'useUsers_GetLiveQuery' },
      { main: 'useUsers_Get_2Mutation' },
      { main: 'useTickSubscription' },
    ],
    "a query's plain hook keeps its name; the live hook that would take it gets _2",
  )
})

/** Installs a jsdom window as the global DOM (only names Node lacks: Node's fetch, AbortController and streams stay). */
function installDom(t: { teardown(fn: () => void): void }): void {
  const dom = new JSDOM('<!doctype html><html><body></body></html>', { url: 'http://127.0.0.1/', pretendToBeVisual: true })
  const g = globalThis as Record<string, unknown>
  const added: string[] = []
  for (const name of Object.getOwnPropertyNames(dom.window)) {
    if (name in g || name.startsWith('_')) continue
    g[name] = (dom.window as unknown as Record<string, unknown>)[name]
    added.push(name)
  }
  g.window = dom.window
  added.push('window')
  t.teardown(() => {
    for (const name of added) delete g[name]
    dom.window.close()
  })
}

t.test('the hooks render against a running gateway', async (t) => {
  const { app, url } = await startDemo(t, { listen: true, override: { operations: { liveIntervalMs: 50 } } })
  installDom(t)
  // After the DOM exists: react-dom and testing-library look for it when they load.
  const { render, screen, waitFor, fireEvent, cleanup } = await import('@testing-library/react')
  const React = await import('react')
  const { QueryClient } = await import('@tanstack/react-query')
  const { createClient } = await import('../generated/client.js')
  const { TributaryProvider, createHooks } = await import('../generated/react.js')
  const { TodoApp, BoundTodo } = await import('./fixtures/react-hooks/TodoApp.js')
  t.teardown(cleanup)

  const client = createClient({ baseUrl: url })
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  t.teardown(() => queryClient.clear())
  const title = `from React ${process.pid}`
  const view = render(
    React.createElement(
      TributaryProvider,
      { client, queryClient },
      React.createElement(TodoApp, { todoId: 1, newTitle: title }),
      React.createElement(BoundTodo, { hooks: createHooks(client), id: 2 }),
    ),
  )
  // The compilation has no DOM lib (the gateway runs on Node): jsdom's element typed by hand.
  const text = (id: string) => (screen.getByTestId(id) as unknown as { textContent: string | null }).textContent ?? ''
  // waitFor retries its callback until it stops throwing.
  const waitText = (id: string, re: RegExp) =>
    waitFor(
      () => {
        if (!re.test(text(id))) throw new Error(`${id}: ${text(id)}`)
      },
      { timeout: 5000 },
    ).then(() => text(id))

  t.equal(await waitText('todo', /^todo 1:/), 'todo 1: Read docs/architecture.md', 'useTodoByIdQuery renders the query')
  t.equal(await waitText('bound', /^bound (?!loading)/), 'bound Add a data source in config.ts', 'createHooks(client).useQuery, without the provider')
  const before = await waitText('todos', /todos:/)
  const count = Number(before.split(' ')[0])
  t.ok(count >= 3, before)
  t.notMatch(before, title)
  t.equal(text('idle'), 'idle idle no data', 'enabled: false sends nothing')
  t.equal(await waitText('live', new RegExp(`^live ${count}:`)), `live ${count}: ${before.split(': ')[1]}`, 'the live query renders its first result')

  t.equal(await waitText('refused', /^refused/), 'refused TRB_ERR_OPERATION_VARIABLES 400', 'a refused live query is the result\'s error')

  const first = await waitText('message', /^message \d+ subscribed=true$/)
  const next = await waitText('message', new RegExp(`^message (?!${first.split(' ')[1]} )\\d+ subscribed=true$`))
  t.ok(Number(next.split(' ')[1]) > Number(first.split(' ')[1]), `the subscription renders each event: ${first} → ${next}`)
  t.equal(app.livePollers.size, 1, 'one live-query poller on the gateway')

  fireEvent.click(screen.getByText('create'))
  t.equal(await waitText('create', /^created /), `created ${title}`, 'useCreateTodoMutation ran the mutation')
  const after = await waitText('todos', new RegExp(title))
  t.equal(Number(after.split(' ')[0]), count + 1, `onSuccess invalidated Todos, which refetched: ${after}`)
  t.match(await waitText('live', new RegExp(title)), new RegExp(`^live ${count + 1}:`), 'the live query pushed the change without a refetch')

  fireEvent.click(screen.getByText('remove missing'))
  t.equal(await waitText('remove', /^remove error/), 'remove error TRB_ERR_DB_NOT_FOUND 404', 'a failed mutation is a TributaryError with code and status')

  view.unmount()
  await waitFor(
    () => {
      if (app.livePollers.size !== 0) throw new Error(`${app.livePollers.size} pollers`)
    },
    { timeout: 5000 },
  )
  t.equal(app.livePollers.size, 0, 'unmounting closed the live query stream')
})
