/**
 * The response cache's memos (gateway/cluster/response-cache.ts) are bounded whatever the client
 * sends: a credential-less request's key is memoised only for variables of at most 512 characters
 * (1000 per operation text), so 2000 requests with distinct 10 KB variables keep no key in memory,
 * and a key is the same whether it came from the memo or was hashed.
 */
import t from 'tap'
import { createCluster } from '../gateway/cluster/index.js'
import { ResponseCache } from '../gateway/cluster/response-cache.js'

t.test('attack: distinct large variables do not grow the key memo; small ones are bounded per text', async (t) => {
  const cluster = createCluster({ keyPrefix: 'memo-test:', commandTimeoutMs: 1000 })
  t.teardown(() => cluster.close())
  const cache = new ResponseCache(cluster)
  const memo = () => (cache as unknown as { anonymousKeys: Map<string, Map<string, string>> }).anonymousKeys
  const policy = { maxAge: 60 }
  const text = 'query Q($s: String) { hello(s: $s) }'
  for (let i = 0; i < 2000; i++) await cache.lookup(text, { s: `${i}:${'x'.repeat(10_000)}` }, {}, [], policy)
  t.equal(memo().get(text)?.size ?? 0, 0, 'no key of 10 KB variables is kept')
  for (let i = 0; i < 2500; i++) await cache.lookup(text, { s: String(i) }, {}, [], policy)
  t.ok((memo().get(text)?.size ?? 0) <= 1000, 'at most 1000 small variables per text')
  const first = await cache.lookup(text, { s: 'same' }, {}, [], policy)
  const again = await cache.lookup(text, { s: 'same' }, {}, [], policy)
  const hashed = await cache.lookup(text, { s: 'same' }, { authorization: undefined, cookie: undefined }, [], policy)
  t.equal(again?.key, first?.key, 'the memoised key is the hashed one')
  t.equal(hashed?.key, first?.key)
  const withToken = await cache.lookup(text, { s: 'same' }, { authorization: 'Bearer x' }, [], policy)
  t.not(withToken?.key, first?.key, 'credentials make another key')
})
