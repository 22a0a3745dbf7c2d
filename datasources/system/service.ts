/**
 * The sample role service: the upstream REST API that the `system` data source wraps (docs/architecture.md §5,
 * "The sample role service"). A fastify app whose OpenAPI 3 document is generated from its route
 * schemas by @fastify/swagger and served at `GET /openapi.json`.
 *
 * Routes:
 * - `GET /api/v1/role/all` (`getAllRoles`) → `[{"code":"admin","remark":"Administrator"},{"code":"user","remark":""}]`;
 * - `GET /api/v1/role/{code}` (`getRoleByCode`) → one `Role`, or 404 `{ statusCode, error, message }`;
 * - `POST /api/v1/role` (`createRole`) → 201 and the new `Role`; 409 when the code exists. The store is
 *   in memory, one per instance, so every `createRoleService()` starts from the two seed roles;
 * - `GET /openapi.json` → the OpenAPI 3.0 document.
 *
 * As a script (`node dist/datasources/system/service.js` or `tsx datasources/system/service.ts`) it
 * listens on `ROLE_SERVICE_PORT` (default 4001) at `HOST` (default 127.0.0.1) and prints its URL.
 * With `--write-openapi [file]` it writes its document, pretty-printed, to `file` (default
 * `datasources/system/openapi.json` under the working directory) and exits without listening.
 */
import { realpathSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'

/** The `servers[0].url` of the committed document: the service's default address. */
export const DEFAULT_ROLE_SERVICE_URL = 'http://127.0.0.1:4001'

/** One role, as the service stores and returns it. */
export interface Role {
  /** Unique code, e.g. `admin`. */
  code: string
  /** Free text; `''` when there is none. */
  remark: string
}

/** Options of {@link createRoleService}. */
export interface RoleServiceOptions {
  /** fastify's `logger` option. Default false. */
  logger?: boolean | object
  /**
   * The `servers[0].url` of the served document. Default: the address the instance listens on
   * (`http://<host>:<port>`) once it listens, {@link DEFAULT_ROLE_SERVICE_URL} before that.
   */
  serverUrl?: string
}

const SEED_ROLES: readonly Role[] = [
  { code: 'admin', remark: 'Administrator' },
  { code: 'user', remark: '' },
]

const roleSchema = {
  $id: 'Role',
  type: 'object',
  description: 'A role a user can hold.',
  required: ['code', 'remark'],
  additionalProperties: false,
  properties: {
    code: { type: 'string', description: 'Unique code, e.g. `admin`.' },
    remark: { type: 'string', description: "Free text; `''` when there is none." },
  },
} as const

const roleInputSchema = {
  $id: 'RoleInput',
  type: 'object',
  description: 'A role to create.',
  required: ['code'],
  additionalProperties: false,
  properties: {
    code: { type: 'string', pattern: '^[a-z][a-z0-9_-]{0,31}$', description: 'Unique code: lower-case letters, digits, `_` and `-`.' },
    remark: { type: 'string', maxLength: 200, default: '', description: 'Free text. Default `\'\'`.' },
  },
} as const

const errorSchema = {
  $id: 'Error',
  type: 'object',
  description: 'An error answer (fastify\'s default error shape).',
  required: ['statusCode', 'message'],
  properties: {
    statusCode: { type: 'integer' },
    code: { type: 'string' },
    error: { type: 'string' },
    message: { type: 'string' },
  },
} as const

/**
 * Builds the role service. It does not listen: call `app.listen()` or use `app.inject()`.
 * @returns a ready-to-listen fastify instance (plugins registered, routes declared).
 */
export async function createRoleService(options: RoleServiceOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: options.logger ?? false })
  const roles = new Map<string, Role>(SEED_ROLES.map((r) => [r.code, { ...r }]))

  app.addSchema(roleSchema)
  app.addSchema(roleInputSchema)
  app.addSchema(errorSchema)

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'Role service', description: 'The sample upstream REST API of the Tributary demo (`system` data source).', version: '1.0.0' },
      servers: [{ url: DEFAULT_ROLE_SERVICE_URL }],
      tags: [{ name: 'role', description: 'Roles' }],
    },
    // Shared schemas keep their `$id` as their component name (`#/components/schemas/Role`).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  })

  app.get('/api/v1/role/all', {
    schema: {
      operationId: 'getAllRoles',
      summary: 'Lists every role.',
      tags: ['role'],
      response: { 200: { description: 'Every role, in creation order.', type: 'array', items: { $ref: 'Role#' } } },
    },
  }, async () => [...roles.values()])

  app.get<{ Params: { code: string } }>('/api/v1/role/:code', {
    schema: {
      operationId: 'getRoleByCode',
      summary: 'Finds one role by its code.',
      tags: ['role'],
      params: { type: 'object', required: ['code'], properties: { code: { type: 'string', description: 'The role code.' } } },
      response: {
        200: { description: 'The role.', $ref: 'Role#' },
        404: { description: 'No role has this code.', $ref: 'Error#' },
      },
    },
  }, async (req, reply) => {
    const role = roles.get(req.params.code)
    if (!role) return reply.code(404).send({ statusCode: 404, error: 'Not Found', message: `Role ${req.params.code} not found` })
    return role
  })

  app.post<{ Body: { code: string; remark?: string } }>('/api/v1/role', {
    schema: {
      operationId: 'createRole',
      summary: 'Creates a role.',
      tags: ['role'],
      body: { $ref: 'RoleInput#' },
      response: {
        201: { description: 'The created role.', $ref: 'Role#' },
        409: { description: 'A role with this code exists.', $ref: 'Error#' },
      },
    },
  }, async (req, reply) => {
    const { code, remark = '' } = req.body
    if (roles.has(code)) return reply.code(409).send({ statusCode: 409, error: 'Conflict', message: `Role ${code} already exists` })
    const role = { code, remark }
    roles.set(code, role)
    return reply.code(201).send(role)
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => {
    const doc = app.swagger() as unknown as Record<string, unknown>
    return { ...doc, servers: [{ url: options.serverUrl ?? listeningUrl(app) ?? DEFAULT_ROLE_SERVICE_URL }] }
  })

  return app
}

