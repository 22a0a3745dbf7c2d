// The sample role service (datasources/system/service.ts): exact answers, the committed openapi.json
// stays equal to what the service generates, the script mode, and the `system` source end to end.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { execute, parse, printSchema } from 'graphql'
import { pino } from 'pino'
import { createRoleService, renderRoleServiceOpenApi, DEFAULT_ROLE_SERVICE_URL } from '../datasources/system/service.js'
import { createRestSource } from '../gateway/connectors/rest/index.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const committedPath = join(root, 'datasources/system/openapi.json')

t.test('GET /api/v1/role/all answers exactly the two roles', async (t) => {
  const app = await createRoleService()
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'GET', url: '/api/v1/role/all' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.equal(res.body, '[{"code":"admin","remark":"Administrator"},{"code":"user","remark":""}]')
})

t.test('getRoleByCode and createRole, with a store per instance', async (t) => {
  const app = await createRoleService()
  t.teardown(() => app.close())
  t.same((await app.inject({ method: 'GET', url: '/api/v1/role/user' })).json(), { code: 'user', remark: '' })
  const missing = await app.inject({ method: 'GET', url: '/api/v1/role/nobody' })
  t.equal(missing.statusCode, 404)
  t.equal(missing.json().message, 'Role nobody not found')
  const created = await app.inject({ method: 'POST', url: '/api/v1/role', payload: { code: 'auditor' } })
  t.equal(created.statusCode, 201)
  t.same(created.json(), { code: 'auditor', remark: '' })
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/role', payload: { code: 'auditor' } })).statusCode, 409)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/role', payload: { code: 'Bad Code' } })).statusCode, 400)
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/role/all' })).json().length, 3)

  const other = await createRoleService()
  t.teardown(() => other.close())
  t.equal((await other.inject({ method: 'GET', url: '/api/v1/role/all' })).json().length, 2, 'a new instance starts from the seed roles')
})

t.test('the committed openapi.json is what the service serves', async (t) => {
  const committedText = readFileSync(committedPath, 'utf8')
  t.equal(await renderRoleServiceOpenApi(), committedText, 'refresh with: npx tsx datasources/system/service.ts --write-openapi')

  const committed = JSON.parse(committedText)
  t.same(committed.servers, [{ url: DEFAULT_ROLE_SERVICE_URL }])
  t.equal(committed.paths['/api/v1/role/all'].get.operationId, 'getAllRoles')
  t.same(committed.components.schemas.Role.required, ['code', 'remark'])

  const app = await createRoleService()
  t.teardown(() => app.close())
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const served = (await (await fetch(`${url}/openapi.json`)).json()) as Record<string, unknown>
  t.match(served.openapi as string, /^3\./)
  t.same(served.servers, [{ url }], 'servers[0].url follows the listening address')
  t.same({ ...served, servers: committed.servers }, committed)
})

t.test('the system source wraps the running service', async (t) => {
  const app = await createRoleService()
  t.teardown(() => app.close())
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const source = await createRestSource({ openapi: committedPath, baseUrl: url }, {
    namespace: 'system', sourceName: 'system', logger: pino({ level: 'silent' }), mode: 'development', cacheDir: tmpdir(), cwd: root,
  })
  t.teardown(() => source.close())
  t.equal(printSchema(source.schema), [
    'type Query {',
    '  """Lists every role."""',
    '  getAllRoles: [Role!]',
    '',
    '  """Finds one role by its code."""',
    '  getRoleByCode(',
    '    """The role code."""',
    '    code: String!',
    '  ): Role',
    '}',
    '',
    '"""A role a user can hold."""',
    'type Role {',
    '  """Unique code, e.g. `admin`."""',
    '  code: String!',
    '',
    '  """Free text; `\'\'` when there is none."""',
    '  remark: String!',
    '}',
    '',
    'type Mutation {',
    '  """Creates a role."""',
    '  createRole(input: RoleInput!): Role',
    '}',
    '',
    '"""A role to create."""',
    'input RoleInput {',
    '  """Unique code: lower-case letters, digits, `_` and `-`."""',
    '  code: String!',
    '',
    '  """Free text. Default `\'\'`."""',
    '  remark: String = ""',
    '}',
  ].join('\n'))
  const result = await execute({ schema: source.schema, document: parse('{ getAllRoles { code remark } }') })
  t.same(result, { data: { getAllRoles: [{ code: 'admin', remark: 'Administrator' }, { code: 'user', remark: '' }] } })
  const created = await execute({ schema: source.schema, document: parse('mutation { createRole(input: { code: "ops" }) { code remark } }') })
  t.same(created, { data: { createRole: { code: 'ops', remark: '' } } })
  const missing = await execute({ schema: source.schema, document: parse('{ getRoleByCode(code: "x/y") { code } }') })
  t.equal(missing.data?.getRoleByCode, null)
  t.equal(missing.errors?.[0]?.message, 'Upstream system failed: 404 Not Found: Role x/y not found')
  t.match(missing.errors?.[0]?.extensions, { code: 'TRB_ERR_UPSTREAM', http: { status: 404 } })
  // health() answers 'probe pending' when the probe takes longer than its short wait (a loaded
  // machine): ask again until the probe's own answer, with its latency, is there.
  let health = await source.health()
  for (const end = Date.now() + 10_000; health.latencyMs === undefined && Date.now() < end; health = await source.health()) await new Promise((r) => setTimeout(r, 50))
  t.equal(health.status, 'up')
  t.type(health.latencyMs, 'number')
})

t.test('script mode: listens on ROLE_SERVICE_PORT and prints its URL; --write-openapi writes the document', async (t) => {
  const tsx = join(root, 'node_modules/.bin/tsx')
  const script = join(root, 'datasources/system/service.ts')
  const dir = mkdtempSync(join(tmpdir(), 'role-openapi-'))
  const target = join(dir, 'openapi.json')
  await new Promise<void>((resolve, reject) => {
    const child = spawn(tsx, [script, '--write-openapi', target], { cwd: root, stdio: 'ignore' })
    child.on('error', reject)
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}`))))
  })
  t.equal(readFileSync(target, 'utf8'), readFileSync(committedPath, 'utf8'))

  const child = spawn(tsx, [script], { cwd: root, env: { ...process.env, ROLE_SERVICE_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }, stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => { child.kill('SIGTERM') })
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error(`no URL printed: ${out}`)), 20_000)
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const m = /listening at (http:\/\/\S+)/.exec(out)
      if (m) { clearTimeout(timer); resolve(m[1]!) }
    })
  })
  const res = await fetch(`${url}/api/v1/role/all`)
  t.equal(await res.text(), '[{"code":"admin","remark":"Administrator"},{"code":"user","remark":""}]')
  const doc = (await (await fetch(`${url}/openapi.json`)).json()) as { servers: unknown }
  t.same(doc.servers, [{ url }])
})
