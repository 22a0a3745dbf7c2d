/** The graphql-http audit suite (GraphQL over HTTP spec) against the running demo: no errors allowed. */
import t from 'tap'
import { serverAudits } from 'graphql-http'
import { startDemo } from './helpers/demo.js'

t.test('GraphQL over HTTP audit', async (t) => {
  const { url } = await startDemo(t, { listen: true })
  const results: Record<string, number> = { ok: 0, warn: 0, error: 0, notice: 0 }
  const problems: string[] = []
  for (const audit of serverAudits({ url: `${url}/graphql`, fetchFn: fetch })) {
    const result = await audit.fn()
    results[result.status]++
    if (result.status !== 'ok') problems.push(`${result.status} ${audit.id} ${audit.name}: ${result.reason}`)
  }
  t.comment(`audit: ${results.ok} ok, ${results.warn} warn, ${results.error} error`)
  for (const p of problems) t.comment(p)
  t.equal(results.error, 0, 'no audit errors')
  t.ok(results.ok >= 46, 'at least as many passes as bare mercurius')
})
