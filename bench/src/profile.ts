/**
 * Where sessionflow's time goes. In this process, for each case:
 *
 *  - the time per run (median of chunks, GC before each), of the 10-step and
 *    a 1-step version of the workflow side by side, so that the per-step cost
 *    is the difference / 9 and the per-run cost what remains of a 1-step run;
 *    then the 10-step workflow on a session of 10,000 items;
 *  - a CPU profile (V8's sampling profiler, through `node:inspector`), each
 *    sample put into one category (Schema, JSON, the per-session lock, spans,
 *    Effect's runtime, SQL, ...), see `categorise`;
 *  - the allocations per run (V8's sampling heap profiler, counting objects
 *    the GC already collected too), by the same categories, and the GCs.
 *
 * W6 profiles sessionflow's agent step and the bare openai SDK side by side.
 *
 * Prints markdown tables to stdout and writes `profile-results.json`; with
 * `--save DIR` the raw `.cpuprofile` / `.heapprofile` files too (they open in
 * Chrome DevTools).
 *
 *   npm --prefix bench run profile
 *   npm --prefix bench run profile -- --case w1-typed --runs 2000 --save profiles
 */
import { readFileSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import { findSourceMap } from "node:module"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { GCProfiler } from "node:v8"
import { format, log } from "./measure.ts"
import type { Runner } from "./systems/types.ts"
import { cleanupTemp, gc, median, removeDb, tempDb } from "./util.ts"
import { prefilled, STEPS } from "./workload.ts"

const { values: args } = parseArgs({
  options: {
    case: { type: "string" },
    runs: { type: "string" },
    save: { type: "string" },
    out: { type: "string" }
  }
})

// -----------------------------------------------------------------------------
// categories
// -----------------------------------------------------------------------------

interface Frame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber?: number
  readonly columnNumber?: number
}

// sessionflow's sources are compiled by tsx: a frame's position is mapped
// back to the TypeScript source through tsx's source maps
process.setSourceMapsEnabled(true)

const sourceLines = new Map<string, ReadonlyArray<string>>()
const originals = new Map<string, { readonly file: string; readonly line: number } | undefined>()

/** The TypeScript file and line (0-based) where a compiled function starts, for our own sources. */
const original = (f: Frame) => {
  if (!f.url.startsWith("file://") || f.url.includes("/node_modules/") || f.lineNumber === undefined) return undefined
  const key = `${f.url}:${f.lineNumber}:${f.columnNumber ?? 0}`
  if (!originals.has(key)) {
    const entry = findSourceMap(f.url)?.findEntry(f.lineNumber, f.columnNumber ?? 0)
    originals.set(
      key,
      entry === undefined || !("originalSource" in entry)
        ? undefined
        : { file: entry.originalSource, line: entry.originalLine }
    )
  }
  return originals.get(key)
}

/** The first lines of a function's source, from its start. */
const sourceOf = (f: Frame, lines = 3): string => {
  const at = original(f)
  if (at === undefined) return ""
  let text = sourceLines.get(at.file)
  if (text === undefined) {
    try {
      text = readFileSync(fileURLToPath(at.file), "utf8").split("\n")
    } catch {
      text = []
    }
    sourceLines.set(at.file, text)
  }
  return text.slice(at.line, at.line + lines).join("\n")
}

/**
 * The categories. A native call made by better-sqlite3 or the SQLite client
 * is SQLite's own time; then a library boundary (the outermost frame of
 * @effect/ai, openai, @effect/sql or better-sqlite3 on the stack) takes
 * everything below it; then a Schema parser anywhere on the stack; otherwise
 * the frame nearest to the leaf that belongs to a category decides. Effect code runs from its fiber loop, so a stack
 * holds only the synchronous work of the moment: a category is the code
 * running, not who asked for it.
 */
