/**
 * Storage: what each system writes and keeps for the same runs, and how long
 * a session's state takes to load as its past runs pile up.
 *
 * The bounded variant of the workload (`useRing`): a state of 100 items of 20
 * characters and a counter; each of a run's ten steps replaces one item and
 * increments the counter, so the state stays ~2.4 kB and each run changes
 * ten items. One session gets 10 / 100 / 1,000 / 10,000 runs (the peers stop
 * at `--peer-max`, default 100: their 1,000-run rows take about four minutes
 * more, and 10,000 runs would take most of an hour; on PostgreSQL sessionflow
 * stops at 1,000 runs and LangGraph.js at 100).
 *
 * - **written**: bytes the process wrote (`wchar` of `/proc/self/io`: every
 *   `write` of SQLite's database, WAL and journal files) during the runs, per
 *   run and per step. SQLite systems only (PostgreSQL writes in its server).
 * - **stored**: the database after the runs — SQLite: `page_count ×
 *   page_size` after a WAL checkpoint, and per table from `dbstat`;
 *   PostgreSQL: `pg_total_relation_size` of the system's tables.
 * - **load**: the median time to read the session's state (each system's own
 *   read: sessionflow `Workflow.getSessionState`, LangGraph `getState`, Mastra
 *   `loadWorkflowSnapshot`) after the runs (SQLite: by a runner opened afresh
 *   on the file).
 *
 *   npm --prefix bench run storage                      # SQLite and PostgreSQL (~5 min on 2 shared cores)
 *   npm --prefix bench run storage -- --peer-max 1000   # the peers up to 1,000 runs too (~9 min)
 *   npm --prefix bench run storage -- --quick           # up to 1,000 runs (~2.5 min)
 *   npm --prefix bench run storage -- --no-pg
 */
import Database from "better-sqlite3"
import { readFileSync, writeFileSync } from "node:fs"
import { basename } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import pg from "pg"
import { log } from "./measure.ts"
import * as Sys from "./systems/index.ts"
import { databaseUrl, reachable } from "./systems/postgres.ts"
import type { Runner } from "./systems/types.ts"
import { cleanupTemp, median, removeDb, tempDb } from "./util.ts"
import { advance, type BenchState, emptyState, STEPS, useRing } from "./workload.ts"

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    "no-pg": { type: "boolean", default: false },
    "peer-max": { type: "string" },
    out: { type: "string" }
  }
})

const RING = 100
useRing(RING)

const levels = args.quick ? [10, 100, 1_000] : [10, 100, 1_000, 10_000]
const peerMax = Number(args["peer-max"] ?? 100)
const pgMax = args.quick ? 100 : 1_000
/** LangGraph.js on PostgreSQL takes about 0.1–0.4 s a run here: its figures stop at 100 runs */
const pgPeerMax = 100

interface Candidate {
  readonly system: { readonly name: string; readonly open: (file: string) => Promise<Runner> }
  readonly store: "SQLite" | "PostgreSQL"
  readonly max: number
  /** the system's own tables, for PostgreSQL's sizes */
  readonly note: string
}

const sessionflowPgChanges = {
  name: "sessionflow (PostgreSQL, persist: changes)",
  open: async (file: string) =>
    (await import("./systems/sessionflow.ts")).make({ filename: file, typed: true, postgres: true, persist: "changes" })
}

const candidates: ReadonlyArray<Candidate> = [
  { system: Sys.sessionflow, store: "SQLite", max: Infinity, note: "persist: \"state\" (default)" },
  { system: Sys.sessionflowChanges, store: "SQLite", max: Infinity, note: "persist: \"changes\"" },
  {
    system: Sys.langgraph,
    store: "SQLite",
    max: peerMax,
    note: "SqliteSaver, durability async (a checkpoint per step)"
  },
  {
    system: Sys.langgraphExit,
    store: "SQLite",
    max: peerMax,
    note: "SqliteSaver, durability exit (a checkpoint per run)"
  },
  { system: Sys.mastraLibsql, store: "SQLite", max: peerMax, note: "LibSQLStore, per-step snapshots (default)" },
  { system: Sys.mastraLibsqlRun, store: "SQLite", max: peerMax, note: "LibSQLStore, per-run snapshot" },
  { system: Sys.sessionflowPg, store: "PostgreSQL", max: pgMax, note: "persist: \"state\"" },
  { system: sessionflowPgChanges, store: "PostgreSQL", max: pgMax, note: "persist: \"changes\"" },
  {
    system: Sys.langgraphPgExit,
    store: "PostgreSQL",
    max: Math.min(pgMax, pgPeerMax),
    note: "PostgresSaver, durability exit"
  },
  {
    system: Sys.langgraphPg,
    store: "PostgreSQL",
    max: Math.min(pgMax, pgPeerMax),
    note: "PostgresSaver, durability async"
  }
]

