/**
 * The workload shared by every system: a state `{ counter, items }` and ten
 * steps that each read it, append one item and increment the counter.
 * Deterministic and model-free.
 */

export interface BenchState {
  readonly counter: number
  readonly items: ReadonlyArray<string>
}

/** Steps per run. */
export const STEPS = 10

/** A 20-character item. */
export const item = (n: number): string => `item-${String(n).padStart(15, "0")}`

/**
 * What every step does, in every system: read the state, append one item,
 * increment the counter. Immutable (a new object and a new array), which is
 * what sessionflow asks of state updates and what LangGraph nodes return.
 */
export const advance = (s: BenchState): BenchState =>
  ring === undefined ? { counter: s.counter + 1, items: [...s.items, item(s.counter)] } : ringStep(s, ring)

/** The bounded variant of the workload (the storage bench's), when set: items kept in a ring of this size. */
let ring: number | undefined

/**
 * Switches every system's steps to the bounded workload (before the systems
 * are opened): the state holds at most `size` items, and once full each step
 * replaces the oldest slot (`items[counter % size]`) instead of appending, so
 * the state stays the same size and each step changes one 20-character item
 * and the counter.
 */
export const useRing = (size: number | undefined): void => {
  ring = size
}

const ringStep = (s: BenchState, size: number): BenchState => {
  const next = item(s.counter)
  return {
    counter: s.counter + 1,
    items: s.items.length < size ? [...s.items, next] : s.items.map((x, i) => (i === s.counter % size ? next : x))
  }
}

/** A state already holding `n` items. */
export const prefilled = (n: number): BenchState => ({
  counter: n,
  items: Array.from({ length: n }, (_, i) => item(i))
})

export const emptyState = (): BenchState => ({ counter: 0, items: [] })

/** The state after `runs` runs from `from`, to check that every system did the work. */
export const expectedCounter = (from: number, runs: number): number => from + runs * STEPS
