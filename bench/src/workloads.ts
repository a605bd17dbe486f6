import { spawn } from "node:child_process"
import { copyFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { ChildResult } from "./child.ts"
import {
  chunked,
  compare,
  type Figure,
  figures,
  format,
  log,
  type Reference,
  rotate,
  sum,
  type System,
  warmUp
} from "./measure.ts"
import type * as Agent from "./systems/agent.ts"
import * as Sys from "./systems/index.ts"
import { check, removeDb, tempDb } from "./util.ts"
import { emptyState, expectedCounter, prefilled, STEPS } from "./workload.ts"

export interface Config {
  readonly quick: boolean
  readonly reps: number
  readonly w1: {
    readonly runs: number
    readonly prefix: number
    readonly chunk: number
    readonly warmup: number
    readonly langgraphAll: boolean
  }
  readonly w2: { readonly runs: number; readonly chunk: number; readonly warmup: number }
  readonly w3: { readonly sizes: ReadonlyArray<readonly [items: number, runs: number]>; readonly warmup: number }
  readonly w3c: { readonly sizes: ReadonlyArray<readonly [items: number, runs: number]> }
  readonly w4: {
    readonly levels: ReadonlyArray<number>
    readonly runs: number
    readonly chunk: number
    readonly warmup: number
  }
  readonly w5: { readonly sessions: number; readonly concurrency: number; readonly warmup: number }
  readonly w6: { readonly runs: number; readonly chunk: number; readonly warmup: number }
}

export const fullConfig = (langgraphAll: boolean): Config => ({
  quick: false,
  reps: 3,
  w1: { runs: 1000, prefix: 200, chunk: 100, warmup: 500, langgraphAll },
  w2: { runs: 500, chunk: 50, warmup: 200 },
  w3: { sizes: [[1_000, 50], [10_000, 10], [100_000, 3]], warmup: 100 },
  w3c: { sizes: [[1_000, 50], [10_000, 20], [100_000, 10], [1_000_000, 5]] },
  w4: { levels: [10, 1_000, 10_000], runs: 100, chunk: 25, warmup: 100 },
  w5: { sessions: 1_000, concurrency: 50, warmup: 200 },
  w6: { runs: 300, chunk: 25, warmup: 50 }
})

export const quickConfig = (langgraphAll: boolean): Config => ({
  quick: true,
  reps: 1,
  w1: { runs: 200, prefix: 50, chunk: 25, warmup: 20, langgraphAll },
  w2: { runs: 50, chunk: 10, warmup: 20 },
  w3: { sizes: [[1_000, 5], [10_000, 2], [100_000, 1]], warmup: 20 },
  w3c: { sizes: [[1_000, 5], [10_000, 3], [100_000, 2], [1_000_000, 1]] },
  w4: { levels: [10, 100, 1_000], runs: 10, chunk: 5, warmup: 20 },
  w5: { sessions: 100, concurrency: 50, warmup: 10 },
  w6: { runs: 30, chunk: 10, warmup: 10 }
})

const n = (x: number) => x.toLocaleString("en-US")

/** The case labels of the figures, for a configuration. */
export const labels = (config: Config) => ({
  w1First: `runs 1–${n(config.w1.prefix)}`,
  w1All: `runs 1–${n(config.w1.runs)}`,
  w2: `${n(config.w2.runs)} runs`,
  w3: (items: number) => `${n(items)} items`,
  w4: (level: number) => `after ${n(level)} runs`,
  w5: `${n(config.w5.sessions)} sessions × 1 run, ${config.w5.concurrency} at a time`,
  w6: "1 agent step, 1 tool call (2 HTTP exchanges)"
})

// -----------------------------------------------------------------------------
// W1 step overhead (in memory)
// -----------------------------------------------------------------------------

export const w1 = async (config: Config): Promise<Array<Figure>> => {
  const { chunk, langgraphAll, prefix, runs, warmup } = config.w1
  const { w1All: all, w1First: first } = labels(config)
  log(`W1 step overhead: ${n(runs)} runs of ${STEPS} steps on one in-memory session`)
  const perStep = (ms: number, k: number) => (ms * 1000) / (k * STEPS)
  const firstChunks = prefix / chunk
  return compare({
    workload: "W1 step overhead",
    cases: [first, all],
    unit: "µs/step",
    reps: config.reps,
    persisted: false,
    systems: [
      Sys.sessionflow,
      Sys.sessionflowUntyped,
      Sys.mastra,
      Sys.mastraValidate,
      Sys.mastraMemory,
      Sys.mastraMemoryRun,
      Sys.langgraph,
      Sys.floor
    ],
    reference: Sys.FLOOR,
    notes: {
      [Sys.SF]: "SessionStore.layerMemory",
      [Sys.MASTRA]: "state kept in a Map between runs",
      [Sys.MASTRA_VALIDATE]: "zod-validates the initial state",
      [Sys.MASTRA_MEMORY]: "Mastra's default: snapshot at creation, around every step, at the end",
      [Sys.MASTRA_MEMORY_RUN]: "shouldPersistSnapshot: the final snapshot only",
      [Sys.LG]: "MemorySaver",
      [Sys.FLOOR]: "async functions over an in-memory object"
    },
    plan: (system) => {
      const only = system.name === Sys.LG && !langgraphAll
      return {
        sessionId: "session",
        prepare: (runner) => warmUp(runner, warmup),
        chunks: chunked(only ? prefix : runs, chunk),
        result: (ms) => ({
          [first]: perStep(sum(ms.slice(0, firstChunks)), prefix),
          ...(only ? {} : { [all]: perStep(sum(ms), runs) })
        })
      }
    }
  })
}

// -----------------------------------------------------------------------------
// W2 persisted runs
// -----------------------------------------------------------------------------

/** Runs on one persisted session, system after system in chunks. */
const persistedRuns = (config: Config, options: {
  readonly workload: string
  readonly store: string
  readonly systems: ReadonlyArray<System>
  readonly reference: Reference
  readonly notes: Readonly<Record<string, string>>
}): Promise<Array<Figure>> => {
  const { chunk, runs, warmup } = config.w2
  const label = labels(config).w2
  log(`${options.workload}: ${n(runs)} runs on one ${options.store} session`)
  return compare({
    workload: options.workload,
    cases: [label],
    unit: "ms/run",
    reps: config.reps,
    persisted: true,
    systems: options.systems,
    reference: options.reference,
    notes: options.notes,
    plan: () => ({
      sessionId: "session",
      prepare: (runner) => warmUp(runner, warmup),
      chunks: chunked(runs, chunk),
      result: (ms) => ({ [label]: sum(ms) / runs })
    })
  })
}

export const w2 = (config: Config): Promise<Array<Figure>> =>
  persistedRuns(config, {
    workload: "W2 persisted runs",
    store: "SQLite",
    systems: [
      Sys.sessionflow,
      Sys.sessionflowUntyped,
      Sys.sessionflowNormal,
      Sys.mastraLibsql,
      Sys.mastraLibsqlRun,
      Sys.langgraph,
      Sys.langgraphExit,
      Sys.floor,
      Sys.floorFull,
      Sys.floorRead,
      Sys.floorReadFull
    ],
    reference: Sys.readFloorFor,
    notes: {
      [Sys.SF]: "SqliteSessionStore.layer (SQLite's default synchronous=FULL)",
      [Sys.SF_NORMAL]: "SqliteSessionStore.layer({ synchronous: \"NORMAL\" })",
      [Sys.MASTRA_LIBSQL]: "Mastra's default; LibSQLStore sets synchronous=NORMAL",
      [Sys.MASTRA_LIBSQL_RUN]: "shouldPersistSnapshot: the final snapshot only; synchronous=NORMAL",
      [Sys.LG]: "SqliteSaver, default durability (async), synchronous=FULL",
      [Sys.LG_EXIT]: "SqliteSaver, one checkpoint per run, synchronous=FULL",
      [Sys.FLOOR]: "one better-sqlite3 upsert per run (WAL, synchronous=NORMAL), state kept in memory",
      [Sys.FLOOR_FULL]: "the same with SQLite's default synchronous=FULL",
      [Sys.FLOOR_READ]: "SELECT + JSON.parse, the steps, JSON.stringify + upsert (WAL, synchronous=NORMAL)",
      [Sys.FLOOR_READ_FULL]: "the same with synchronous=FULL"
    }
  })

/**
 * W2 with and without the event log: sessionflow's runs as in W2, and the
 * same runs with `events: "stored"` (each run's events, 33 of them, written to
 * the store's event log in one batch at the run's end), beside the
 * read+upsert floor.
 */
export const w2e = (config: Config): Promise<Array<Figure>> =>
  persistedRuns(config, {
    workload: "W2E persisted runs, events stored",
    store: "SQLite",
    systems: [Sys.sessionflow, Sys.sessionflowEvents, Sys.floorReadFull],
    reference: Sys.readFloorFor,
    notes: {
      [Sys.SF]: "SqliteSessionStore.layer (FULL), events not stored (the default)",
      [Sys.SF_EVENTS]: "the same, with events: \"stored\"",
      [Sys.FLOOR_READ_FULL]: "SELECT + JSON.parse, the steps, JSON.stringify + upsert (synchronous=FULL)"
    }
  })

/** W2 on PostgreSQL (the bench database; see systems/postgres.ts). */
export const w2pg = (config: Config): Promise<Array<Figure>> =>
  persistedRuns(config, {
    workload: "W2 persisted runs (PostgreSQL)",
    store: "PostgreSQL",
    systems: [
      Sys.sessionflowPg,
      Sys.sessionflowPgUntyped,
      Sys.langgraphPg,
      Sys.langgraphPgExit,
      Sys.floorPg,
      Sys.floorPgRead
    ],
    reference: (system) => (system === Sys.FLOOR_PG || system === Sys.FLOOR_PG_READ ? undefined : Sys.FLOOR_PG_READ),
    notes: {
      [Sys.SF_PG]: "PgSessionStore.layer, a fresh schema",
      [Sys.LG_PG]: "PostgresSaver, default durability (async)",
      [Sys.LG_PG_EXIT]: "PostgresSaver, one checkpoint per run",
      [Sys.FLOOR_PG]: "one raw pg upsert per run (prepared), state kept in memory",
      [Sys.FLOOR_PG_READ]: "SELECT + JSON.parse, the steps, JSON.stringify + upsert (prepared)"
    }
  })

// -----------------------------------------------------------------------------
// W3 state growth
// -----------------------------------------------------------------------------

/** Persisted runs on one session created with each of `sizes` items. */
const stateGrowth = async (
  config: Config,
  options: {
    readonly workload: string
    readonly sizes: ReadonlyArray<readonly [items: number, runs: number]>
    readonly systems: ReadonlyArray<System>
    readonly notes?: Readonly<Record<string, string>> | undefined
  }
): Promise<Array<Figure>> => {
  const out: Array<Figure> = []
  for (const [items, runs] of options.sizes) {
    log(`${options.workload}: ${n(items)} items, ${runs} persisted runs`)
    const state = prefilled(items)
    const label = labels(config).w3(items)
    out.push(
      ...(await compare({
        workload: options.workload,
        cases: [label],
        unit: "ms/run",
        reps: config.reps,
        persisted: true,
        systems: options.systems,
        reference: Sys.readFloorFor,
        notes: options.notes,
        plan: () => ({
          sessionId: "session",
          prepare: async (runner) => {
            await warmUp(runner, config.w3.warmup)
            // the run that creates the session from the pre-filled state, and one more
            await runner.seed("session", state)
            await runner.run("session", 1)
            check("counter", await runner.counter("session"), expectedCounter(items, 2))
          },
          chunks: chunked(runs, 1),
          result: (ms) => ({ [label]: sum(ms) / runs })
        })
      }))
    )
  }
  return out
}

export const w3 = (config: Config): Promise<Array<Figure>> =>
  stateGrowth(config, {
    workload: "W3 state growth",
    sizes: config.w3.sizes,
    systems: [
      Sys.sessionflow,
      Sys.sessionflowUntyped,
      Sys.sessionflowNormal,
      Sys.mastraLibsql,
      Sys.mastraLibsqlRun,
      Sys.langgraph,
      Sys.floor,
      Sys.floorRead,
      Sys.floorReadFull
    ]
  })

/**
 * W3 with `persist: "changes"`, up to 1,000,000 items: sessionflow committing
 * its changes, beside sessionflow committing whole states, the read+upsert
 * floor and the steps alone (whose immutable copies grow with the state in
 * every system).
 */
export const w3c = (config: Config): Promise<Array<Figure>> =>
  stateGrowth(config, {
    workload: "W3C state growth, persist: changes",
    sizes: config.w3c.sizes,
    systems: [Sys.sessionflowChanges, Sys.sessionflow, Sys.floorReadFull, Sys.floorSteps],
    notes: {
      [Sys.SF_CHANGES]: "typed state, SqliteSessionStore.layer (synchronous=FULL), a commit writes the run's changes",
      [Sys.SF]: "the same, whole states",
      [Sys.FLOOR_STEPS]: "the ten steps over an in-memory object, nothing stored"
    }
  })

// -----------------------------------------------------------------------------
// W4 history growth
// -----------------------------------------------------------------------------

/**
 * For each history size, each system's database is made once: the session is
 * created (from the empty state) and given that many earlier runs, through
 * the system's own store (sessionflow commits run records through
 * `SessionStore`, leaving the state alone; LangGraph re-puts its latest
 * checkpoint, one per super-step of a run; Mastra stores copies of the
 * session's last run snapshot under new run ids, one per run; the floor
 * inserts history rows).
 * Every repetition then runs on a fresh copy of that file.
 */
export const w4 = async (config: Config): Promise<Array<Figure>> => {
  const { chunk, levels, runs, warmup } = config.w4
  const bases = [Sys.sessionflow, Sys.mastraLibsqlRun, Sys.langgraph, Sys.floorWithHistory]
  const out: Array<Figure> = []
  for (const level of levels) {
    const label = labels(config).w4(level)
    log(`W4 history growth: ${runs} persisted runs ${label}`)
    const templates: Array<string> = []
    try {
      const systems: Array<System> = []
      for (const base of bases) {
        const template = tempDb(`w4-template-${base.name.replace(/\W+/g, "-")}`)
        templates.push(template)
        const t0 = performance.now()
        const runner = await base.open(template)
        await runner.seed("session", emptyState())
        await runner.prefillHistory("session", level - 1)
        await runner.close()
        log(`  pre-filled ${base.name} with ${n(level)} runs in ${format((performance.now() - t0) / 1000)} s`)
        systems.push({
          name: base.name,
          open: (file) => {
            copyFileSync(template, file!)
            return base.open(file)
          }
        })
      }
      out.push(
        ...(await compare({
          workload: "W4 history growth",
          cases: [label],
          unit: "ms/run",
          reps: config.reps,
          persisted: true,
          systems,
          reference: Sys.FLOOR,
          notes: {
            [Sys.MASTRA_LIBSQL_RUN]: "one snapshot row per earlier run",
            [Sys.FLOOR]: "upsert + one history row per run, one transaction"
          },
          plan: () => ({
            sessionId: "session",
            prepare: (runner) => warmUp(runner, warmup),
            chunks: chunked(runs, chunk),
            result: (ms) => ({ [label]: sum(ms) / runs })
          })
        }))
      )
    } finally {
      for (const template of templates) removeDb(template)
    }
  }
  return out
}

// -----------------------------------------------------------------------------
// W5 many sessions (one child process per system and repetition)
// -----------------------------------------------------------------------------

const childScript = fileURLToPath(new URL("./child.ts", import.meta.url))

const runChild = (args: ReadonlyArray<string>): Promise<ChildResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, childScript, ...args], {
      stdio: ["ignore", "pipe", "inherit"]
    })
    let stdout = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.on("error", reject)
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`child ${args.join(" ")} exited with ${code}`))
      const last = stdout.trim().split("\n").at(-1) ?? ""
      try {
        resolve(JSON.parse(last) as ChildResult)
      } catch {
        reject(new Error(`child ${args.join(" ")} printed ${JSON.stringify(stdout)}`))
      }
    })
  })