export const CATEGORIES = [
  "GC",
  "@effect/ai",
  "openai SDK",
  "Mastra (its engine, zod)",
  "SQL: SQLite itself (better-sqlite3 native calls)",
  "SQL: @effect/sql (JS around the statements)",
  "Schema decode/encode",
  "JSON parse/stringify, structuredClone",
  "per-session lock (semaphore, FiberRef)",
  "spans (Effect.fn, withSpan)",
  "FiberRefs, Effect.locally, Context",
  "Effect runtime (fibers, gen, exit)",
  "sessionflow's own code",
  "the steps' own work",
  "Node (HTTP, streams, timers)",
  "other JS",
  "V8 (program)"
] as const
export type Category = (typeof CATEGORIES)[number]

const within = (url: string, part: string) => url.includes(part)
/** A module of the core package, from its sources or its compiled `dist` (what the bench runs). */
const inCore = (url: string, module: string) =>
  within(url, `/packages/core/src/${module}.ts`) || within(url, `/packages/core/dist/${module}.js`)
const effectModule = (url: string, pattern: RegExp) =>
  within(url, "/node_modules/effect/") && pattern.test(url.slice(url.lastIndexOf("/node_modules/effect/")))

const boundary = (f: Frame): Category | undefined =>
  within(f.url, "/@effect/ai/")
    ? "@effect/ai"
    : within(f.url, "/node_modules/openai/")
    ? "openai SDK"
    : within(f.url, "/@effect/sql") || within(f.url, "/better-sqlite3/")
    ? "SQL: @effect/sql (JS around the statements)"
    : undefined

const nearest = (f: Frame): Category | undefined => {
  const { functionName: name, url } = f
  if (url === "") {
    if (/^(parse|stringify|structuredClone)$/.test(name)) return "JSON parse/stringify, structuredClone"
    return undefined
  }
  if (effectModule(url, /\/(ParseResult|Schema|SchemaAST)\.js$/)) return "Schema decode/encode"
  if (inCore(url, "internal/json")) return "JSON parse/stringify, structuredClone"
  // V8 bills JSON.parse / JSON.stringify / structuredClone to the function that calls them
  if (within(url, "/packages/") && /JSON\.(parse|stringify)|structuredClone|deepCopy/.test(sourceOf(f))) {
    return "JSON parse/stringify, structuredClone"
  }
  if (
    inCore(url, "SessionStore") &&
    /withSessionLock|acquire|release|locks\.|semaphore|entry\.users|held/.test(`${name}\n${sourceOf(f)}`)
  ) {
    return "per-session lock (semaphore, FiberRef)"
  }
  if (
    effectModule(url, /\/internal\/effect\/circular\.js$/) &&
    /[Ss]emaphore|[Pp]ermit|take|release|updateTaking/.test(name)
  ) {
    return "per-session lock (semaphore, FiberRef)"
  }
  if (effectModule(url, /\/internal\/(tracer|core-effect)\.js$/) && /[Ss]pan|fn|withParentSpan|Tracer/.test(name)) {
    return "spans (Effect.fn, withSpan)"
  }
  if (effectModule(url, /\/internal\/tracer\.js$/)) return "spans (Effect.fn, withSpan)"
  if (effectModule(url, /\/internal\/(fiberRefs|fiberRefs\/patch|context)\.js$/) || /locally|FiberRef/.test(name)) {
    if (within(url, "/node_modules/effect/")) return "FiberRefs, Effect.locally, Context"
  }
  if (within(url, "/node_modules/effect/")) return "Effect runtime (fibers, gen, exit)"
  if (within(url, "/@mastra/") || within(url, "/node_modules/zod/")) return "Mastra (its engine, zod)"
  if (within(url, "/packages/")) return "sessionflow's own code"
  if (within(url, "/bench/src/workload.ts")) return "the steps' own work"
  if (url.startsWith("node:")) return "Node (HTTP, streams, timers)"
  return undefined
}

