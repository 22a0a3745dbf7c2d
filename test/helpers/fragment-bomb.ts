/**
 * Test helper: fragment bombs (issue 22). Each fragment spreads the next one twice, so a document of
 * `levels` fragments (about 45 bytes each) stands for 2^levels copies of the last one: a walk that
 * follows spreads without remembering them visits them all.
 */

/** What a bomb selects: a root field and its type, or the root type itself (`{ ...T0 }`). */
export interface BombShape {
  /** The fragments' type condition (`todo_Todo`, `Query`). */
  on: string
  /** The root field whose selection spreads `T0`; undefined for a Query-rooted bomb. */
  root?: string
  /** The last fragment's selection. */
  leaf: string
}

/** The bomb's fragment definitions, `T0` … `T<levels>`. */
export function bombFragments(levels: number, shape: BombShape): string {
  const fragments: string[] = []
  for (let i = 0; i < levels; i++) fragments.push(`fragment T${i} on ${shape.on} { ...T${i + 1} ...T${i + 1} }`)
  fragments.push(`fragment T${levels} on ${shape.on} { ${shape.leaf} }`)
  return fragments.join('\n')
}

/** A whole document: operation `name` (distinct names make distinct documents, never cached) and the fragments. */
export function fragmentBomb(levels: number, shape: BombShape, name = 'Bomb'): string {
  return `query ${name} { ${shape.root ? `${shape.root} { ...T0 }` : '...T0'} }\n${bombFragments(levels, shape)}`
}

/** The demo's shapes: a database type, a local one (graphql-js executes it), and the query type. */
export const DEMO_BOMBS = {
  todo: { on: 'todo_Todo', root: 'todo_findManyTodo', leaf: 'id' },
  message: { on: 'Message', root: 'messages', leaf: 'id' },
  query: { on: 'Query', leaf: 'todo_findManyTodo { id }' },
} satisfies Record<string, BombShape>

/**
 * A document of `spreads` fragments spread side by side in one selection set (`{ todo_findManyTodo {
 * ...F0 ...F1 … } }`), each its own fragment: no copy, but graphql-js' OverlappingFieldsCanBeMergedRule
 * compares them pairwise.
 */
export function wideSpreads(spreads: number, name = 'Wide'): string {
  const names = Array.from({ length: spreads }, (_, i) => `F${i}`)
  return `query ${name} { todo_findManyTodo { ${names.map((n) => `...${n}`).join(' ')} } }\n${names.map((n) => `fragment ${n} on todo_Todo { id title }`).join('\n')}`
}