/** Many new sessions, each system in its own child process (so that its memory is its own). */
const manySessions = async (config: Config, options: {
  readonly workload: string
  readonly store: string
  readonly systems: ReadonlyArray<string>
  readonly reference: string
}): Promise<Array<Figure>> => {
  const { concurrency, sessions, warmup } = config.w5
  const systems = options.systems
  const label = labels(config).w5
  log(`${options.workload}: ${label}, ${options.store}, one child process each`)
  const seconds = new Map<string, Array<number>>(systems.map((s) => [s, []]))
  const rss = new Map<string, Array<number>>(systems.map((s) => [s, []]))
  const baseline = new Map<string, Array<number>>(systems.map((s) => [s, []]))
  for (let rep = 0; rep < config.reps; rep++) {
    for (const system of rotate(systems, rep)) {
      const r = await runChild(["w5", system, String(sessions), String(concurrency), String(warmup)])
      seconds.get(system)!.push(r.seconds)
      rss.get(system)!.push(r.peakRssMb)
      baseline.get(system)!.push(r.baselineRssMb)
      log(
        `  ${options.workload} · ${system} · rep ${rep + 1}: ${format(r.seconds)} s, peak RSS ${
          format(r.peakRssMb)
        } MB (before: ${format(r.baselineRssMb)} MB)`
      )
    }
  }
  const common = { workload: options.workload, case: label, reference: options.reference }
  return [
    ...figures({ ...common, unit: "s total" }, seconds),
    ...figures({ ...common, unit: "MB peak RSS" }, rss),
    ...figures(
      { ...common, reference: undefined, unit: "MB RSS growth" },
      new Map([...rss].map(([system, peaks]) => [system, peaks.map((p, i) => p - baseline.get(system)![i]!)]))
    )
  ]
}

