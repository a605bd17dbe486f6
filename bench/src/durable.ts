/**
 * Durable runs: what `durability: "step"` costs per step over the run mode,
 * how long a paused run takes to continue (in this process, and in another
 * process opening the same SQLite file), and how long after a crash (SIGKILL
 * of a process mid-run) the run goes on in another process of the same host
 * under the `DurableRuns` supervisor (which sees the dead process is gone,
 * without waiting for its lease); and, beside sessionflow's per-step cost on
 * SQLite, the peers' own per-step durability (LangGraph.js's checkpoint per
 * step, Mastra's snapshots around every step). sessionflow runs from the
 * compiled `dist` of its packages (`durable-workflows.ts`), as users run it.
 *
 *   npm --prefix bench run durable                         # all five, SQLite and PostgreSQL
 *   npm --prefix bench run durable -- --only step,continue # some of: step, peers, continue, elsewhere, crash
 *   npm --prefix bench run durable -- --no-pg --reps 5
 *
 * Prints markdown tables to stdout (progress to stderr) and writes every
 * figure to `results-durable.json` (`--out`).
 */
import { SessionStore, Workflow } from "@sessionflow/core"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { approval, crashable, storeLayer, tenSteps } from "./durable-workflows.ts"
import { format, log } from "./measure.ts"
import { databaseUrl, freshSchema, reachable } from "./systems/postgres.ts"
import type { Runner } from "./systems/types.ts"
import { cleanupTemp, gc, median, removeDb, tempDb } from "./util.ts"
import { advance, type BenchState, emptyState, STEPS } from "./workload.ts"

const { values: args } = parseArgs({
  options: {
    only: { type: "string" },
    reps: { type: "string", default: "3" },
    runs: { type: "string", default: "200" },
    "peer-runs": { type: "string", default: "60" },
    "no-pg": { type: "boolean", default: false },
    out: { type: "string" }
  }
})
const reps = Math.max(1, Number(args.reps))
const runsPerMode = Math.max(20, Number(args.runs))
const peerRuns = Math.max(20, Number(args["peer-runs"]))
const only = new Set((args.only ?? "step,peers,continue,elsewhere,crash").split(",").map((s) => s.trim()))

interface Row {
  readonly figure: string
  readonly store: string
  readonly what: string
  readonly unit: string
  readonly values: ReadonlyArray<number>
  readonly median: number
}
const rows: Array<Row> = []
const add = (figure: string, store: string, what: string, unit: string, values: ReadonlyArray<number>) => {
  rows.push({ figure, store, what, unit, values, median: median(values) })
  log(`  ${figure} · ${store} · ${what}: ${values.map(format).join(" / ")} ${unit}`)
}

/** A store to measure on: its spec (see `storeLayer`) and how to remove it. */
interface Store {
  readonly name: string
  readonly spec: string
  readonly drop: () => Promise<void>
}
const sqliteStore = async (label: string): Promise<Store> => {
  const file = tempDb(label)
  return { name: "SQLite", spec: file, drop: async () => removeDb(file) }
}
const sqliteNormalStore = async (label: string): Promise<Store> => {
  const file = tempDb(label)
  return { name: "SQLite (synchronous=NORMAL)", spec: `normal:${file}`, drop: async () => removeDb(file) }
}
const pgStore = async (label: string): Promise<Store> => {
  const { drop, schema } = await freshSchema(`${label}-${process.pid}`)
  return { name: "PostgreSQL", spec: `pg:${databaseUrl()}#${schema}`, drop }
}
const stores = async (label: string, normal = false): Promise<Array<() => Promise<Store>>> => {
  const pg = args["no-pg"] ? "skipped (--no-pg)" : await reachable()
  if (pg !== undefined) log(`  PostgreSQL: ${pg}`)
  return [
    () => sqliteStore(label),
    ...(normal ? [() => sqliteNormalStore(label)] : []),
    ...(pg === undefined ? [() => pgStore(label)] : [])
  ]
}
const memoryStore: Store = { name: "memory", spec: "memory", drop: async () => {} }
const layerOf = (store: Store): Layer.Layer<SessionStore.SessionStore, unknown> =>
  store.spec === "memory" ? SessionStore.layerMemory : storeLayer(store.spec)

// -----------------------------------------------------------------------------
// per-step cost of durability: "step"
// -----------------------------------------------------------------------------

