/**
 * Test helper: a pino destination that collects the SQL text of the gateway's debug `sql` log lines
 * (one per statement sent), so that tests can count the statements a request runs.
 */
import { Writable } from 'node:stream'

/**
 * `stream` for `pino({ level: 'debug' }, stream)`; `statements` fills with each statement's SQL, in order, and
 * `onStatement` (when given) gets each one with its `worker` field (SQLite files: true when it ran in a worker process).
 */
export function sqlLog(onStatement?: (s: { sql: string; worker?: boolean }) => void): { stream: Writable; statements: string[] } {
  const statements: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) {
        if (!line) continue
        const o = JSON.parse(line) as { msg?: string; sql?: string; worker?: boolean }
        if (o.msg !== 'sql' || !o.sql) continue
        statements.push(o.sql)
        onStatement?.({ sql: o.sql, ...(o.worker !== undefined ? { worker: o.worker } : {}) })
      }
      cb()
    },
  })
  return { stream, statements }
}
