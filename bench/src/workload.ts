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
export const advance = (s: BenchState): BenchState => ({
  counter: s.counter + 1,
  items: [...s.items, item(s.counter)]
})

/** A state already holding `n` items. */
export const prefilled = (n: number): BenchState => ({
  counter: n,
  items: Array.from({ length: n }, (_, i) => item(i))
})

export const emptyState = (): BenchState => ({ counter: 0, items: [] })

/** The state after `runs` runs from `from`, to check that every system did the work. */
export const expectedCounter = (from: number, runs: number): number => from + runs * STEPS
