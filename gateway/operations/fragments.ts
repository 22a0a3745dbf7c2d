/**
 * Fragment walks that cost time linear in a document's size, whatever its fragments spread: a
 * fragment that spreads the next one twice, 40 levels deep, stands for 2^40 copies of the last one,
 * and any walk that follows spreads into copies (rather than computing each fragment once) freezes
 * the event loop (issue 22). Used by the document limits and cost (http/limits.ts) and by the choice
 * of executor (jit-safety.ts).
 */
import { Kind, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql'

/**
 * The fragment definitions of a document in dependency order: each comes after every fragment it
 * spreads, so that a value computed per fragment (depth, cost) can be computed once, in this order,
 * reading the values of the fragments it spreads. Found without recursion over spreads (a chain of
 * fragments, each spreading the next, cannot overflow the stack); a fragment in a cycle comes before
 * the one that closes the cycle (NoFragmentCyclesRule reports cycles). Linear in the document's size.
 * The first definition of a name wins (UniqueFragmentNamesRule reports the others).
 */
export function fragmentsInDependencyOrder(document: DocumentNode): FragmentDefinitionNode[] {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION && !fragments.has(d.name.value)) fragments.set(d.name.value, d)
  const spreads = (frag: FragmentDefinitionNode): string[] => {
    const names: string[] = []
    const sets: SelectionSetNode[] = [frag.selectionSet]
    while (sets.length) {
      for (const sel of sets.pop()!.selections) {
        if (sel.kind === Kind.FRAGMENT_SPREAD) names.push(sel.name.value)
        else if (sel.selectionSet) sets.push(sel.selectionSet)
      }
    }
    return names
  }
  const order: FragmentDefinitionNode[] = []
  const state = new Map<string, 'open' | 'done'>()
  for (const first of fragments.values()) {
    if (state.has(first.name.value)) continue
    state.set(first.name.value, 'open')
    const stack: { frag: FragmentDefinitionNode; next: string[] }[] = [{ frag: first, next: spreads(first) }]
    while (stack.length) {
      const top = stack[stack.length - 1]
      const name = top.next.pop()
      if (name === undefined) {
        stack.pop()
        state.set(top.frag.name.value, 'done')
        order.push(top.frag)
        continue
      }
      const frag = fragments.get(name)
      if (!frag || state.has(name)) continue
      state.set(name, 'open')
      stack.push({ frag, next: spreads(frag) })
    }
  }
  return order
}

/**
 * The number of field selections of an operation once every fragment spread is replaced by a copy of
 * its fragment (what a walk that follows spreads without remembering them visits), computed without
 * copying: each fragment's count once, in dependency order. A fragment in a cycle counts 0 where it
 * closes the cycle. Exact up to 2^53; beyond it a float (possibly `Infinity`), which is only compared.
 */
export function expandedSelections(document: DocumentNode, operation: OperationDefinitionNode): number {
  const counts = new Map<string, number>()
  const count = (set: SelectionSetNode): number => {
    let n = 0
    for (const sel of set.selections) {
      if (sel.kind === Kind.FRAGMENT_SPREAD) n += counts.get(sel.name.value) ?? 0
      else n += (sel.kind === Kind.FIELD ? 1 : 0) + (sel.selectionSet ? count(sel.selectionSet) : 0)
    }
    return n
  }
  for (const frag of fragmentsInDependencyOrder(document)) counts.set(frag.name.value, count(frag.selectionSet))
  return count(operation.selectionSet)
}
