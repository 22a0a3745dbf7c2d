/**
 * The guard of raw SQL (`queryRaw` / `executeRaw`, a source's `rawSql: true`) on SQLite: a client's
 * statement may read and write the tables of the source's database, but never reach another file or
 * load code. Refused, with 400 `TRB_ERR_DB_RAW_REFUSED`, on every deployment that enables raw SQL:
 *
 * - `ATTACH` / `DETACH` (open any file the gateway's user can read or write as a database);
 * - `VACUUM INTO` (writes a copy of the database to any path);
 * - `load_extension()` (loads a shared library: native code; SQLite already answers "not authorized",
 *   since better-sqlite3 enables extension loading for its C API only, and "unsafe use" inside a
 *   trigger, view or CHECK, since the function is SQLITE_DIRECTONLY; the guard relies on neither);
 * - every `PRAGMA` statement: a pragma changes the connection, and the connections (the worker
 *   processes) serve the gateway's other requests afterwards (`foreign_keys = OFF`, `writable_schema`,
 *   `journal_mode`...). The read-only pragmas stay readable as table-valued functions
 *   (`SELECT * FROM pragma_table_info('todo')`).
 *
 * Two independent checks, neither of them a regular expression over the text (comments, quoting, case
 * and whitespace cannot hide a statement from them):
 * 1. {@link rawSqliteRefusal}, before the statement is sent anywhere: a SQLite tokenizer (comments,
 *    string literals, quoted identifiers `"…"`, `[…]`, `` `…` ``) reads the statement's first keyword
 *    and every name it uses — so a `CREATE TRIGGER`/`VIEW` or a `CHECK` that would call
 *    `load_extension` later is refused too;
 * 2. {@link explainRefusal}, on the connection that runs the statement, right before it runs: SQLite
 *    compiles `EXPLAIN <statement>` (its own parser, trigger programs included) and the bytecode is
 *    searched for a call of those functions (`ATTACH` compiles to `sqlite_attach()`) and for
 *    `Vacuum` with a target file.
 *
 * better-sqlite3 runs one statement per `prepare` (a second one is an error), so `SELECT 1; ATTACH …`
 * never runs the second statement; it exposes no `sqlite3_set_authorizer`, hence these two checks.
 */
import { DbRawRefusedError } from '../../errors.js'

/** SQL functions that reach files or code; a raw statement that names one is refused. */
const REFUSED_FUNCTIONS = new Set(['load_extension', 'sqlite_attach', 'sqlite_detach'])

/** One token of a SQLite statement: a bare word (keyword or name), a quoted name, or punctuation. */
interface Token {
  kind: 'word' | 'name' | 'punct'
  /** Lower case for words; unquoted (escapes resolved) for names. */
  text: string
}

/**
 * Splits a SQLite statement into tokens, dropping whitespace, `--` and `/* *\/` comments and string
 * literals (their contents are data, never names), following SQLite's tokenizer (tokenize.c): quoted
 * names `"…"`, `[…]` and `` `…` `` with doubled quotes as escapes; an unterminated literal, name or
 * comment runs to the end of the text.
 */
export function sqliteTokens(sql: string): Token[] {
  const out: Token[] = []
  let i = 0
  const n = sql.length
  while (i < n) {
    const c = sql[i]!
    if (/\s/.test(c)) {
      i++
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i)
      i = end < 0 ? n : end + 1
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2)
      i = end < 0 ? n : end + 2
    } else if (c === "'" || c === '"' || c === '`' || c === '[') {
      const close = c === '[' ? ']' : c
      let j = i + 1
      let text = ''
      while (j < n) {
        if (sql[j] === close) {
          if (close !== ']' && sql[j + 1] === close) {
            text += close
            j += 2
            continue
          }
          break
        }
        text += sql[j]
        j++
      }
      i = j + 1
      if (c !== "'") out.push({ kind: 'name', text })
    } else if (/[\p{L}\p{N}_$]/u.test(c) || c.charCodeAt(0) > 0x7f) {
      let j = i + 1
      while (j < n && (/[\p{L}\p{N}_$]/u.test(sql[j]!) || sql.charCodeAt(j) > 0x7f)) j++
      out.push({ kind: 'word', text: sql.slice(i, j).toLowerCase() })
      i = j
    } else {
      out.push({ kind: 'punct', text: c })
      i++
    }
  }
  return out
}

/**
 * The reason `sql` may not run as raw SQL on SQLite, or null when it may (check 1 of the module doc).
 * @param sql one statement, as the client sent it
 */
export function rawSqliteRefusal(sql: string): string | null {
  // Every statement of the text (better-sqlite3 runs only the first, but the guard does not rely on it).
  const statements: Token[][] = [[]]
  for (const t of sqliteTokens(sql)) {
    if (t.kind === 'punct' && t.text === ';') statements.push([])
    else statements.at(-1)!.push(t)
  }
  for (const tokens of statements) {
    const first = tokens[0]?.kind === 'word' ? tokens[0].text : ''
    if (first === 'attach' || first === 'detach') return `${first.toUpperCase()} opens or closes another database file`
    if (first === 'pragma') return 'PRAGMA statements change the connection the gateway shares; read pragmas with their table-valued functions (SELECT * FROM pragma_table_info(...))'
    if (first === 'vacuum' && tokens.some((t) => t.kind === 'word' && t.text === 'into')) return 'VACUUM INTO writes a copy of the database to another file'
    const fn = tokens.find((t) => (t.kind === 'word' || t.kind === 'name') && REFUSED_FUNCTIONS.has(t.text.toLowerCase()))
    if (fn) return `${fn.text.toLowerCase()}() reaches files or code`
  }
  return null
}

/**
 * Check 2 of the module doc, on the better-sqlite3 connection `db` that is about to run `sql`: the
 * reason to refuse it, or null. A statement SQLite cannot compile under `EXPLAIN` (one that is itself
 * an `EXPLAIN`, or a syntax error) is left to fail or run on its own: such a statement runs nothing.
 * Self-contained (no closure, no import): its source text also runs in the SQLite worker processes.
 */
export function explainRefusal(db: { prepare(sql: string): { all(): unknown[] } }, sql: string): string | null {
  let rows: { opcode: string; p2: number; p4: unknown }[]
  try {
    rows = db.prepare('EXPLAIN ' + sql).all() as typeof rows
  } catch {
    return null
  }
  for (const row of rows) {
    if (row.opcode === 'Vacuum' && row.p2 !== 0) return 'VACUUM INTO writes a copy of the database to another file'
    const call = typeof row.p4 === 'string' ? /^([A-Za-z_]+)\(/.exec(row.p4) : null
    if (call && ['load_extension', 'sqlite_attach', 'sqlite_detach'].includes(call[1]!.toLowerCase())) return `${call[1]!.toLowerCase()}() reaches files or code`
  }
  return null
}

/**
 * Throws when `sql` may not run as raw SQL on SQLite (check 1).
 * @throws DbRawRefusedError (400 `TRB_ERR_DB_RAW_REFUSED`) naming the reason
 */
export function assertRawSqliteAllowed(sql: string): void {
  const reason = rawSqliteRefusal(sql)
  if (reason) throw new DbRawRefusedError(reason)
}