/**
 * Three ways to run the workload's ten steps, taking turns chunk by chunk on
 * one store: the run mode (one commit at the end), a tracked run in the run
 * mode (a `runId`: an unfinished-run entry and its lease, no journal), and
 * `durability: "step"` (tracked, and a journal write after each of the
 * first nine steps). Sessions of ten runs each, so the state stays small
 * (≤ 100 items).
 */
const stepCost = async () => {
  const run = tenSteps("run")
  const step = tenSteps("step")
  const engine = [
    { name: "run", go: (sessionId: string) => Workflow.run(run, "go", { sessionId }) },
    { name: "tracked", go: (sessionId: string) => Workflow.run(run, "go", { sessionId, runId: crypto.randomUUID() }) },
    { name: "step", go: (sessionId: string) => Workflow.run(step, "go", { sessionId }) }
  ] as const
  for (const open of await stores("durable-step", true)) {
    const perRep = new Map<string, Array<number>>()
    let storeName = ""
    for (let rep = 0; rep < reps; rep++) {
      const store = await open()
      storeName = store.name
      const runtime = ManagedRuntime.make(layerOf(store))
      const floor = store.spec.startsWith("pg:") ? undefined : sqliteFloor(store.spec)
      try {
        let session = 0
        const sessionOf = (mode: string, i: number) => {
          if (i % 10 === 0) session++
          return `${mode}-${rep}-${session}`
        }
        const modes: Array<{ readonly name: string; readonly chunk: (runs: number) => Promise<void> }> = [
          ...engine.map((mode) => ({
            name: mode.name,
            chunk: (runs: number) =>
              runtime.runPromise(Effect.gen(function*() {
                for (let i = 0; i < runs; i++) yield* mode.go(sessionOf(mode.name, i))
              }))
          })),
          ...(floor === undefined ? [] : [
            { name: "floor run", chunk: (runs: number) => floor.runs(runs, false, (i) => sessionOf("floor-run", i)) },
            { name: "floor step", chunk: (runs: number) => floor.runs(runs, true, (i) => sessionOf("floor-step", i)) }
          ])
        ]
        for (const mode of modes) await mode.chunk(50) // warm-up
        const ms = new Map<string, number>(modes.map((m) => [m.name, 0]))
        for (let done = 0; done < runsPerMode; done += 20) {
          for (let k = 0; k < modes.length; k++) {
            const mode = modes[(k + done / 20 + rep) % modes.length]!
            await gc()
            const t0 = performance.now()
            await mode.chunk(20)
            ms.set(mode.name, ms.get(mode.name)! + performance.now() - t0)
          }
        }
        const chunks = Math.ceil(runsPerMode / 20) * 20
        for (const mode of modes) {
          if (!perRep.has(mode.name)) perRep.set(mode.name, [])
          perRep.get(mode.name)!.push(ms.get(mode.name)! / chunks)
        }
      } finally {
        floor?.close()
        await runtime.dispose()
        await store.drop()
      }
    }
    const [r, t, s] = [perRep.get("run")!, perRep.get("tracked")!, perRep.get("step")!]
    add("durability: step", storeName, "run mode, ms/run", "ms", r)
    add("durability: step", storeName, "tracked run (runId), ms/run", "ms", t)
    add("durability: step", storeName, "durability: \"step\", ms/run", "ms", s)
    add("durability: step", storeName, "step − run mode, per step", "ms", s.map((x, i) => (x - r[i]!) / STEPS))
    add(
      "durability: step",
      storeName,
      "step − tracked, per journal write (9 a run)",
      "ms",
      s.map((x, i) => (x - t[i]!) / (STEPS - 1))
    )
    add("durability: step", storeName, "step ÷ run mode", "×", s.map((x, i) => x / r[i]!))
    const [fr, fs] = [perRep.get("floor run"), perRep.get("floor step")]
    if (fr !== undefined && fs !== undefined) {
      add("durability: step", storeName, "floor: read + upsert, ms/run", "ms", fr)
      add("durability: step", storeName, "floor: + a journal upsert after steps 1–9, ms/run", "ms", fs)
      add("durability: step", storeName, "floor: step − run, per step", "ms", fs.map((x, i) => (x - fr[i]!) / STEPS))
      add(
        "durability: step",
        storeName,
        "sessionflow ÷ floor, per step over the run mode",
        "×",
        s.map((x, i) => (x - r[i]!) / (fs[i]! - fr[i]!))
      )
    }
  }
}