/** Bytes this process has passed to `write` so far (Linux). */
const written = (): number => {
  const io = readFileSync("/proc/self/io", "utf8")
  return Number(/wchar:\s*(\d+)/.exec(io)?.[1] ?? Number.NaN)
}

/** The state change of one run, as JSON: the items it replaced and the counter (what a change log must hold). */
const changeOfRun = (from: BenchState): { readonly values: number; readonly json: number } => {
  let state = from
  for (let i = 0; i < STEPS; i++) state = advance(state)
  const changes: Array<{ op: "set"; path: Array<string | number>; value: unknown }> = [
    { op: "set", path: ["counter"], value: state.counter }
  ]
  state.items.forEach((item, i) => {
    if (from.items[i] !== item) changes.push({ op: "set", path: ["items", i], value: item })
  })
  return {
    values: changes.reduce((n, change) => n + JSON.stringify(change.value).length, 0),
    json: JSON.stringify(changes).length
  }
}

/** A full ring: the state every measured run starts from after the first ten. */
const fullRing = (): BenchState => {
  let state = emptyState()
  for (let i = 0; i < RING + 5; i++) state = advance(state)
  return state
}

interface Row {
  readonly system: string
  readonly store: string
  readonly note: string
  readonly runs: number
  readonly seconds: number
  readonly writtenPerRun?: number | undefined
  readonly writtenPerStep?: number | undefined
  readonly stored: number
  readonly storedPerRun: number
  readonly tables: Readonly<Record<string, number>>
  readonly loadMs: number
}

const sqliteSizes = (file: string): { readonly total: number; readonly tables: Record<string, number> } => {
  const db = new Database(file)
  try {
    db.pragma("wal_checkpoint(TRUNCATE)")
    const pages = Number(db.pragma("page_count", { simple: true }))
    const size = Number(db.pragma("page_size", { simple: true }))
    const tables: Record<string, number> = {}
    try {
      for (
        const row of db.prepare("SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC")
          .all() as Array<{ name: string; bytes: number }>
      ) {
        tables[row.name] = row.bytes
      }
    } catch {
      // a build without dbstat: the total only
    }
    return { total: pages * size, tables }
  } finally {
    db.close()
  }
}

/** The schema `postgres.ts` makes for a "file". */
const schemaOf = (file: string) =>
  `bench_${basename(file).toLowerCase().replace(/\.db$/, "").replace(/[^a-z0-9]+/g, "_")}`.slice(0, 63)

const pgSizes = async (file: string): Promise<{ readonly total: number; readonly tables: Record<string, number> }> => {
  const client = new pg.Client({ connectionString: databaseUrl() })
  await client.connect()
  try {
    const { rows } = await client.query<{ name: string; bytes: string }>(
      `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 2 DESC`,
      [schemaOf(file)]
    )
    const tables: Record<string, number> = {}
    for (const row of rows) tables[row.name] = Number(row.bytes)
    return { total: rows.reduce((n, row) => n + Number(row.bytes), 0), tables }
  } finally {
    await client.end()
  }
}

const measure = async (candidate: Candidate, runs: number): Promise<Row> => {
  const file = tempDb(`storage-${candidate.system.name.replace(/\W+/g, "-")}-${runs}`)
  const runner = await candidate.system.open(file)
  try {
    // the session fills its ring first (not counted), then the measured runs
    await runner.seed("session", fullRing())
    const before = written()
    const t0 = performance.now()
    await runner.run("session", runs)
    const seconds = (performance.now() - t0) / 1000
    const bytes = written() - before
    const counter = await runner.counter("session")
    const expected = fullRing().counter + (runs + 1) * STEPS
    if (counter !== expected) throw new Error(`${candidate.system.name}: counter ${counter}, expected ${expected}`)
    let sizes: { readonly total: number; readonly tables: Record<string, number> }
    let loadMs: number
    if (candidate.store === "PostgreSQL") {
      sizes = await pgSizes(file)
      loadMs = await loadTime(runner)
      await runner.close()
    } else {
      await runner.close()
      sizes = sqliteSizes(file)
      // a fresh runner on the file: its first reads are not cached
      const reopened = await candidate.system.open(file)
      try {
        loadMs = await loadTime(reopened)
      } finally {
        await reopened.close()
      }
    }
    return {
      system: candidate.system.name,
      store: candidate.store,
      note: candidate.note,
      runs,
      seconds,
      ...(candidate.store === "SQLite" ? { writtenPerRun: bytes / runs, writtenPerStep: bytes / runs / STEPS } : {}),
      stored: sizes.total,
      storedPerRun: sizes.total / runs,
      tables: sizes.tables,
      loadMs
    }
  } finally {
    removeDb(file)
  }
}

