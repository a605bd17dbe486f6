/**
 * The chaos run's only source of decisions: a seeded PRNG (mulberry32), so
 * that a seed picks the same operations and faults in the same order. (Real
 * time still decides how they interleave: a seed replays the mix, not the
 * exact schedule.)
 */

export interface Prng {
  /** a float in [0, 1) */
  readonly next: () => number
  /** an integer in [lo, hi] */
  readonly int: (lo: number, hi: number) => number
  readonly pick: <A>(items: ReadonlyArray<A>) => A
  readonly chance: (p: number) => boolean
  /** an entry of `weights` (name → weight), picked in proportion to its weight */
  readonly weighted: <K extends string>(weights: Readonly<Record<K, number>>) => K
}

/** A 32-bit hash of `parts` (FNV-1a over their text), to derive one PRNG's seed per process and incarnation. */
export const deriveSeed = (...parts: ReadonlyArray<string | number>): number => {
  let h = 0x811c9dc5
  for (const c of parts.join("/")) {
    h ^= c.charCodeAt(0)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

export const mulberry32 = (seed: number): Prng => {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1))
  return {
    next,
    int,
    pick: (items) => items[int(0, items.length - 1)]!,
    chance: (p) => next() < p,
    weighted: (weights) => {
      const entries = Object.entries(weights) as Array<[never, number]>
      let r = next() * entries.reduce((sum, [, w]) => sum + w, 0)
      for (const [key, w] of entries) {
        r -= w
        if (r < 0) return key
      }
      return entries[entries.length - 1]![0]
    }
  }
}
