/**
 * Memory of cached documents. A document parsed by graphql-js keeps, through every node's `loc`, the
 * lexer's whole token chain (each token with `prev`, `next` and its `value` string): for a cached
 * document that is several times the size of the AST itself, and all of it is dead once the
 * document is validated. {@link slimLocations} replaces each `loc` with the part that errors read
 * later: `start`/`end` offsets and the `source` (graphql-js `GraphQLError` locations), and the start
 * token's `line`/`column` (graphql-jit's error locations).
 */
import type { ASTNode, DocumentNode, Location } from 'graphql'

/** The part of a `Location` kept for a cached document. */
interface SlimLocation {
  readonly start: number
  readonly end: number
  readonly source: Location['source']
  readonly startToken: { readonly line: number; readonly column: number }
}

function slim(loc: Location): SlimLocation {
  return { start: loc.start, end: loc.end, source: loc.source, startToken: { line: loc.startToken.line, column: loc.startToken.column } }
}

function walk(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) walk(item)
    return
  }
  if (value === null || typeof value !== 'object' || typeof (value as { kind?: unknown }).kind !== 'string') return
  const node = value as { -readonly [K in keyof ASTNode]: ASTNode[K] } & Record<string, unknown>
  for (const key of Object.keys(node)) {
    if (key === 'loc') {
      if (node.loc && node.loc.startToken) node.loc = slim(node.loc) as unknown as Location
    } else walk(node[key])
  }
}

/**
 * Replaces, in place, every `loc` of a parsed document with a {@link SlimLocation}, so that the
 * lexer's tokens can be collected. Error locations (graphql-js and graphql-jit) stay exact.
 * @returns the same document.
 */
export function slimLocations<T extends DocumentNode>(document: T): T {
  walk(document)
  return document
}