/** The category of a stack, leaf first. */
export const categorise = (stack: ReadonlyArray<Frame>): Category => {
  const leaf = stack[0]
  if (leaf === undefined) return "other JS"
  if (leaf.functionName === "(garbage collector)") return "GC"
  if (leaf.functionName === "(program)") return "V8 (program)"
  const caller = stack[1]
  if (
    leaf.url === "" && caller !== undefined &&
    (within(caller.url, "/@effect/sql-sqlite-node/") || within(caller.url, "/better-sqlite3/"))
  ) return "SQL: SQLite itself (better-sqlite3 native calls)"
  for (let i = stack.length - 1; i >= 0; i--) {
    const b = boundary(stack[i]!)
    if (b !== undefined) return b
  }
  // Schema's parsers call Effect's helpers (Either, Predicate, Array): theirs too
  if (stack.some((f) => effectModule(f.url, /\/(ParseResult|Schema|SchemaAST)\.js$/))) return "Schema decode/encode"
  for (const f of stack) {
    const c = nearest(f)
    if (c !== undefined) return c
  }
  return "other JS"
}

// -----------------------------------------------------------------------------
// profiles
// -----------------------------------------------------------------------------

interface CpuNode {
  readonly id: number
  readonly callFrame: Frame
  readonly children?: ReadonlyArray<number>
}
interface CpuProfile {
  readonly nodes: ReadonlyArray<CpuNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}
interface HeapNode {
  readonly callFrame: Frame
  readonly selfSize: number
  readonly children: ReadonlyArray<HeapNode>
}

type Breakdown = Partial<Record<Category, number>>

/** `name file:line` of a frame, with the path shortened to the package. */
const where = (f: Frame) => {
  const at = original(f)
  const url = (at?.file ?? f.url).replace(/^file:\/\//, "")
  const line = at?.line ?? f.lineNumber
  const short = url.includes("/node_modules/")
    ? url.slice(url.lastIndexOf("/node_modules/") + 14)
    : url.includes("/packages/")
    ? url.slice(url.indexOf("/packages/") + 1)
    : url.includes("/bench/")
    ? url.slice(url.indexOf("/bench/") + 1)
    : url
  return `${f.functionName || "(anonymous)"} ${short}${line === undefined || short === "" ? "" : `:${line + 1}`}`
}

/** The functions with the most self time, in each category. */
type Top = Partial<Record<Category, ReadonlyArray<readonly [where: string, ms: number]>>>
type SelfTimes = Map<Category, Map<string, number>>

/**
 * Adds the milliseconds of CPU per category (idle and the profiler left out)
 * and the self time of each function to `out` and `self`; returns the idle
 * milliseconds.
 */
const cpuBreakdown = (profile: CpuProfile, out: Breakdown, self: SelfTimes): number => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const categoryOf = new Map<number, Category | "idle">()
  const of = (id: number): Category | "idle" => {
    const known = categoryOf.get(id)
    if (known !== undefined) return known
    const stack: Array<Frame> = []
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame
      if (f.functionName !== "(root)") stack.push(f)
    }
    // idle, and the inspector's own work (starting and stopping the profiler), are left out
    const leaf = stack[0]
    const c = leaf?.functionName === "(idle)" || (leaf?.functionName === "dispatch" && leaf.url === "")
      ? "idle"
      : categorise(stack)
    categoryOf.set(id, c)
    return c
  }
  let idle = 0
  profile.samples.forEach((id, i) => {
    const c = of(id)
    const ms = (profile.timeDeltas[i] ?? 0) / 1000
    if (c === "idle") {
      idle += ms
      return
    }
    out[c] = (out[c] ?? 0) + ms
    const fns = self.get(c) ?? new Map<string, number>()
    self.set(c, fns)
    const w = where(byId.get(id)!.callFrame)
    fns.set(w, (fns.get(w) ?? 0) + ms)
  })
  return idle
}

const topOf = (self: SelfTimes): Top => {
  const top: Top = {}
  for (const [c, fns] of self) top[c] = [...fns].sort((a, b) => b[1] - a[1]).slice(0, 6)
  return top
}

