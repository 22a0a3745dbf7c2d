/**
 * A throw-away TypeScript project for a generated client: `client.ts` and `main.ts` in a temp
 * directory, with the package linked as `node_modules/tributary-gateway` (so `tributary-gateway/client` resolves as
 * in a user's project) and the repository's compiler options under `strict`.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository root. */
export const root = fileURLToPath(new URL('../..', import.meta.url))
const tsc = join(root, 'node_modules/typescript/bin/tsc')

/** A client project: its directory, and `typecheck(main)` that writes `main.ts` (or `.tsx`) and runs tsc on every file. */
export interface ClientProject {
  dir: string
  /** Writes `main.ts` and runs `tsc --noEmit`; `status` 0 means it type-checks, `output` is tsc's stdout and stderr. */
  typecheck(main: string): { status: number | null; output: string }
  /**
   * One tsc run for two programs: `main.ts` as given and `strict.ts`, the same program without its
   * `// @ts-expect-error` lines (whose wrong calls must then fail). Each side gets the diagnostics of
   * its own files (`main` also any global one); `status` 0 means no diagnostic. `main.ts` stays written.
   */
  typecheckWithStrict(main: string): { main: { status: number; output: string }; strict: { status: number; output: string } }
}

/** More of a client project: other generated files, packages of the repository, JSX. */
export interface ClientProjectOptions {
  /** Files written beside `client.ts` and compiled with it, by path in the project (`react.ts`, `other/client.ts`). */
  files?: Record<string, string>
  /** Packages of the repository's node_modules linked into the project's (`react`, `@types/react`). */
  packages?: string[]
  /** The main program's extension: `.tsx` compiles it with the classic JSX runtime (`jsx: react`). Default `.ts`. */
  mainExtension?: '.ts' | '.tsx'
}

/**
 * Creates the project with `clientSource` as `client.ts`; it is removed at teardown.
 * @param t anything with `teardown` (a tap test)
 */
export function clientProject(t: { teardown(fn: () => void): void }, clientSource: string, options: ClientProjectOptions = {}): ClientProject {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-client-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'client.ts'), clientSource)
  for (const [name, content] of Object.entries(options.files ?? {})) {
    mkdirSync(dirname(join(dir, name)), { recursive: true })
    writeFileSync(join(dir, name), content)
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
  mkdirSync(join(dir, 'node_modules'))
  symlinkSync(root, join(dir, 'node_modules', 'tributary-gateway'), 'dir')
  for (const pkg of options.packages ?? []) {
    mkdirSync(dirname(join(dir, 'node_modules', pkg)), { recursive: true })
    symlinkSync(join(root, 'node_modules', pkg), join(dir, 'node_modules', pkg), 'dir')
  }
  const ext = options.mainExtension ?? '.ts'
  const sources = ['client.ts', ...Object.keys(options.files ?? {})]
  const projectConfig = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> }
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        ...projectConfig.compilerOptions,
        noEmit: true,
        incremental: false,
        outDir: undefined,
        rootDir: undefined,
        tsBuildInfoFile: undefined,
        types: ['node'],
        typeRoots: [join(root, 'node_modules/@types')],
        ...(ext === '.tsx' ? { jsx: 'react' } : {}),
      },
      files: [...sources, `main${ext}`],
    }),
  )
  return {
    dir,
    typecheck(main) {
      writeFileSync(join(dir, `main${ext}`), main)
      const r = spawnSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' })
      return { status: r.status, output: `${r.stdout}${r.stderr}` }
    },
    typecheckWithStrict(main) {
      writeFileSync(join(dir, `strict${ext}`), main.replace(/\/\/ @ts-expect-error.*\n/g, ''))
      const config = JSON.parse(readFileSync(join(dir, 'tsconfig.json'), 'utf8')) as { files: string[] }
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ ...config, files: [...sources, `main${ext}`, `strict${ext}`] }))
      const r = this.typecheck(main)
      // A diagnostic starts at a line without indentation; its continuation lines are indented.
      const diagnostics = r.output.split(/\n(?=\S)/).filter((d) => d.trim())
      const side = (ds: string[]) => ({ status: ds.length ? 1 : 0, output: ds.join('\n') })
      if (r.status !== 0 && !diagnostics.length) return { main: { status: r.status ?? 1, output: r.output }, strict: side([]) }
      // tsc names files relative to the working directory (../../tmp/…/strict.ts(7,9): error …).
      const inStrict = (d: string) => /^(\S*\/)?strict\.tsx?\(/.test(d)
      return { main: side(diagnostics.filter((d) => !inStrict(d))), strict: side(diagnostics.filter(inStrict)) }
    },
  }
}
