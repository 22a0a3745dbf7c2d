/**
 * SQL fragments with their bound parameters. A parameter is a getter evaluated at run time from the
 * request's variables (`vars`) and the resolver's extra values (`extra`, e.g. a primary key read back
 * after an insert). Fragments are joined in text order, so parameters always follow placeholders.
 */

/** The request's coerced variable values. */
export type Vars = Record<string, unknown>

/** Reads one bound value at run time. */
export type Getter = (vars: Vars, extra: readonly unknown[]) => unknown

/** A piece of SQL with `?` placeholders and the getters for them, in order. */
export interface Frag {
  s: string
  p: Getter[]
}

/** A fragment of plain SQL without parameters. */
export function raw(s: string): Frag {
  return { s, p: [] }
}

/** A single placeholder bound to `get`. */
export function param(get: Getter): Frag {
  return { s: '?', p: [get] }
}

/** A placeholder bound to a constant. */
export function constant(value: unknown): Frag {
  return { s: '?', p: [() => value] }
}

/** Joins fragments (or plain strings) with `sep`. */
export function join(parts: readonly (Frag | string)[], sep = ''): Frag {
  const p: Getter[] = []
  const s: string[] = []
  for (const part of parts) {
    if (typeof part === 'string') s.push(part)
    else {
      s.push(part.s)
      for (const g of part.p) p.push(g)
    }
  }
  return { s: s.join(sep), p }
}

/** Template tag: `sql\`a = ${frag}\`` joins text and fragments (strings are inserted as SQL text). */
export function sql(strings: TemplateStringsArray, ...values: (Frag | string)[]): Frag {
  const parts: (Frag | string)[] = []
  strings.forEach((str, i) => {
    parts.push(str)
    if (i < values.length) parts.push(values[i]!)
  })
  return join(parts)
}