/** Bytes allocated per category (the sampling heap profiler's estimate). */
const heapBreakdown = (head: HeapNode): Breakdown => {
  const out: Breakdown = {}
  const walk = (node: HeapNode, stack: ReadonlyArray<Frame>) => {
    const here = node.callFrame.functionName === "(root)" ? stack : [node.callFrame, ...stack]
    if (node.selfSize > 0) {
      const c = categorise(here)
      out[c] = (out[c] ?? 0) + node.selfSize
    }
    for (const child of node.children) walk(child, here)
  }
  walk(head, [])
  return out
}

const sumOf = (b: Breakdown) => Object.values(b).reduce((x, y) => x + (y ?? 0), 0)

// -----------------------------------------------------------------------------
// measuring runners side by side
// -----------------------------------------------------------------------------

interface Measured {
  /** wall-clock µs per run, median of the timed chunks */
  readonly usPerRun: number
  /** wall-clock µs per run of each timed chunk, round by round */
  readonly chunks: ReadonlyArray<number>
  /** CPU ms by category over the profiled runs (idle time, e.g. waiting for a server, left out) */
  readonly cpu: Breakdown
  /** the share of the profiled time that was not idle */
  readonly busy: number
  readonly profiledRuns: number
  /** the functions with the most self time in each category (ms over the profiled runs) */
  readonly top: Top
  /** bytes allocated by category over the allocation-sampled runs */
  readonly heap: Breakdown
  readonly allocationRuns: number
  /** GCs per run, and µs of GC per run, in the timed chunks */
  readonly gcPerRun: number
  readonly gcUsPerRun: number
}

/** What a contender runs: `runs` runs on the runner, on sessions of its choice. */
type Drive = (runner: Runner, runs: number) => Promise<void>

/** Sessions of ten runs each: the state stays small (≤ 100 items). */
const smallState = (): Drive => {
  let session = 0
  return async (runner, runs) => {
    for (let done = 0; done < runs; done += 10) await runner.run(`small-${session++}`, Math.min(10, runs - done))
  }
}

/** One session created with `items` items, run on and on. */
const grownState = (items: number): Drive => {
  let seeded = false
  return async (runner, runs) => {
    if (!seeded) {
      await runner.seed("grown", prefilled(items))
      seeded = true
    }
    await runner.run("grown", runs)
  }
}

const session = new Session()
session.connect()

interface Contender {
  readonly label: string
  readonly runner: Runner
  readonly drive: Drive
}

const ROUNDS = 10

/**
 * Measures runners side by side on a noisy machine: they take turns chunk by
 * chunk (GC before each), for the timing and for the CPU profile alike
 * (one short profile per chunk, summed), so that a slow spell hits all.
 * Then each one's allocations, which do not depend on the machine's load.
 */
const measure = async (
  contenders: ReadonlyArray<Contender>,
  runs: number,
  save: string | undefined
): Promise<Array<Measured>> => {
  for (const c of contenders) await c.drive(c.runner, Math.max(100, Math.floor(runs / 2))) // warm-up
  const chunk = Math.max(10, Math.floor(runs / ROUNDS))
  const timed = contenders.map(() => ({ chunks: [] as Array<number>, gcs: 0, gcUs: 0 }))
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, c] of contenders.entries()) {
      await gc()
      // the forced collections between chunks are not counted: the GC profiler starts after them
      const gcProfiler = new GCProfiler()
      gcProfiler.start()
      const t0 = performance.now()
      await c.drive(c.runner, chunk)
      timed[i]!.chunks.push(((performance.now() - t0) * 1000) / chunk)
      const stats = gcProfiler.stop()?.statistics ?? []
      timed[i]!.gcs += stats.length
      timed[i]!.gcUs += stats.reduce((total, s) => total + s.cost, 0)
    }
  }
  const cpu = contenders.map(() => ({ breakdown: {} as Breakdown, self: new Map() as SelfTimes, idle: 0 }))
  await session.post("Profiler.enable")
  await session.post("Profiler.setSamplingInterval", { interval: 100 })
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, c] of contenders.entries()) {
      await gc()
      await session.post("Profiler.start")
      await c.drive(c.runner, chunk)
      const { profile } = await session.post("Profiler.stop")
      cpu[i]!.idle += cpuBreakdown(profile as unknown as CpuProfile, cpu[i]!.breakdown, cpu[i]!.self)
      if (save !== undefined && round === 0) {
        writeFileSync(join(save, `${c.label.replace(/\W+/g, "-")}.cpuprofile`), JSON.stringify(profile))
      }
    }
  }
  await session.post("Profiler.disable")
  const allocationRuns = chunk
  const heap: Array<Breakdown> = []
  await session.post("HeapProfiler.enable")
  for (const c of contenders) {
    await gc()
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true
    })
    await c.drive(c.runner, allocationRuns)
    const { profile } = await session.post("HeapProfiler.stopSampling")
    heap.push(heapBreakdown(profile.head as unknown as HeapNode))
    if (save !== undefined) {
      writeFileSync(join(save, `${c.label.replace(/\W+/g, "-")}.heapprofile`), JSON.stringify(profile))
    }
  }
  await session.post("HeapProfiler.disable")
  return contenders.map((_, i) => ({
    usPerRun: median(timed[i]!.chunks),
    chunks: timed[i]!.chunks,
    cpu: cpu[i]!.breakdown,
    busy: sumOf(cpu[i]!.breakdown) / (sumOf(cpu[i]!.breakdown) + cpu[i]!.idle),
    profiledRuns: ROUNDS * chunk,
    top: topOf(cpu[i]!.self),
    heap: heap[i]!,
    allocationRuns,
    gcPerRun: timed[i]!.gcs / (ROUNDS * chunk),
    gcUsPerRun: timed[i]!.gcUs / (ROUNDS * chunk)
  }))
}

