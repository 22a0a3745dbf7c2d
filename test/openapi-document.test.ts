/**
 * `GET /openapi.json` (and generated/openapi.json): OpenAPI 3.1 covering every served operation and
 * custom route. Checked structurally (paths, methods, params, request bodies, refs, schemas compile
 * as JSON Schema 2020-12), and against real responses: each documented response schema validates
 * what the gateway actually sends (ajv).
 */
import t from 'tap'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { startDemo } from './helpers/demo.js'
import { buildOpenApiDocument } from '../gateway/codegen/openapi.js'
import { renderGenerated } from '../gateway/codegen/index.js'

type Json = Record<string, unknown>
interface Parameter {
  name: string
  in: string
  required?: boolean
  schema?: Json
  content?: Record<string, { schema: Json }>
}
interface Operation {
  operationId: string
  parameters?: Parameter[]
  requestBody?: { content: Record<string, { schema: Json }> }
  responses: Record<string, { description: string; content?: Record<string, { schema: Json }> }>
}

/** The demo's operations plus the fixture operations (folders, internal/, nested inputs), in one folder. */
function operationsDir(): string {
  // Inside the repository (a git-ignored .scratch folder): the demo's TypeScript operation resolves zod from the project.
  const dir = mkdtempSync(fileURLToPath(new URL('../.scratch-openapi-ops-', import.meta.url)))
  cpSync(fileURLToPath(new URL('../operations', import.meta.url)), dir, { recursive: true })
  cpSync(fileURLToPath(new URL('./fixtures/operations-demo', import.meta.url)), dir, { recursive: true })
  return dir
}