const loadTime = async (runner: Runner): Promise<number> => {
  const times: Array<number> = []
  for (let i = 0; i < 15; i++) {
    const t0 = performance.now()
    await runner.counter("session")
    times.push(performance.now() - t0)
  }
  // the first read opens connections and compiles: the median of the rest
  return median(times.slice(1))
}

const n = (x: number) => Math.round(x).toLocaleString("en-US")
const kb = (x: number) => `${(x / 1024).toLocaleString("en-US", { maximumFractionDigits: 1 })} kB`

const started = performance.now()
const rows: Array<Row> = []
const pgProblem = args["no-pg"] ? "--no-pg" : await reachable()
try {
  for (const runs of levels) {
    for (const candidate of candidates) {
      if (runs > candidate.max) continue
      if (candidate.store === "PostgreSQL" && pgProblem !== undefined) continue
      log(`storage: ${candidate.system.name} (${candidate.store}), ${n(runs)} runs`)
      const row = await measure(candidate, runs)
      log(
        `  ${row.seconds.toFixed(1)} s; written ${
          row.writtenPerRun === undefined ? "—" : n(row.writtenPerRun)
        } B/run; stored ${kb(row.stored)}; load ${row.loadMs.toFixed(2)} ms`
      )
      rows.push(row)
    }
  }
} finally {
  cleanupTemp()
}

const change = changeOfRun(fullRing())
const lines: Array<string> = []
lines.push(`## Storage (bounded state: ${RING} items of 20 characters, each run replaces ${STEPS})`)
lines.push("")
lines.push(
  `The state change of one run: ${change.values} bytes of new values (ten 22-byte JSON strings and the counter), ` +
    `${change.json} bytes as a JSON change list (\`[{"op":"set","path":["items",7],"value":"item-…"}, …]\`).`
)
lines.push("")
lines.push(
  "| system | store | runs | written / run | written / step | × change (JSON) | stored | stored / run | load ms |"
)
lines.push("|---|---|---|---|---|---|---|---|---|")
for (const row of rows) {
  lines.push(
    `| ${row.system} | ${row.store} | ${n(row.runs)} | ${
      row.writtenPerRun === undefined ? "—" : `${n(row.writtenPerRun)} B`
    } | ${row.writtenPerStep === undefined ? "—" : `${n(row.writtenPerStep)} B`} | ${
      row.writtenPerRun === undefined ? "—" : (row.writtenPerRun / change.json).toFixed(1)
    } | ${kb(row.stored)} | ${n(row.storedPerRun)} B | ${row.loadMs.toFixed(2)} |`
  )
}
lines.push("")
lines.push("Stored bytes by table at the largest run count of each system:")
lines.push("")
for (const candidate of candidates) {
  const last = rows.filter((row) => row.system === candidate.system.name).at(-1)
  if (last === undefined) continue
  lines.push(
    `- ${last.system} (${last.store}, ${n(last.runs)} runs): ${
      Object.entries(last.tables).slice(0, 6).map(([name, bytes]) => `${name} ${kb(bytes)}`).join(", ") || "(no dbstat)"
    }`
  )
}
lines.push("")
lines.push(
  `${((performance.now() - started) / 1000).toFixed(0)} s in all${
    pgProblem === undefined ? "" : `; PostgreSQL skipped: ${pgProblem}`
  }.`
)
process.stdout.write(`${lines.join("\n")}\n`)
const out = args.out ??
  fileURLToPath(new URL(args.quick ? "../results-storage-quick.json" : "../results-storage.json", import.meta.url))
writeFileSync(out, `${JSON.stringify({ ring: RING, steps: STEPS, change, rows }, null, 2)}\n`)
log(`wrote ${out}`)