/**
 * The floor of a durable run on SQLite, in raw better-sqlite3 on its own
 * file beside the store's (same `synchronous`): a run reads and parses the
 * session's row, runs the ten steps, and upserts the state; with `journal`,
 * after each of the first nine steps it also upserts the run's position and
 * state (`{ next, state }` as JSON) into a journal row, in a transaction of
 * its own (the durable write a step needs), and the final upsert deletes
 * that row in the same transaction.
 */
const sqliteFloor = (spec: string) => {
  const normal = spec.startsWith("normal:")
  const db = new Database(`${normal ? spec.slice(7) : spec}-floor.db`)
  db.pragma("journal_mode = WAL")
  db.pragma(`synchronous = ${normal ? "NORMAL" : "FULL"}`)
  db.exec(`CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS journal (run_id TEXT PRIMARY KEY NOT NULL, data TEXT NOT NULL)`)
  const select = db.prepare<[string], { state: string }>("SELECT state FROM sessions WHERE session_id = ?")
  const upsert = db.prepare(
    "INSERT INTO sessions (session_id, state) VALUES (?, ?) ON " +
      "CONFLICT (session_id) DO UPDATE SET state = excluded.state"
  )
  const journal = db.prepare(
    "INSERT INTO journal (run_id, data) VALUES (?, ?) ON CONFLICT (run_id) DO UPDATE SET data = excluded.data"
  )
  const unjournal = db.prepare("DELETE FROM journal WHERE run_id = ?")
  const commit = db.transaction((sessionId: string, runId: string, json: string) => {
    upsert.run(sessionId, json)
    unjournal.run(runId)
  })
  let seq = 0
  return {
    runs: async (runs: number, journaled: boolean, sessionOf: (i: number) => string) => {
      for (let i = 0; i < runs; i++) {
        const sessionId = sessionOf(i)
        const runId = `floor-${seq++}`
        const row = select.get(sessionId)
        let state = row === undefined ? emptyState() : (JSON.parse(row.state) as BenchState)
        for (let n = 0; n < STEPS; n++) {
          state = await (async (s: BenchState) => advance(s))(state)
          if (journaled && n + 1 < STEPS) journal.run(runId, JSON.stringify({ next: n + 1, state }))
        }
        if (journaled) commit(sessionId, runId, JSON.stringify(state))
        else upsert.run(sessionId, JSON.stringify(state))
      }
    },
    close: () => db.close()
  }
}

// -----------------------------------------------------------------------------
// the peers' per-step durability, beside sessionflow's, on SQLite
// -----------------------------------------------------------------------------

/**
 * Each system's per-step durable write on SQLite, as the difference between
 * its durable-per-step mode and its one-write-per-run mode, all taking turns
 * 20 runs at a time (GC before each chunk) on sessions of ten runs: sessionflow
 * `durability: "step"` vs the run mode (`SqliteSessionStore.layer`, FULL);
 * LangGraph.js `SqliteSaver` with `durability: "sync"` (a checkpoint per
 * super-step, written before the next step starts) and its default `"async"`
 * (the same checkpoints, written in the background) vs `"exit"` (one
 * checkpoint per run; its SQLite connection is better-sqlite3's, WAL,
 * synchronous=FULL); Mastra `LibSQLStore` with its default snapshots (before
 * and after every step) vs one snapshot per run (LibSQL: WAL,
 * synchronous=NORMAL). Per step = (durable − per-run) ÷ 10.
 */
