/**
 * The repository stands on its own: no file refers to a path outside it (or to the old design file),
 * and every repository path the documentation names exists (or is one the gateway creates at run time).
 */
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { repoRoot } from './helpers/chinook.js'

/** The repository's files: `git ls-files` in a clone, else a walk that skips what git ignores. */
function repositoryFiles(): string[] {
  try {
    return execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: repoRoot, encoding: 'utf8' }).split('\n').filter((f) => f && existsSync(join(repoRoot, f)))
  } catch {
    const out: string[] = []
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (['node_modules', 'dist', '.git', '.tap', 'data'].includes(e.name)) continue
        const p = join(dir, e.name)
        if (e.isDirectory()) walk(p)
        else out.push(relative(repoRoot, p))
      }
    }
    walk(repoRoot)
    return out
  }
}

const TEXT = /\.(ts|mjs|js|json|md|graphql|yaml|yml|sh|txt)$|^(\.ci\/run|\.taprc|\.gitignore)$/
// Spelled in pieces so that this file does not match itself; the comments of this file name none.
const FORBIDDEN = [['..', 'shared'].join('/'), ['/work', ''].join('/'), ['DESIGN', 'md'].join('.'), ['CHINOOK', 'FIXTURES', 'DIR'].join('_')]

t.test('no file refers to a path outside the repository', async (t) => {
  const files = repositoryFiles().filter((f) => TEXT.test(f) && f !== 'package-lock.json')
  t.ok(files.length > 100, `${files.length} text files`)
  const hits: string[] = []
  for (const f of files) {
    const text = readFileSync(join(repoRoot, f), 'utf8')
    for (const bad of FORBIDDEN) if (text.includes(bad)) hits.push(`${f}: ${bad}`)
  }
  t.same(hits, [], 'no reference to a directory beside the repository, the old design file or its fixture directory')
})

// Paths the gateway (its compile cache in node_modules/.cache), the build, the examples or the tests create at run time
// (git-ignored), which documentation may name.
const CREATED = /^(data|dist|node_modules\/\.cache|\.tap|generated\/sources|examples\/[\w-]+\/generated|examples\/auth\/\.keys|bench\/results)(\/|$)/
const TOP = new Set(readdirSync(repoRoot))
// Paths `tributary init` writes into a user's project (documented in the README, named in gateway/scaffold.ts).
const scaffold = existsSync(join(repoRoot, 'gateway/scaffold.ts')) ? readFileSync(join(repoRoot, 'gateway/scaffold.ts'), 'utf8') : ''

t.test('every repository path the documentation names exists', async (t) => {
  const docs = repositoryFiles().filter((f) => f.endsWith('.md'))
  t.ok(docs.includes('docs/architecture.md'), 'the design document is in the repository')
  const missing: string[] = []
  for (const doc of docs) {
    const text = readFileSync(join(repoRoot, doc), 'utf8')
    const base = doc.includes('/') ? doc.slice(0, doc.lastIndexOf('/')) : ''
    const tokens = [...text.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]!)
      .concat([...text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!))
    for (const raw of tokens) {
      const token = raw.replace(/[.,;:]$/, '')
      if (/[<>*…{}$?=|:@]/.test(token) || token.startsWith('-') || token.startsWith('/')) continue
      if (!/^[\w.-]+(\/[\w.-]+)*\/?$/.test(token) || !/\/|\.(md|ts|mjs|json|graphql|sqlite|gz)$/.test(token)) continue
      const path = token.replace(/\/$/, '')
      const candidates = [path, base ? join(base, path) : path]
      if (!TOP.has(path.split('/')[0]!) && !(base && existsSync(join(repoRoot, base, path)))) continue // not a repository path (a package, a URL part…)
      if (candidates.some((c) => CREATED.test(c) || existsSync(join(repoRoot, c))) || scaffold.includes(`\`${path}\``)) continue
      missing.push(`${doc}: ${token}`)
    }
  }
  t.same(missing, [], 'no documentation names a file that is not in the repository')
  t.ok(statSync(join(repoRoot, 'examples/chinook/sql/Chinook_PostgreSql.sql.gz')).size > 100_000, 'the Chinook dumps ship in examples/chinook/sql')
})