// -----------------------------------------------------------------------------
// cases
// -----------------------------------------------------------------------------

interface Result {
  readonly case: string
  readonly what: string
  readonly regime: string
  readonly steps: number
  readonly measured: Measured
}

interface Spec {
  readonly case: string
  readonly what: string
  readonly regime: "small" | "10k items" | "agent"
  readonly steps: number
  /** `file` is a fresh SQLite file for persisted cases */
  readonly open: (file: string | undefined) => Promise<Runner>
  readonly persisted: boolean
}

const Sessionflow = () => import("./systems/sessionflow.ts")

/** Runs specs side by side and closes their runners. */
const together = async (specs: ReadonlyArray<Spec>, runs: number, save: string | undefined): Promise<Array<Result>> => {
  const files: Array<string> = []
  const contenders: Array<Contender> = []
  try {
    for (const s of specs) {
      const file = s.persisted ? tempDb(`profile-${s.case}`) : undefined
      if (file !== undefined) files.push(file)
      const label = `${s.case} ${s.regime} ${s.steps} step${s.steps === 1 ? "" : "s"}`
      contenders.push({
        label,
        runner: await s.open(file),
        drive: s.regime === "10k items"
          ? grownState(10_000)
          : s.regime === "small"
          ? smallState()
          : (runner, n) => runner.run("session", n)
      })
    }
    log(`profiling ${contenders.map((c) => c.label).join(" | ")}`)
    const measured = await measure(contenders, runs, save)
    for (const [i, c] of contenders.entries()) log(`  ${c.label}: ${format(measured[i]!.usPerRun)} µs/run`)
    return specs.map((s, i) => ({
      case: s.case,
      what: s.what,
      regime: s.regime,
      steps: s.steps,
      measured: measured[i]!
    }))
  } finally {
    for (const c of contenders) await c.runner.close()
    for (const f of files) removeDb(f)
  }
}

interface Case {
  readonly name: string
  readonly what: string
  readonly open: (steps: number, file: string | undefined) => Promise<Runner>
  readonly persisted: boolean
  readonly runs: number
}

