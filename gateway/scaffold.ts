/**
 * `tributary init`: scaffolds a Tributary project in a folder —
 *
 * - `tributary.config.ts`: one database source (`--database <url>`), or a small local schema source;
 * - `operations/Example.graphql`: a stored operation; with a database it reads a real table of it
 *   (the first model, in name order, that has scalar columns), so it works at once;
 * - a `generated/sources` line in `.gitignore` (cached introspection is machine-specific);
 * - `start`, `dev` and `generate` scripts in `package.json` (created when missing).
 *
 * Existing files are kept unless `force` is set; every action is reported through `log`.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { getNamedType, isLeafType, isObjectType, type GraphQLField } from 'graphql'
import { pino } from 'pino'
import { database, resolveConfig } from './config/index.js'
import { checkDatabase } from './database-check.js'

/** Options of {@link scaffold}. */
export interface ScaffoldOptions {
  /** The project folder (absolute). */
  cwd: string
  /** A database URL (`sqlite:./app.db`, `postgres://…`, `mysql://…`); without it, a local schema source. */
  database?: string
  /** The database source's namespace. Default: {@link namespaceFromUrl}. */
  namespace?: string
  /** Overwrite `tributary.config.ts` and `operations/Example.graphql` when they exist. */
  force: boolean
  /** Receives one line per action. */
  log(line: string): void
}

/**
 * A GraphQL-safe namespace from a database URL: the SQLite file's base name or the server
 * database's name (`sqlite:./my-app.db` → `my_app`, `postgres://h/shop` → `shop`), `db` when empty.
 * The result matches `^[_A-Za-z][_0-9A-Za-z]*$`, has no `__` and does not end with `_`.
 */
export function namespaceFromUrl(url: string): string {
  let name: string
  if (url.startsWith('sqlite:')) {
    name = basename(url.slice('sqlite:'.length)).replace(/\.[^.]*$/, '')
  } else {
    try {
      name = decodeURIComponent(new URL(url).pathname.replace(/^\/+/, '').split('/')[0] ?? '')
    } catch {
      name = ''
    }
  }
  let ns = name.replace(/[^0-9A-Za-z]+/g, '_').replace(/_+/g, '_').replace(/^_+|_+$/g, '')
  if (/^[0-9]/.test(ns)) ns = `db_${ns}`
  return ns || 'db'
}

function configText(url: string | undefined, namespace: string): string {
  if (url) {
    return `/**
 * The Tributary deployment of this project: \`npx tributary dev\` serves it, \`npx tributary generate\`
 * writes generated/. Every option is documented on defineConfig's types.
 */
import { database, defineConfig } from 'tributary-gateway'

export default defineConfig({
  datasources: [
    database({ namespace: ${JSON.stringify(namespace)}, url: process.env.DATABASE_URL || ${JSON.stringify(url)} }),
  ],
})
`
  }
  return `/**
 * The Tributary deployment of this project: \`npx tributary dev\` serves it, \`npx tributary generate\`
 * writes generated/. Add data sources with database(), rest(), graphql() and schema().
 */
import { defineConfig, schema } from 'tributary-gateway'

export default defineConfig({
  datasources: [
    schema({
      namespace: 'hello',
      typeDefs: 'type Query { greeting(name: String = "world"): String! }',
      resolvers: { Query: { greeting: (_: unknown, args: { name: string }) => \`Hello, \${args.name}!\` } },
    }),
  ],
})
`
}

