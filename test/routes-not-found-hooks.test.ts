/**
 * Custom routes answer 404 `TRB_ERR_DB_NOT_FOUND` when they found nothing (README "HTTP contract" →
 * "Custom routes"), whatever produced the answer: the operation itself, a TypeScript operation, and
 * the hooks that answer instead of it or change its answer (`mutatingPostResolve`, `postResolve`,
 * `customResolve`, `mockResolve`). The same answers on `/operations/*` stay 200 (only routes map
 * "nothing" to 404). One gateway for the file, an in-process schema source.
 */
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { resolveConfig, schema } from '../gateway/config/index.js'
import type { OperationHooks } from '../gateway/hooks/index.js'
import { serveGateway } from './helpers/serve.js'

const fixtures = fileURLToPath(new URL('./fixtures/routes-not-found', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'tributary-routes-404-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

const hooks: Record<string, OperationHooks> = {
  Posted: { postResolve: () => undefined },
  // Keeps the answer as it is: an all-null answer stays one.
  Mutated: { mutatingPostResolve: ({ response }) => ({ data: response.data }) },
  // Fills in what the operation did not find: found after all.
  Revived: { mutatingPostResolve: ({ response, input }) => ({ data: (response.data as { note: unknown }).note ? response.data : { note: { id: input.id, title: 'revived' } } }) },
  Custom: { customResolve: ({ input }) => ({ data: { note: input.id === 1 ? { id: 1, title: 'custom' } : null } }) },
  Mocked: { mockResolve: { enabled: true, handler: () => ({ data: { note: null } }) } },
  TsNote: { mutatingPostResolve: ({ response }) => response },
}
const names = ['Plain', 'Posted', 'Mutated', 'Revived', 'Custom', 'Mocked', 'TsNote']
const config = resolveConfig({
  mode: 'development',
  datasources: [
    schema({
      typeDefs: 'type Note { id: Int! title: String! }\ntype Query { note(id: Int!): Note }',
      resolvers: { Query: { note: (_: unknown, a: { id: number }) => (a.id === 1 ? { id: 1, title: 'first' } : null) } },
    }),
  ],
  operations: { dir: fixtures },
  generatedDir: join(dir, 'generated'),
  routes: [
    ...names.map((name) => ({ method: 'GET' as const, path: `/api/${name}/:id`, operation: name })),
    { method: 'GET' as const, path: '/api/plain-ts/:id', operation: 'TsNote' },
  ],
  hooks: { operations: hooks },
})
const { url } = await serveGateway(t, config, { cwd: dir })

async function get(path: string): Promise<{ status: number; body: { errors?: { message: string; extensions: { code: string } }[] } & Record<string, unknown> }> {
  const res = await fetch(`${url}${path}`)
  return { status: res.status, body: (await res.json()) as never }
}

t.test('a route that found nothing is 404 on every path', async (t) => {
  for (const name of ['Plain', 'Posted', 'Mutated', 'Custom', 'Mocked', 'TsNote']) {
    const r = await get(`/api/${name}/2`)
    t.equal(r.status, 404, `${name}: 404`)
    t.equal(r.body.errors?.[0]?.extensions.code, 'TRB_ERR_DB_NOT_FOUND', `${name}: coded`)
    t.match(r.body.errors?.[0]?.message, `GET /api/${name}/2`)
  }
  const ts = await get('/api/plain-ts/2')
  t.equal(ts.status, 404, 'a TypeScript operation answering null, with its post hook')
})

t.test('a route that found something is 200, also when a hook filled it in', async (t) => {
  t.same((await get('/api/Plain/1')).body, { note: { id: 1, title: 'first' } })
  t.same((await get('/api/Posted/1')).body, { note: { id: 1, title: 'first' } })
  t.same((await get('/api/Mutated/1')).body, { note: { id: 1, title: 'first' } })
  t.same((await get('/api/Custom/1')).body, { note: { id: 1, title: 'custom' } })
  t.same((await get('/api/TsNote/1')).body, { id: 1, title: 'first' })
  const revived = await get('/api/Revived/2')
  t.equal(revived.status, 200, 'mutatingPostResolve turned nothing into an answer')
  t.same(revived.body, { note: { id: 2, title: 'revived' } })
})

t.test('/operations/* keeps answering 200 with the nulls', async (t) => {
  for (const name of ['Plain', 'Posted', 'Mutated', 'Custom', 'Mocked']) {
    const r = await get(`/operations/${name}?id=2`)
    t.equal(r.status, 200, name)
    t.same(r.body, { note: null }, name)
  }
  const ts = await get('/operations/TsNote?id=2')
  t.equal(ts.status, 200)
  t.equal(ts.body, null)
})