/** `http://host:port` of a listening instance, or undefined when it does not listen. */
function listeningUrl(app: FastifyInstance): string | undefined {
  const address = app.server.address()
  if (!address || typeof address === 'string') return undefined
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return `http://${host}:${address.port}`
}

/**
 * The document the service serves, with `servers[0].url` = {@link DEFAULT_ROLE_SERVICE_URL}: the
 * content of the committed `datasources/system/openapi.json`, as pretty JSON ending with a newline.
 */
export async function renderRoleServiceOpenApi(): Promise<string> {
  const app = await createRoleService({ serverUrl: DEFAULT_ROLE_SERVICE_URL })
  try {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' })
    return `${JSON.stringify(res.json(), null, 2)}\n`
  } finally {
    await app.close()
  }
}

function isMain(): boolean {
  if (!process.argv[1]) return false
  try {
    return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
}

async function main(): Promise<void> {
  const flag = process.argv.indexOf('--write-openapi')
  if (flag !== -1) {
    const target = resolve(process.cwd(), process.argv[flag + 1] ?? 'datasources/system/openapi.json')
    await writeFile(target, await renderRoleServiceOpenApi())
    console.log(`Wrote ${target}`)
    return
  }
  const port = Number(process.env.ROLE_SERVICE_PORT ?? 4001)
  const host = process.env.HOST ?? '127.0.0.1'
  const app = await createRoleService({ logger: { level: process.env.LOG_LEVEL ?? 'info' } })
  const shutdown = (): void => { void app.close().then(() => process.exit(0)) }
  process.once('SIGINT', shutdown)
  process.once('SIGTERM', shutdown)
  await app.listen({ port, host })
  console.log(`Role service listening at ${listeningUrl(app) ?? `http://${host}:${port}`} (OpenAPI: /openapi.json)`)
}

if (isMain()) {
  main().catch((err: unknown) => {
    console.error(err)
    process.exit(1)
  })
}