const peerSteps = async () => {
  const LangGraph = await import("./systems/langgraph.ts")
  const Mastra = await import("./systems/mastra.ts")
  const run = tenSteps("run")
  const step = tenSteps("step")
  type Mode = {
    readonly name: string
    readonly open: () => Promise<
      { readonly chunk: (sessions: ReadonlyArray<string>) => Promise<void>; readonly close: () => Promise<void> }
    >
  }
  const engine = (wf: typeof run): Mode["open"] => async () => {
    const file = tempDb("durable-peers-sf")
    const runtime = ManagedRuntime.make(storeLayer(file))
    return {
      chunk: (sessions) =>
        runtime.runPromise(
          Effect.forEach(sessions, (sessionId) => Workflow.run(wf, "go", { sessionId }), { discard: true })
        ),
      close: async () => {
        await runtime.dispose()
        removeDb(file)
      }
    }
  }
  const peer = (make: (filename: string) => Promise<Runner>): Mode["open"] => async () => {
    const file = tempDb("durable-peers")
    const runner = await make(file)
    return {
      chunk: async (sessions) => {
        for (const sessionId of sessions) await runner.run(sessionId, 1)
      },
      close: async () => {
        await runner.close()
        removeDb(file)
      }
    }
  }
  const modes: Array<Mode> = [
    { name: "sessionflow run", open: engine(run) },
    { name: "sessionflow step", open: engine(step) },
    { name: "LangGraph.js exit", open: peer((filename) => LangGraph.make({ filename, durability: "exit" })) },
    { name: "LangGraph.js sync", open: peer((filename) => LangGraph.make({ filename, durability: "sync" })) },
    { name: "LangGraph.js async", open: peer((filename) => LangGraph.make({ filename, durability: "async" })) },
    { name: "Mastra run", open: peer((filename) => Mastra.make({ storage: "libsql", filename, snapshots: "run" })) },
    { name: "Mastra step", open: peer((filename) => Mastra.make({ storage: "libsql", filename, snapshots: "step" })) }
  ]
  const perRep = new Map<string, Array<number>>(modes.map((m) => [m.name, []]))
  for (let rep = 0; rep < reps; rep++) {
    const opened = await Promise.all(modes.map((m) => m.open()))
    try {
      const session = new Map<string, number>()
      const sessionsOf = (name: string, runs: number) =>
        Array.from({ length: runs }, () => {
          const n = session.get(name) ?? 0
          session.set(name, n + 1)
          return `${name.replace(/\W+/g, "-")}-${rep}-${Math.floor(n / 10)}`
        })
      for (const [k, mode] of modes.entries()) await opened[k]!.chunk(sessionsOf(mode.name, 20)) // warm-up
      const ms = new Map<string, number>(modes.map((m) => [m.name, 0]))
      for (let done = 0; done < peerRuns; done += 20) {
        for (let j = 0; j < modes.length; j++) {
          const k = (j + done / 20 + rep) % modes.length
          const mode = modes[k]!
          await gc()
          const t0 = performance.now()
          await opened[k]!.chunk(sessionsOf(mode.name, 20))
          ms.set(mode.name, ms.get(mode.name)! + performance.now() - t0)
        }
      }
      const chunks = Math.ceil(peerRuns / 20) * 20
      for (const mode of modes) perRep.get(mode.name)!.push(ms.get(mode.name)! / chunks)
    } finally {
      for (const o of opened) await o.close()
    }
  }
  const perStep = (durable: string, perRun: string) =>
    perRep.get(durable)!.map((x, i) => (x - perRep.get(perRun)![i]!) / STEPS)
  for (const mode of modes) {
    add("peers: per-step durability", "SQLite", `${mode.name}, ms/run`, "ms", perRep.get(mode.name)!)
  }
  add(
    "peers: per-step durability",
    "SQLite",
    "sessionflow: step − run mode, per step",
    "ms",
    perStep("sessionflow step", "sessionflow run")
  )
  add(
    "peers: per-step durability",
    "SQLite",
    "LangGraph.js: sync − exit, per step",
    "ms",
    perStep("LangGraph.js sync", "LangGraph.js exit")
  )
  add(
    "peers: per-step durability",
    "SQLite",
    "LangGraph.js: async − exit, per step",
    "ms",
    perStep("LangGraph.js async", "LangGraph.js exit")
  )
  add(
    "peers: per-step durability",
    "SQLite NORMAL (LibSQL)",
    "Mastra: per-step − per-run snapshots, per step",
    "ms",
    perStep("Mastra step", "Mastra run")
  )
  add(
    "peers: per-step durability",
    "SQLite",
    "sessionflow step ÷ LangGraph.js sync, per run",
    "×",
    perRep.get("sessionflow step")!.map((x, i) => x / perRep.get("LangGraph.js sync")![i]!)
  )
  add(
    "peers: per-step durability",
    "SQLite",
    "sessionflow step ÷ Mastra per-step snapshots, per run",
    "×",
    perRep.get("sessionflow step")!.map((x, i) => x / perRep.get("Mastra step")![i]!)
  )
}

// -----------------------------------------------------------------------------
// continue after a pause, in this process
// -----------------------------------------------------------------------------

