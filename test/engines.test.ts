/**
 * `engines.node` in package.json is honest: every package that package-lock.json installs accepts the
 * oldest Node version we declare, so a fresh `npm ci` on that version prints no `EBADENGINE`.
 * (npm checks `engines` against `package-lock.json`'s recorded `engines`, which is what we read here.)
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import semver from 'semver'

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }
const lock = JSON.parse(readFileSync(new URL('../package-lock.json', import.meta.url), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[]; optional?: boolean; dev?: boolean }>
}

t.test('every locked package supports the oldest declared Node version', async (t) => {
  const oldest = semver.minVersion(pkg.engines.node)
  t.ok(oldest, `engines.node "${pkg.engines.node}" has a minimum`)
  const bad: string[] = []
  for (const [where, entry] of Object.entries(lock.packages)) {
    if (!where) continue
    const range = entry.engines && !Array.isArray(entry.engines) ? entry.engines.node : undefined
    if (range && !semver.satisfies(oldest!, range, { includePrerelease: true })) bad.push(`${where}@${entry.version} wants node ${range}`)
  }
  t.same(bad, [], `all packages accept node ${oldest}`)
})

t.test('the running Node satisfies engines.node', async (t) => {
  t.ok(semver.satisfies(process.version, pkg.engines.node), `${process.version} satisfies ${pkg.engines.node}`)
})

t.test('the runtime @graphql-tools packages share one @graphql-tools/utils', async (t) => {
  // A nested copy under each of them (npm's choice when the root pins an older release than the
  // newest their range allows) loaded about 650 more modules into every gateway process, and two
  // copies of the utils' classes and symbols in one schema. package.json pins the root copy.
  const nested = Object.keys(lock.packages).filter((where) =>
    /^node_modules\/@graphql-tools\/(batch-delegate|batch-execute|delegate|executor|executor-common|executor-graphql-ws|executor-http|federation|merge|schema|stitch|stitching-directives|wrap)\/node_modules\/@graphql-tools\/utils$/.test(where),
  )
  t.same(nested, [], 'no nested @graphql-tools/utils under the packages the gateway runs')
})
