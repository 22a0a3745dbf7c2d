/**
 * The console's traffic recorder (gateway/observability/traffic.ts): its bound on distinct keys
 * (MAX_KEYS; further keys count as `(other)`), keys already known still counted under their name.
 */
import t from 'tap'
import { MAX_KEYS, TrafficRecorder } from '../gateway/observability/traffic.js'

t.test('attack: at most MAX_KEYS operation names, the rest counted as (other)', async (t) => {
  const recorder = new TrafficRecorder()
  const now = Date.now()
  for (let i = 0; i < MAX_KEYS + 50; i++) recorder.operation(`op${i}`, 1, false, now)
  recorder.operation('op0', 1, true, now)
  recorder.operation(`op${MAX_KEYS + 60}`, 1, false, now)
  const ops = recorder.snapshot(now).operations
  t.equal(ops.length, MAX_KEYS + 1, 'MAX_KEYS names and (other)')
  t.equal(ops.find((o) => o.name === '(other)')?.count, 51, 'the names past the bound count under (other)')
  const op0 = ops.find((o) => o.name === 'op0')
  t.equal(op0?.count, 2, 'a known name is still counted under its name past the bound')
  t.equal(op0?.errorRate, 0.5)
  t.notOk(ops.some((o) => o.name === `op${MAX_KEYS}`), 'no name past the bound has its own series')
})