export const w5 = (config: Config): Promise<Array<Figure>> =>
  manySessions(config, {
    workload: "W5 many sessions",
    store: "SQLite",
    systems: [Sys.SF, Sys.SF_NORMAL, Sys.MASTRA_LIBSQL_RUN, Sys.MASTRA_LIBSQL, Sys.LG, Sys.FLOOR],
    reference: Sys.FLOOR
  })

/** W5 on PostgreSQL. */
export const w5pg = (config: Config): Promise<Array<Figure>> =>
  manySessions(config, {
    workload: "W5 many sessions (PostgreSQL)",
    store: "PostgreSQL",
    systems: [Sys.SF_PG, Sys.LG_PG, Sys.FLOOR_PG],
    reference: Sys.FLOOR_PG
  })

// -----------------------------------------------------------------------------
// W6 agent overhead
// -----------------------------------------------------------------------------

const serverScript = fileURLToPath(new URL("./server.ts", import.meta.url))

/** Starts the test server in a child process; closing its stdin stops it. */
export const startServer = (): Promise<{ server: Agent.Server; stop: () => Promise<void> }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, serverScript], { stdio: ["pipe", "pipe", "inherit"] })
    let stdout = ""
    const exited = new Promise<void>((done) => child.on("exit", () => done()))
    child.on("error", reject)
    child.on("exit", (code) => reject(new Error(`the test server exited with ${code}`)))
    child.stdout.on("data", (chunk) => {
      stdout += chunk
      const line = stdout.split("\n")[0]
      if (stdout.includes("\n") && line !== undefined) {
        resolve({
          server: JSON.parse(line) as Agent.Server,
          stop: () => {
            child.stdin.end()
            return exited
          }
        })
      }
    })
  })

export const w6 = async (config: Config): Promise<Array<Figure>> => {
  const { chunk, runs, warmup } = config.w6
  const label = labels(config).w6
  log(`W6 agent overhead: ${runs} runs against a local OpenAI-compatible server`)
  const Agent = await import("./systems/agent.ts")
  const { server, stop } = await startServer()
  try {
    return await compare({
      workload: "W6 agent overhead",
      cases: [label],
      unit: "ms/run",
      reps: config.reps,
      persisted: false,
      systems: [
        { name: Sys.SF, open: () => Agent.sessionflow(server) },
        { name: Sys.SDK, open: () => Agent.sdk(server) }
      ],
      reference: Sys.SDK,
      notes: {
        [Sys.SF]: "Workflow.run: Step.agent on OpenAIChat, tool writes state, memory store",
        [Sys.SDK]: "openai SDK: two chat.completions.create calls and the tool, by hand"
      },
      plan: () => ({
        sessionId: "session",
        prepare: (runner) => warmUp(runner, warmup),
        chunks: chunked(runs, chunk),
        counterPerRun: 1,
        result: (ms) => ({ [label]: sum(ms) / runs })
      })
    })
  } finally {
    await stop()
  }
}