const cases = (runs: number | undefined): Array<Case> => [
  {
    name: "w1-typed",
    what: "W1: typed state (Schema), SessionStore.layerMemory",
    open: async (steps) => (await Sessionflow()).make({ typed: true, steps }),
    persisted: false,
    runs: runs ?? 1000
  },
  {
    name: "w1-untyped",
    what: "W1: untyped state, SessionStore.layerMemory",
    open: async (steps) => (await Sessionflow()).make({ typed: false, steps }),
    persisted: false,
    runs: runs ?? 1000
  },
  {
    name: "w1-mastra",
    what: "W1, the peer: a Mastra workflow without storage (its time, by the same categories)",
    open: async (steps) => (await import("./systems/mastra.ts")).make({ storage: "none", steps }),
    persisted: false,
    runs: runs ?? 1000
  },
  {
    name: "w2-typed",
    what: "W2: typed state, SqliteSessionStore.layer (synchronous=FULL)",
    open: async (steps, file) => (await Sessionflow()).make({ typed: true, steps, filename: file }),
    persisted: true,
    runs: runs ?? 500
  }
]

/** A case: its 10-step and 1-step runs on a small state side by side, then its 10-step runs on 10,000 items. */
const profileCase = async (c: Case, save: string | undefined): Promise<Array<Result>> => {
  const spec = (regime: Spec["regime"], steps: number): Spec => ({
    case: c.name,
    what: c.what,
    regime,
    steps,
    open: (file) => c.open(steps, file),
    persisted: c.persisted
  })
  return [
    ...(await together([spec("small", STEPS), spec("small", 1)], c.runs, save)),
    ...(await together([spec("10k items", STEPS)], Math.max(50, Math.floor(c.runs / 5)), save))
  ]
}

/** W6: sessionflow's agent step and the bare SDK side by side, against the test server in its own process. */
const w6 = async (runs: number, save: string | undefined): Promise<Array<Result>> => {
  const { startServer } = await import("./workloads.ts")
  const Agent = await import("./systems/agent.ts")
  const { server, stop } = await startServer()
  try {
    return await together(
      [
        {
          case: "w6-sessionflow",
          what: "W6: Step.agent on OpenAIChat, 2 HTTP exchanges",
          regime: "agent",
          steps: 1,
          open: () => Agent.sessionflow(server),
          persisted: false
        },
        {
          case: "w6-sdk",
          what: "W6: the openai SDK directly, the same 2 exchanges",
          regime: "agent",
          steps: 1,
          open: () => Agent.sdk(server),
          persisted: false
        }
      ],
      runs,
      save
    )
  } finally {
    await stop()
  }
}

// -----------------------------------------------------------------------------
// main
// -----------------------------------------------------------------------------

const runsArg = args.runs === undefined ? undefined : Math.max(20, Number(args.runs))
const selected = args.case?.split(",").map((s) => s.trim())
const results: Array<Result> = []
const started = performance.now()
try {
  for (const c of cases(runsArg)) {
    if (selected === undefined || selected.includes(c.name)) results.push(...(await profileCase(c, args.save)))
  }
  if (selected === undefined || selected.includes("w6")) results.push(...(await w6(runsArg ?? 300, args.save)))
} finally {
  cleanupTemp()
  session.disconnect()
}

// -----------------------------------------------------------------------------
// report
// -----------------------------------------------------------------------------

const pct = (x: number) => `${(x * 100).toFixed(0)} %`
const signed = (x: number) => (x < 0 ? `−${format(-x)}` : format(x))
/**
 * µs per run of a category: its share of the profiled CPU time times the
 * timed (unprofiled) CPU time per run, that is the wall time per run less
 * the idle share (waiting for the server in W6).
 */
const usPerRun = (m: Measured, c: Category) => ((m.cpu[c] ?? 0) / sumOf(m.cpu)) * m.usPerRun * m.busy
const lines: Array<string> = []

