import type { Runner } from "./systems/types.ts"
import { check, gc, median, removeDb, tempDb } from "./util.ts"
import { STEPS } from "./workload.ts"

/** A system under test: how to open it on a fresh store. */
export interface System {
  readonly name: string
  /** `file` is a fresh SQLite file for persisted workloads, `undefined` in memory. */
  readonly open: (file: string | undefined) => Promise<Runner>
}

export interface Figure {
  readonly workload: string
  readonly case: string
  readonly system: string
  readonly unit: string
  /** one value per repetition */
  readonly values: ReadonlyArray<number>
  readonly median: number
  /** this system's value divided by the reference system's, within each repetition */
  readonly ratio?: {
    readonly to: string
    readonly values: ReadonlyArray<number>
    readonly median: number
  }
  readonly note?: string
}

export const log = (...parts: ReadonlyArray<unknown>): void => {
  process.stderr.write(parts.join(" ") + "\n")
}

/** Rotates `xs` by `n`, so that no system always runs first or last. */
export const rotate = <A>(xs: ReadonlyArray<A>, n: number): Array<A> => xs.map((_, i) => xs[(i + n) % xs.length]!)

/**
 * What one system does in one repetition: untimed preparation, then timed
 * chunks of runs on one session.
 */
export interface Plan {
  /** untimed: warm-up, seeding */
  readonly prepare?: ((runner: Runner) => Promise<void>) | undefined
  readonly sessionId: string
  /** runs per timed chunk */
  readonly chunks: ReadonlyArray<number>
  /** how much a run moves the runner's counter (default: one per step) */
  readonly counterPerRun?: number | undefined
  /** the figures of this repetition (by case) from the chunks' milliseconds */
  readonly result: (chunkMs: ReadonlyArray<number>) => Readonly<Record<string, number>>
}

/**
 * Compares systems on a shared, noisy machine: in every repetition each
 * system gets a fresh store, and the systems take turns chunk by chunk (GC
 * before each chunk), so that a slow spell of the machine hits all of them
 * alike and the ratios taken within one repetition stay meaningful. The
 * figures are medians over the repetitions; the ratios to `reference` are
 * taken within each repetition, then their median is reported.
 */
export const compare = async (options: {
  readonly workload: string
  readonly cases: ReadonlyArray<string>
  readonly unit: string
  readonly reps: number
  readonly systems: ReadonlyArray<System>
  readonly reference?: Reference | undefined
  readonly persisted: boolean
  readonly plan: (system: System) => Plan
  readonly notes?: Readonly<Record<string, string>> | undefined
}): Promise<Array<Figure>> => {
  const values = new Map<string, Map<string, Array<number>>>(
    options.cases.map((c) => [c, new Map(options.systems.map((s) => [s.name, []]))])
  )
  for (let rep = 0; rep < options.reps; rep++) {
    const open: Array<{ system: System; runner: Runner; file: string | undefined; plan: Plan; ms: Array<number> }> = []
    try {
      for (const system of rotate(options.systems, rep)) {
        const file = options.persisted ? tempDb(system.name.replace(/\W+/g, "-")) : undefined
        const runner = await system.open(file)
        const plan = options.plan(system)
        open.push({ system, runner, file, plan, ms: [] })
        await plan.prepare?.(runner)
      }
      const before = await Promise.all(open.map((o) => o.runner.counter(o.plan.sessionId)))
      const rounds = Math.max(...open.map((o) => o.plan.chunks.length))
      for (let round = 0; round < rounds; round++) {
        for (const o of rotate(open, round)) {
          const runs = o.plan.chunks[round]
          if (runs === undefined) continue
          await gc()
          const t0 = performance.now()
          await o.runner.run(o.plan.sessionId, runs)
          o.ms.push(performance.now() - t0)
        }
      }
      for (const [i, o] of open.entries()) {
        const runs = o.plan.chunks.reduce((a, b) => a + b, 0)
        check(
          `${o.system.name}: counter`,
          await o.runner.counter(o.plan.sessionId),
          before[i]! + runs * (o.plan.counterPerRun ?? STEPS)
        )
        for (const [c, value] of Object.entries(o.plan.result(o.ms))) {
          values.get(c)!.get(o.system.name)!.push(value)
          log(`  ${options.workload} ${c} · ${o.system.name} · rep ${rep + 1}: ${format(value)} ${options.unit}`)
        }
      }
    } finally {
      for (const o of open) {
        await o.runner.close()
        if (o.file !== undefined) removeDb(o.file)
      }
    }
  }
  return options.cases.flatMap((c) =>
    figures({ ...options, case: c }, new Map([...values.get(c)!].filter(([, vs]) => vs.length > 0)))
  )
}

/**
 * Warm-up: `runs` runs spread over sessions of ten runs each (so that the
 * state stays small), enough for V8 to optimise every system's hot paths.
 */
export const warmUp = async (runner: Runner, runs: number): Promise<void> => {
  for (let i = 0; i * 10 < runs; i++) await runner.run(`warm-up-${i}`, Math.min(10, runs - i * 10))
}

/** `total` runs in chunks of `size` (the last one smaller if need be). */
export const chunked = (total: number, size: number): Array<number> =>
  Array.from({ length: Math.ceil(total / size) }, (_, i) => Math.min(size, total - i * size))

export const sum = (xs: ReadonlyArray<number>): number => xs.reduce((a, b) => a + b, 0)

/**
 * The system each figure is divided by: one for all, or one per system (e.g.
 * the floor with the same `synchronous` setting); `undefined` for none.
 */
export type Reference = string | ((system: string) => string | undefined)

/** Per repetition, `values[i] / reference[i]`; the finite ones. */
export const ratios = (values: ReadonlyArray<number>, reference: ReadonlyArray<number>): Array<number> =>
  values.map((v, i) => v / reference[i]!).filter((r) => Number.isFinite(r))

export const figures = (
  options: {
    readonly workload: string
    readonly case: string
    readonly unit: string
    readonly reference?: Reference | undefined
    readonly notes?: Readonly<Record<string, string>> | undefined
  },
  values: ReadonlyMap<string, ReadonlyArray<number>>
): Array<Figure> => {
  const referenceOf = (system: string) =>
    typeof options.reference === "function" ? options.reference(system) : options.reference
  return Array.from(values, ([system, vs]) => {
    const to = referenceOf(system)
    const ref = to === undefined || to === system ? undefined : values.get(to)
    const rs = ref === undefined ? [] : ratios(vs, ref)
    const note = options.notes?.[system]
    return {
      workload: options.workload,
      case: options.case,
      system,
      unit: options.unit,
      values: vs,
      median: median(vs),
      ...(rs.length === 0 ? {} : { ratio: { to: to!, values: rs, median: median(rs) } }),
      ...(note === undefined ? {} : { note })
    }
  })
}

export const format = (x: number): string =>
  !Number.isFinite(x)
    ? "—"
    : x >= 100
    ? x.toFixed(0)
    : x >= 10
    ? x.toFixed(1)
    : x >= 1
    ? x.toFixed(2)
    : x.toPrecision(2)