/** Runs `count` runs of `approval` to their pause, each on its own session; their run ids. */
const pauseRuns = (label: string, count: number) =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => `${label}-${i}`),
    (sessionId) =>
      Effect.map(Effect.flip(Workflow.run(approval, "expense", { sessionId })), (error) => {
        if (error._tag !== "RunPaused") throw new Error(`expected a pause, got ${error._tag}`)
        return error.runId
      })
  )

const continueInProcess = async () => {
  const count = 100
  for (const open of [async () => memoryStore, ...(await stores("durable-continue"))]) {
    const continues: Array<number> = []
    const pauses: Array<number> = []
    let storeName = ""
    for (let rep = 0; rep < reps; rep++) {
      const store = await open()
      storeName = store.name
      const runtime = ManagedRuntime.make(layerOf(store))
      try {
        // warm-up
        for (const runId of await runtime.runPromise(pauseRuns(`warm-${rep}`, 30))) {
          await runtime.runPromise(Workflow.continue(approval, runId, { approved: true }))
        }
        await gc()
        const t0 = performance.now()
        const runIds = await runtime.runPromise(pauseRuns(`timed-${rep}`, count))
        pauses.push((performance.now() - t0) / count)
        const each: Array<number> = []
        for (const runId of runIds) {
          const t = performance.now()
          const out = await runtime.runPromise(Workflow.continue(approval, runId, { approved: true }))
          each.push(performance.now() - t)
          if (out.content !== true) throw new Error("continue: unexpected content")
        }
        continues.push(median(each))
      } finally {
        await runtime.dispose()
        await store.drop()
      }
    }
    add("continue (in process)", storeName, "run to its pause, ms/run", "ms", pauses)
    add("continue (in process)", storeName, "Workflow.continue to the run's end (median of 100)", "ms", continues)
  }
}

// -----------------------------------------------------------------------------
// continue after a pause, in another process
// -----------------------------------------------------------------------------

const childScript = fileURLToPath(new URL("./durable-child.ts", import.meta.url))
/** The child runs as this process does (`--import tsx` for the bench's own files), without `--expose-gc`. */
const childArgs = process.execArgv.filter((a) => a !== "--expose-gc")

interface Child {
  readonly pid: number
  readonly output: () => string
  readonly exited: Promise<number | null>
  readonly kill: () => void
}
const child = (args: ReadonlyArray<string>): Child => {
  const proc = spawn(process.execPath, [...childArgs, childScript, ...args], { stdio: ["ignore", "pipe", "inherit"] })
  let out = ""
  proc.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk))
  const exited = new Promise<number | null>((resolve) => proc.on("close", (code) => resolve(code)))
  return { pid: proc.pid!, output: () => out, exited, kill: () => proc.kill("SIGKILL") }
}