for (const r of results) {
  const m = r.measured
  const cpuTotal = sumOf(m.cpu)
  const heapTotal = sumOf(m.heap)
  lines.push(
    `### ${r.case} — ${r.regime}, ${r.steps} step${r.steps === 1 ? "" : "s"} a run`,
    "",
    `${r.what}. Timed: ${format(m.usPerRun)} µs a run${
      r.steps > 1 ? ` (${format(m.usPerRun / r.steps)} µs a step)` : ""
    }; ` +
      `busy ${pct(m.busy)} of the profiled time (idle: waiting for I/O or, on a busy machine, for a core); ` +
      `${format(heapTotal / m.allocationRuns / 1024)} KB allocated a run; ` +
      `${format(m.gcPerRun)} GCs a run (${format(m.gcUsPerRun)} µs).`,
    "",
    "| category | CPU | µs/run | KB allocated/run | top functions (self time) |",
    "|---|--:|--:|--:|---|",
    ...CATEGORIES.filter((c) => (m.cpu[c] ?? 0) > 0 || (m.heap[c] ?? 0) > 0)
      .sort((a, b) => (m.cpu[b] ?? 0) - (m.cpu[a] ?? 0))
      .map((c) =>
        `| ${c} | ${pct((m.cpu[c] ?? 0) / cpuTotal)} | ${format(usPerRun(m, c))} | ${
          format((m.heap[c] ?? 0) / m.allocationRuns / 1024)
        } | ${(m.top[c] ?? []).slice(0, 3).map(([w, ms]) => `${w} (${pct(ms / (m.cpu[c] ?? 1))})`).join("; ")} |`
      ),
    ""
  )
}

// per run vs per step, from the 1-step and 10-step runs on a small state
interface Split {
  readonly case: string
  readonly usPerRun: number
  readonly usPerStep: number
  readonly perRun: Breakdown
  readonly perStep: Breakdown
}
const splits: Array<Split> = []
for (const name of new Set(results.map((r) => r.case))) {
  const ten = results.find((r) => r.case === name && r.regime === "small" && r.steps === STEPS)?.measured
  const one = results.find((r) => r.case === name && r.regime === "small" && r.steps === 1)?.measured
  if (ten === undefined || one === undefined) continue
  const perStep: Breakdown = {}
  const perRun: Breakdown = {}
  for (const c of CATEGORIES) {
    perStep[c] = (usPerRun(ten, c) - usPerRun(one, c)) / (STEPS - 1)
    perRun[c] = usPerRun(one, c) - perStep[c]!
  }
  // chunks of one round ran one right after the other: the median of the per-round differences
  const usPerStep = median(ten.chunks.map((t, r) => (t - one.chunks[r]!) / (STEPS - 1)))
  splits.push({ case: name, usPerRun: one.usPerRun - usPerStep, usPerStep, perRun, perStep })
}
if (splits.length > 0) {
  lines.push(
    "### Per run and per step",
    "",
    "Small state; the 1-step and the 10-step workflow side by " +
      "side, chunk by chunk: per step = (10-step − 1-step) / 9 " +
      "(timed: the median over the rounds), per run = the 1-step " +
      "run less one step; each category is its share of the " +
      "profile times the timed µs. A difference of two noisy figures: small or negative entries are noise.",
    "",
    `| category | ${splits.map((s) => `${s.case} µs/run | µs/step`).join(" | ")} |`,
    `|---|${splits.map(() => "--:|--:").join("|")}|`,
    `| **timed** | ${splits.map((s) => `**${signed(s.usPerRun)}** | **${signed(s.usPerStep)}**`).join(" | ")} |`,
    ...CATEGORIES.filter((c) =>
      splits.some((s) => Math.abs(s.perRun[c] ?? 0) >= 1 || Math.abs(s.perStep[c] ?? 0) >= 0.5)
    )
      .map((c) =>
        `| ${c} | ${splits.map((s) => `${signed(s.perRun[c] ?? 0)} | ${signed(s.perStep[c] ?? 0)}`).join(" | ")} |`
      ),
    ""
  )
}

const seconds = (performance.now() - started) / 1000
process.stdout.write(
  `sessionflow profile — Node ${process.version}; ${format(seconds)} s; a shared machine: noisy, read the shares\n\n` +
    lines.join("\n") + "\n"
)
const out = args.out ?? fileURLToPath(new URL("../profile-results.json", import.meta.url))
writeFileSync(
  out,
  JSON.stringify({ generatedAt: new Date().toISOString(), node: process.version, seconds, results, splits }, null, 2) +
    "\n"
)
log(`wrote ${out}`)
