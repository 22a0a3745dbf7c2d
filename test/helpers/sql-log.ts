/**
 * Test helper: a pino destination that collects the SQL text of the gateway's debug `sql` log lines
 * (one per statement sent), so that tests can count the statements a request runs.
 */
import { Writable } from 'node:stream'

/** `stream` for `pino({ level: 'debug' }, stream)`; `statements` fills with each statement's SQL, in order. */
export function sqlLog(): { stream: Writable; statements: string[] } {
  const statements: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) {
        if (!line) continue
        const o = JSON.parse(line) as { msg?: string; sql?: string }
        if (o.msg === 'sql' && o.sql) statements.push(o.sql)
      }
      cb()
    },
  })
  return { stream, statements }
}