t.test('the OpenAPI document', async (t) => {
  const dir = operationsDir()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { app, gateway, config } = await startDemo(t, { rawSql: true, override: { operations: { dir } } })
  const res = await app.inject({ method: 'GET', url: '/openapi.json' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /application\/json/)
  const doc = res.json() as { openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Json> }; servers?: { url: string }[] }
  t.equal(doc.openapi, '3.1.0')
  t.match(doc.servers?.[0].url, /^http:\/\//, 'the served document names its server')
  const { servers: _servers, ...withoutServers } = doc
  t.same(withoutServers, JSON.parse(JSON.stringify(buildOpenApiDocument(gateway))), 'served = built')
  t.same(JSON.parse(renderGenerated(gateway)['openapi.json']), withoutServers, 'generated/openapi.json = served (without servers)')

  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  // The document's components as one schema resource, so that a schema taken out of the document
  // still resolves its references (`#/components/schemas/X` → `components#/$defs/X`).
  const resolveRefs = (schema: Json): Json => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"components#/$defs/'))
  ajv.addSchema({ $id: 'components', $defs: resolveRefs(doc.components.schemas) })
  const compile = (schema: Json) => ajv.compile(resolveRefs(schema))
  /** An operation's variables schema as the document holds it: its $defs moved into the components. */
  const inDocument = (schema: Json): Json => {
    const { $defs: _defs, ...rest } = schema as { $defs?: unknown }
    return JSON.parse(JSON.stringify(rest).replaceAll('"#/$defs/', '"#/components/schemas/'))
  }

  const served = [...gateway.operations.values()].filter((op) => !op.stored.internal)
  t.ok(served.length >= 10, `${served.length} served operations`)
  t.ok(gateway.operations.has('internal/Secret'), 'the internal operation is compiled')

  t.test('structure: paths, methods, parameters, bodies, refs', async (t) => {
    t.notOk(doc.paths['/operations/internal/Secret'], 'internal operations are not documented')
    t.ok(doc.paths['/operations/users/GetUser'], 'folders become path segments')
    const ids = new Set<string>()
    for (const op of served) {
      const path = doc.paths[`/operations/${op.name}`]
      t.ok(path, `${op.name} has a path`)
      const expected = op.kind === 'query' ? ['get', 'post'] : op.kind === 'mutation' ? ['post'] : ['get']
      t.same(Object.keys(path).sort(), expected, `${op.name}: methods of a ${op.kind}`)
      const variables = Object.keys(op.variablesSchema.properties ?? {})
      if (path.get) {
        const params = path.get.parameters ?? []
        for (const p of params) {
          t.equal(p.in, 'query')
          t.ok(variables.includes(p.name) || p.name === 'live' || p.name === 'variables', `${op.name}: GET param ${p.name} is a variable, live or variables`)
          if (variables.includes(p.name)) t.equal(!!p.required, (op.variablesSchema.required ?? []).includes(p.name), `${op.name}: ${p.name} required as in the variables schema`)
        }
        for (const v of variables) t.ok(params.some((p) => p.name === v), `${op.name}: variable ${v} is a GET param`)
        t.ok(path.get.responses['200'] && path.get.responses['400'] && path.get.responses['500'])
      }
      if (path.post) {
        t.same(path.post.requestBody?.content['application/json'].schema, inDocument(op.variablesSchema), `${op.name}: POST body is the variables schema`)
        for (const [name, def] of Object.entries((op.variablesSchema.$defs ?? {}) as Record<string, Json>)) {
          t.same(doc.components.schemas[name], inDocument(def), `${op.name}: input object ${name} is a component`)
        }
        t.same(path.post.responses['200'].content?.['application/json'].schema, JSON.parse(JSON.stringify(op.responseSchema)))
      }
    }
    for (const route of config.routes) {
      const path = route.path.replace(/:(\w+)/g, '{$1}')
      const entry = doc.paths[path]?.[route.method.toLowerCase()]
      t.ok(entry, `route ${route.method} ${route.path} is documented`)
      const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
      for (const name of templated) {
        const p = entry.parameters?.find((x) => x.name === name && x.in === 'path')
        t.ok(p?.required, `${route.path}: path param ${name} is declared and required`)
      }
      if (route.method === 'POST') t.ok(entry.requestBody, `${route.path}: POST has a body`)
    }
    const refs: string[] = []
    for (const [path, methods] of Object.entries(doc.paths)) {
      t.ok(path.startsWith('/'), `${path} starts with /`)
      for (const [method, op] of Object.entries(methods)) {
        t.ok(['get', 'post', 'put', 'patch', 'delete'].includes(method))
        t.notOk(ids.has(op.operationId), `operationId ${op.operationId} is unique`)
        ids.add(op.operationId)
        for (const p of op.parameters ?? []) {
          t.ok(!!p.schema !== !!p.content, `${op.operationId}.${p.name}: exactly one of schema and content`)
          if (p.schema) compile(p.schema)
          for (const media of Object.values(p.content ?? {})) compile(media.schema)
        }
        for (const media of Object.values(op.requestBody?.content ?? {})) {
          compile(media.schema)
          JSON.stringify(media.schema).replace(/"\$ref":"([^"]+)"/g, (_m, ref: string) => (refs.push(ref), ''))
        }
        for (const [status, r] of Object.entries(op.responses)) {
          t.ok(/^[1-5]\d\d$/.test(status))
          t.type(r.description, 'string')
          for (const media of Object.values(r.content ?? {})) {
            compile(media.schema)
            JSON.stringify(media.schema).replace(/"\$ref":"([^"]+)"/g, (_m, ref: string) => (refs.push(ref), ''))
          }
        }
      }
    }
    t.ok(refs.length > 0)
    t.ok(refs.some((r) => r !== '#/components/schemas/Errors'), 'request bodies refer to input-object components')
    t.notOk(JSON.stringify(doc).includes('"#/$defs/') || JSON.stringify(doc).includes('"$defs"'), 'no reference is left relative to a schema of its own')
    JSON.stringify(doc.components.schemas).replace(/"\$ref":"([^"]+)"/g, (_m, ref: string) => (refs.push(ref), ''))
    for (const ref of new Set(refs)) t.ok(ref.startsWith('#/components/schemas/') && doc.components.schemas[ref.split('/').pop()!], `${ref} resolves`)
  })

  t.test('real responses validate against the documented response schemas', async (t) => {
    const schemaOf = (path: string, method: string, status = '200') => doc.paths[path][method].responses[status].content!['application/json'].schema
    const check = async (method: 'GET' | 'POST' | 'DELETE', url: string, path: string, payload?: Json, status = 200) => {
      const r = await app.inject({ method, url, ...(payload ? { payload } : {}) })
      t.equal(r.statusCode, status, `${method} ${url}: ${r.body.slice(0, 300)}`)
      const validate = compile(schemaOf(path, method.toLowerCase(), String(status)))
      t.ok(validate(r.json()), `${method} ${url} matches its schema: ${ajv.errorsText(validate.errors)}`)
      return r.json()
    }
    const samples: Record<string, string> = {
      TodoById: 'id=2',
      TodoAndRoles: 'id=1',
      TodoWithRoles: 'id=2',
      Roles: '',
      Todos: 'take=3',
      Coerce: 'title=a&ids=1&ids=2',
      FindTodos: 'where[completed][equals]=true',
      LiveTodo: 'id=1',
      'users/GetUser': 'id=3',
      Cached: '',
      PrivateCached: '',
      RawQuery: `sql=${encodeURIComponent('select 1 as one')}`,
    }
    for (const op of served.filter((o) => o.kind === 'query')) {
      t.ok(op.name in samples, `a sample request for ${op.name}`)
      await check('GET', `/operations/${op.name}?${samples[op.name] ?? ''}`, `/operations/${op.name}`)
    }
    const created = await check('POST', '/operations/CreateTodo', '/operations/CreateTodo', { title: 'OpenAPI' })
    const id = (created as { todo_createOneTodo: { id: number } }).todo_createOneTodo.id
    await check('POST', '/operations/UpdateTitle', '/operations/UpdateTitle', { id, title: 'OpenAPI 3.1' })
    await check('POST', '/operations/DeleteTodo', '/operations/DeleteTodo', { id })
    await check('GET', '/api/v1/todos/?take=2', '/api/v1/todos/')
    await check('GET', '/api/v1/todo/1/', '/api/v1/todo/{id}/')
    const viaRoute = await check('POST', '/api/v1/todo/', '/api/v1/todo/', { title: 'via route' })
    await check('DELETE', `/api/v1/todo/${(viaRoute as { todo_createOneTodo: { id: number } }).todo_createOneTodo.id}/`, '/api/v1/todo/{id}/')
    // error responses
    await check('GET', '/operations/TodoById?id=abc', '/operations/TodoById', undefined, 400)
    await check('GET', '/api/v1/todo/999/', '/api/v1/todo/{id}/', undefined, 404)
    await check('POST', '/operations/CreateTodo', '/operations/CreateTodo', {}, 400)
  })
})
