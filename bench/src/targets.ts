/**
 * The performance targets (reported, never asserted): ratios of two figures
 * of one run of the bench, taken within each repetition (the systems took
 * turns, so a slow spell of the machine hits both), then their median.
 */
import { type Figure, format, ratios } from "./measure.ts"
import * as Sys from "./systems/index.ts"
import { median } from "./util.ts"
import { type Config, labels } from "./workloads.ts"

interface Spec {
  readonly id: string
  readonly what: string
  readonly workload: string
  readonly case: string
  readonly unit: string
  readonly system: string
  /** `undefined`: the target is on the system's own median (e.g. MB), not a ratio */
  readonly reference?: string | undefined
  readonly max: number
  readonly aim?: number | undefined
}

export interface Target extends Spec {
  /** the ratio (or the value) per repetition */
  readonly values: ReadonlyArray<number>
  readonly median: number
  readonly met: boolean
}

const specs = (config: Config): Array<Spec> => {
  const l = labels(config)
  const w3 = l.w3(Math.max(...config.w3.sizes.map(([items]) => items)))
  return [
    {
      id: "W1",
      what: "typed state, memory store, per step vs Mastra without storage",
      workload: "W1 step overhead",
      case: l.w1All,
      unit: "µs/step",
      system: Sys.SF,
      reference: Sys.MASTRA,
      max: 1,
      aim: 0.5
    },
    {
      id: "W1 untyped",
      what: "untyped state, memory store, per step vs Mastra without storage",
      workload: "W1 step overhead",
      case: l.w1All,
      unit: "µs/step",
      system: Sys.SF_UNTYPED,
      reference: Sys.MASTRA,
      max: 1
    },
    {
      id: "W2",
      what: "typed state, SQLite, per run vs the read+upsert floor (both synchronous=FULL)",
      workload: "W2 persisted runs",
      case: l.w2,
      unit: "ms/run",
      system: Sys.SF,
      reference: Sys.FLOOR_READ_FULL,
      max: 2
    },
    {
      id: "W2 NORMAL",
      what: "typed state, SQLite, per run vs the read+upsert floor (both synchronous=NORMAL)",
      workload: "W2 persisted runs",
      case: l.w2,
      unit: "ms/run",
      system: Sys.SF_NORMAL,
      reference: Sys.FLOOR_READ,
      max: 2
    },
    {
      id: "W2 vs Mastra",
      what: "typed state, SQLite, per run vs Mastra's LibSQLStore with one snapshot per run (both synchronous=NORMAL)",
      workload: "W2 persisted runs",
      case: l.w2,
      unit: "ms/run",
      system: Sys.SF_NORMAL,
      reference: Sys.MASTRA_LIBSQL_RUN,
      max: 1
    },
    {
      id: "W3",
      what: `typed state, SQLite, ${w3}, per run vs the read+upsert floor (both synchronous=FULL)`,
      workload: "W3 state growth",
      case: w3,
      unit: "ms/run",
      system: Sys.SF,
      reference: Sys.FLOOR_READ_FULL,
      max: 1
    },
    {
      id: "W3 NORMAL",
      what: `typed state, SQLite, ${w3}, per run vs the read+upsert floor (both synchronous=NORMAL)`,
      workload: "W3 state growth",
      case: w3,
      unit: "ms/run",
      system: Sys.SF_NORMAL,
      reference: Sys.FLOOR_READ,
      max: 1
    },
    {
      id: "W3 vs Mastra",
      what: `typed state, SQLite, ${w3}, per run vs Mastra's LibSQLStore with one snapshot per run (both NORMAL)`,
      workload: "W3 state growth",
      case: w3,
      unit: "ms/run",
      system: Sys.SF_NORMAL,
      reference: Sys.MASTRA_LIBSQL_RUN,
      max: 1
    },
    {
      id: "W5 time",
      what: "many new sessions on SQLite (synchronous=FULL), total time vs the floor (NORMAL)",
      workload: "W5 many sessions",
      case: l.w5,
      unit: "s total",
      system: Sys.SF,
      reference: Sys.FLOOR,
      max: 10
    },
    {
      id: "W5 NORMAL",
      what: "many new sessions on SQLite, total time vs the floor (both synchronous=NORMAL)",
      workload: "W5 many sessions",
      case: l.w5,
      unit: "s total",
      system: Sys.SF_NORMAL,
      reference: Sys.FLOOR,
      max: 10
    },
    {
      id: "W5 vs Mastra",
      what: "many new sessions on SQLite, total time vs Mastra's LibSQLStore with one snapshot per run (both NORMAL)",
      workload: "W5 many sessions",
      case: l.w5,
      unit: "s total",
      system: Sys.SF_NORMAL,
      reference: Sys.MASTRA_LIBSQL_RUN,
      max: 1
    },
    {
      id: "W5 RSS",
      what: `RSS growth for ${config.w5.sessions.toLocaleString("en-US")} sessions, MB`,
      workload: "W5 many sessions",
      case: l.w5,
      unit: "MB RSS growth",
      system: Sys.SF,
      max: 30
    },
    {
      id: "W6",
      what: "one agent step with one tool call vs the bare openai SDK",
      workload: "W6 agent overhead",
      case: l.w6,
      unit: "ms/run",
      system: Sys.SF,
      reference: Sys.SDK,
      max: 1.3
    }
  ]
}

/** The targets whose figures this run has. */
export const evaluate = (config: Config, results: ReadonlyArray<Figure>): Array<Target> => {
  const find = (s: Spec, system: string) =>
    results.find((f) => f.workload === s.workload && f.case === s.case && f.unit === s.unit && f.system === system)
  return specs(config).flatMap((s) => {
    const a = find(s, s.system)
    if (a === undefined) return []
    const b = s.reference === undefined ? undefined : find(s, s.reference)
    if (s.reference !== undefined && b === undefined) return []
    const values = b === undefined ? a.values : ratios(a.values, b.values)
    if (values.length === 0) return []
    const m = median(values)
    return [{ ...s, values, median: m, met: m <= s.max }]
  })
}

export const table = (targets: ReadonlyArray<Target>): Array<string> =>
  targets.length === 0 ? [] : [
    "| target | what | result | goal | met | each run |",
    "|---|---|--:|--:|---|---|",
    ...targets.map((t) => {
      const x = t.reference === undefined ? "" : "×"
      const goal = `≤ ${format(t.max)}${x}${t.aim === undefined ? "" : ` (aim ${format(t.aim)}${x})`}`
      return `| ${t.id} | ${t.what} | ${format(t.median)}${x} | ${goal} | ${t.met ? "yes" : "**no**"} | ${
        t.values.map(format).join(" / ")
      } |`
    })
  ]