const waitFor = async <A>(read: () => A | undefined, what: string, timeoutMs = 60_000): Promise<A> => {
  const t0 = Date.now()
  for (;;) {
    const found = read()
    if (found !== undefined) return found
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

const continueElsewhere = async () => {
  const count = 20
  const first: Array<number> = []
  const warm: Array<number> = []
  const startToFirst: Array<number> = []
  const wall: Array<number> = []
  const loaded: Array<number> = []
  for (let rep = 0; rep < reps; rep++) {
    const store = await sqliteStore("durable-elsewhere")
    try {
      const runtime = ManagedRuntime.make(layerOf(store))
      const runIds = await runtime.runPromise(pauseRuns(`elsewhere-${rep}`, count))
      await runtime.dispose()
      const t0 = performance.now()
      const proc = child(["continue", store.spec, runIds.join(",")])
      const code = await proc.exited
      wall.push(performance.now() - t0)
      if (code !== 0) throw new Error(`the continuing process exited with ${code}`)
      const result = JSON.parse(proc.output().trim().split("\n").pop()!) as {
        loadedMs: number
        openMs: number
        times: Array<number>
        firstDoneMs: number
      }
      first.push(result.times[0]!)
      warm.push(median(result.times.slice(1)))
      startToFirst.push(result.firstDoneMs)
      loaded.push(result.loadedMs)
    } finally {
      await store.drop()
    }
  }
  add("continue (another process)", "SQLite", "first Workflow.continue in the new process (store open)", "ms", first)
  add("continue (another process)", "SQLite", "later continues in that process (median of 19)", "ms", warm)
  add("continue (another process)", "SQLite", "process start → modules loaded", "ms", loaded)
  add("continue (another process)", "SQLite", "process start → first continue done", "ms", startToFirst)
  add("continue (another process)", "SQLite", "spawn → exit of the process (20 continues)", "ms", wall)
}

// -----------------------------------------------------------------------------
// crash → resumed by the supervisor in another process
// -----------------------------------------------------------------------------

/** The epoch ms of the first `at-<n>` line printed at or after `after` by `proc`. */
const stepAt = (proc: Child, n: number, after: number): number | undefined => {
  for (const line of proc.output().split("\n")) {
    const [tag, at] = line.split(" ")
    if (tag === `at-${n}` && Number(at) >= after) return Number(at)
  }
  return undefined
}

const crash = async () => {
  const stallAt = 6
  const workflow = crashable(() => Effect.void)
  for (const open of await stores("durable-crash")) {
    const store = await open()
    const runtime = ManagedRuntime.make(layerOf(store))
    const killToResumed: Array<number> = []
    const resumedToExpiry: Array<number> = []
    const killToExpiry: Array<number> = []
    const killToLast: Array<number> = []
    let supervisor: Child | undefined
    try {
      await runtime.runPromise(Effect.void) // the tables exist before the children open the store
      supervisor = child(["supervise", store.spec])
      await waitFor(() => supervisor!.output().includes("ready") ? true : undefined, "the supervisor")
      for (let rep = 0; rep < reps + 1; rep++) {
        const runId = `crash-${rep}`
        const worker = child(["work", store.spec, runId, String(stallAt)])
        await waitFor(() => stepAt(worker, stallAt, 0), `step ${stallAt} of the worker`)
        // the journal after step 5 is written before step 6 starts: the worker dies mid-run
        worker.kill()
        const killedAt = Date.now()
        await worker.exited
        const [entry] = (await runtime.runPromise(Workflow.unfinishedRuns(workflow))).filter((r) => r.runId === runId)
        const resumedAt = await waitFor(() => stepAt(supervisor!, stallAt, killedAt), "the resumed run")
        const lastAt = await waitFor(() => stepAt(supervisor!, STEPS, killedAt), "the resumed run's last step")
        if (rep === 0) continue // the first one warms the supervisor's process up
        const expiresAt = entry?.leaseExpiresAt ?? Number.NaN
        killToResumed.push(resumedAt - killedAt)
        resumedToExpiry.push(expiresAt - resumedAt)
        killToExpiry.push(expiresAt - killedAt)
        killToLast.push(lastAt - killedAt)
      }
    } finally {
      supervisor?.kill()
      await supervisor?.exited
      await runtime.dispose()
      await store.drop()
    }
    add("crash → resumed (lease 10 s)", store.name, "kill -9 → the lease would expire", "ms", killToExpiry)
    add(
      "crash → resumed (lease 10 s)",
      store.name,
      "kill -9 → step 6 runs again in the supervisor's process",
      "ms",
      killToResumed
    )
    add("crash → resumed (lease 10 s)", store.name, "step 6 runs again → the lease would expire", "ms", resumedToExpiry)
    add("crash → resumed (lease 10 s)", store.name, "kill -9 → step 10 starts", "ms", killToLast)
  }
}

const started = performance.now()
process.on("exit", cleanupTemp)
try {
  if (only.has("step")) await stepCost()
  if (only.has("peers")) await peerSteps()
  if (only.has("continue")) await continueInProcess()
  if (only.has("elsewhere")) await continueElsewhere()
  if (only.has("crash")) await crash()
} finally {
  cleanupTemp()
}
const seconds = (performance.now() - started) / 1000

const table = [
  "| figure | store | what | median | each repetition |",
  "|---|---|---|--:|---|",
  ...rows.map((r) =>
    `| ${r.figure} | ${r.store} | ${r.what} | ${format(r.median)} ${r.unit} | ${r.values.map(format).join(" / ")} |`
  )
].join("\n")
process.stdout.write(
  `${table}\n\n(${reps} repetitions, ${runsPerMode} runs per mode, ${peerRuns} per peer mode, ${
    seconds.toFixed(0)
  } s)\n`
)
const out = args.out ?? fileURLToPath(new URL("../results-durable.json", import.meta.url))
writeFileSync(out, JSON.stringify({ reps, runsPerMode, peerRuns, seconds, rows }, null, 2) + "\n")
log(`wrote ${out}`)
