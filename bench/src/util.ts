import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

export const median = (xs: ReadonlyArray<number>): number => {
  if (xs.length === 0) return Number.NaN
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/** Collects garbage between systems when node runs with --expose-gc. */
export const gc = async (): Promise<void> => {
  const g = (globalThis as { gc?: () => void }).gc
  if (g !== undefined) {
    g()
    await new Promise((resolve) => setImmediate(resolve))
    g()
  }
}

/** Milliseconds taken by `f`. */
export const time = async (f: () => Promise<unknown>): Promise<number> => {
  const t0 = performance.now()
  await f()
  return performance.now() - t0
}

let root: string | undefined

/** A fresh directory for SQLite files, under the OS temp dir; removed by `cleanupTemp`. */
export const tempDir = (): string => {
  root ??= mkdtempSync(join(tmpdir(), "sessionflow-bench-"))
  return root
}

let seq = 0

/** A new SQLite file name in the temp directory. */
export const tempDb = (label: string): string => join(tempDir(), `${label}-${process.pid}-${seq++}.db`)

/** Removes a database file and its WAL/SHM companions. */
export const removeDb = (file: string): void => {
  for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(file + suffix, { force: true })
}

export const cleanupTemp = (): void => {
  if (root !== undefined) rmSync(root, { recursive: true, force: true })
  root = undefined
}

/** Runs `tasks` with at most `limit` in flight. */
export const pool = async <A>(items: ReadonlyArray<A>, limit: number, f: (a: A) => Promise<unknown>): Promise<void> => {
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      await f(items[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

export const check = (what: string, actual: unknown, expected: unknown): void => {
  if (actual !== expected) throw new Error(`${what}: expected ${String(expected)}, got ${String(actual)}`)
}