/** The example operation for a database: `findMany` of its first model with scalar columns. */
async function databaseOperation(cwd: string, url: string, namespace: string, log: (line: string) => void): Promise<string> {
  const config = resolveConfig({ datasources: [database({ namespace, url })], operations: { dir: join(cwd, 'operations') }, generatedDir: join(cwd, 'generated') })
  // Loaded here, after the database was checked: a refused --database answers without the gateway.
  const { createGateway } = await import('./runtime.js')
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }), cwd })
  try {
    const fields = Object.values(gateway.schema.getQueryType()?.getFields() ?? {})
      .filter((f) => f.name.startsWith(`${namespace}_findMany`))
      .sort((a, b) => a.name.localeCompare(b.name))
    const leavesOf = (f: GraphQLField<unknown, unknown>) => {
      const type = getNamedType(f.type)
      return isObjectType(type) ? Object.values(type.getFields()).filter((x) => isLeafType(getNamedType(x.type)) && x.args.length === 0).map((x) => x.name) : []
    }
    const field = fields.find((f) => leavesOf(f).length > 0)
    if (!field) {
      log('  ! the database has no table yet: operations/Example.graphql asks for __typename only')
      return `# An example stored operation: GET /operations/Example\nquery Example {\n  __typename\n}\n`
    }
    const columns = leavesOf(field).slice(0, 6)
    log(`  reads ${field.name} (${columns.join(', ')})`)
    return `# An example stored operation: GET /operations/Example?take=5 answers the data object.
query Example($take: Int = 10) {
  ${field.name}(take: $take) {
${columns.map((c) => `    ${c}`).join('\n')}
  }
}
`
  } finally {
    await gateway.close()
  }
}

function writeUnlessPresent(file: string, text: string, options: ScaffoldOptions, shown: string): void {
  if (existsSync(file) && !options.force) {
    options.log(`  kept ${shown} (it exists; --force overwrites it)`)
    return
  }
  writeFileSync(file, text)
  options.log(`  wrote ${shown}`)
}

/**
 * Scaffolds a project in `options.cwd` (see the module comment).
 * @throws Error (TRB_ERR_SOURCE_LOAD…) when `--database` cannot be reached or introspected, or has no tables
 *   (database-check.ts); nothing is written then.
 */
export async function scaffold(options: ScaffoldOptions): Promise<void> {
  const { cwd, log } = options
  const namespace = options.namespace ?? (options.database ? namespaceFromUrl(options.database) : 'hello')
  // Read the database first: a bad URL, a missing file or a database without tables fails before anything is written.
  if (options.database) await checkDatabase(options.database, namespace, cwd)
  log(`Scaffolding a Tributary project in ${cwd}`)
  const operation = options.database
    ? await databaseOperation(cwd, options.database, namespace, log)
    : `# An example stored operation: GET /operations/Example?name=you\nquery Example($name: String = "world") {\n  hello_greeting(name: $name)\n}\n`

  writeUnlessPresent(join(cwd, 'tributary.config.ts'), configText(options.database, namespace), options, 'tributary.config.ts')
  mkdirSync(join(cwd, 'operations'), { recursive: true })
  writeUnlessPresent(join(cwd, 'operations', 'Example.graphql'), operation, options, 'operations/Example.graphql')

  const gitignore = join(cwd, '.gitignore')
  const ignored = existsSync(gitignore) ? readFileSync(gitignore, 'utf8') : ''
  if (ignored.split(/\r?\n/).some((line) => line.trim().replace(/\/$/, '') === 'generated/sources')) {
    log('  kept .gitignore (it already ignores generated/sources)')
  } else {
    writeFileSync(gitignore, `${ignored}${ignored && !ignored.endsWith('\n') ? '\n' : ''}# Tributary: cached introspection of the data sources\ngenerated/sources\n`)
    log(`  ${ignored ? 'added generated/sources to' : 'wrote'} .gitignore`)
  }

  const pkgFile = join(cwd, 'package.json')
  const pkg = existsSync(pkgFile)
    ? (JSON.parse(readFileSync(pkgFile, 'utf8')) as { scripts?: Record<string, string> } & Record<string, unknown>)
    : { name: namespaceFromUrl(`sqlite:${basename(cwd)}`).toLowerCase(), private: true, type: 'module' }
  const scripts: Record<string, string> = { ...(pkg.scripts ?? {}) }
  const wanted: Record<string, string> = { start: 'tributary start', dev: 'tributary dev', generate: 'tributary generate' }
  const added = Object.keys(wanted).filter((k) => !(k in scripts) || options.force)
  for (const k of added) scripts[k] = wanted[k]
  writeFileSync(pkgFile, `${JSON.stringify({ ...pkg, scripts }, null, 2)}\n`)
  log(`  ${added.length ? `added the scripts ${added.join(', ')} to` : 'kept the scripts of'} package.json`)
  log('')
  log('Next: npx tributary dev   (then open http://127.0.0.1:4000/graphql, or GET /operations/Example)')
}
