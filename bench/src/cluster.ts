/**
 * The cluster with its runners in separate processes, against the plain
 * PostgreSQL store: three runner processes (`cluster-runner.ts`, over
 * sockets, messages and shard locks in PostgreSQL) and this process as a
 * client of the cluster (what a stateless app server is).
 *
 * - **spread**: 1,000 new sessions, one run each, `--clients N` (default 32)
 *   clients at a time; the plain store: the same runs on 4 stores in this
 *   process (4 app servers), the same number of clients.
 * - **hot**: 8 clients each sending `--runs N` (default 25) runs one after the
 *   other, all on one session; the plain store: 8 stores (8 app servers),
 *   `retryOnConflict`.
 * - **failover**: `--repeats N` (default 3) times, 6 durable runs (4 journaled
 *   steps of 250 ms, lease 2 s) on new sessions; the runner that has one half
 *   done is killed with SIGKILL; the time from the kill until each of its
 *   runs completes on another runner. A new runner replaces it before the
 *   next repetition.
 *
 * Retries are step executions beyond one per run (every execution appends a
 * line to a side-effect file, whichever process runs it).
 *
 *   node --conditions=@sessionflow/source --import tsx src/cluster.ts [--clients N] [--runs N] [--repeats N]
 */
import { NodeClusterSocket } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { ClusterPlacement } from "../../packages/cluster/src/index.ts"
import { type Placement, type SessionStore, Workflow } from "../../packages/core/src/index.ts"
import { PgSessionStore } from "../../packages/store-pg/src/index.ts"
import {
  type Figures,
  layers,
  leaseDuration,
  percentile,
  pgUrl,
  shardingConfig,
  workflows
} from "./cluster-workflows.ts"
import { median } from "./util.ts"

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(name)
  return index > 0 ? Number(process.argv[index + 1]) : fallback
}
const spreadClients = arg("--clients", 32)
const hotRuns = arg("--runs", 25)
const repeats = arg("--repeats", 3)
const sessions = 1000
const hotClients = 8

const schema = `bench_cluster_${process.pid}`
const dir = mkdtempSync(path.join(os.tmpdir(), "sessionflow-bench-cluster-"))
const effects = path.join(dir, "effects.log")
const lines =
  () => (existsSync(effects) ? readFileSync(effects, "utf8").trim().split("\n").filter((l) => l.length > 0) : [])
const { durable, hot } = workflows(effects)
const load = () => os.loadavg().map((l) => l.toFixed(1)).join(" ")

// --- the runner processes ---

const runnerScript = fileURLToPath(new URL("./cluster-runner.ts", import.meta.url))
const children: Array<ChildProcess> = []
const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
/** Starts a runner; resolves with it once it printed `ready`. */
const startRunner = async (): Promise<ChildProcess> => {
  const port = await freePort()
  const child = spawn(process.execPath, [...process.execArgv, runnerScript, schema, String(port), effects], {
    stdio: ["ignore", "pipe", "inherit"]
  })
  children.push(child)
  await new Promise<void>((resolve, reject) => {
    let out = ""
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk
      if (out.split("\n").includes("ready")) resolve()
    })
    child.on("exit", (code) => reject(new Error(`a runner exited with ${code}`)))
  })
  return child
}
const kill = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.on("exit", () => resolve())
    child.kill("SIGKILL")
  })

// --- measuring ---

interface Row extends Figures {
  readonly workload: string
  readonly load: string
}

const round = (ms: number) => Math.round(ms * 10) / 10

/** `jobs` (one run each) taken by `clients` clients, each one after the other. */
const drive = (
  workload: string,
  setup: string,
  clients: number,
  jobs: ReadonlyArray<(client: number) => Effect.Effect<unknown, unknown>>
) =>
  Effect.gen(function*() {
    const before = lines().length
    const latencies: Array<number> = []
    let failures = 0
    let next = 0
    const started = performance.now()
    yield* Effect.forEach(
      Array.from({ length: clients }, (_, c) => c),
      (client) =>
        Effect.whileLoop({
          while: () => next < jobs.length,
          body: () =>
            Effect.suspend(() => {
              const job = jobs[next++]!
              const t0 = performance.now()
              return job(client).pipe(
                Effect.catchAll((error) =>
                  Effect.sync(() => {
                    if (failures++ === 0) console.error(`${setup}: the first failure: ${String(error)}`)
                  })
                ),
                Effect.ensuring(Effect.sync(() => latencies.push(performance.now() - t0)))
              )
            }),
          step: () => {}
        }),
      { concurrency: "unbounded", discard: true }
    )
    const seconds = (performance.now() - started) / 1000
    latencies.sort((a, b) => a - b)
    const row: Row = {
      workload,
      setup,
      clients,
      runs: jobs.length,
      perSecond: Math.round(jobs.length / seconds),
      p50Ms: round(percentile(latencies, 0.5)),
      p99Ms: round(percentile(latencies, 0.99)),
      retries: lines().length - before - (jobs.length - failures),
      failures,
      load: load()
    }
    console.error(JSON.stringify(row))
    return row
  })

/**
 * `count` stores over the schema (app servers), for the scope;
 * few connections each (the database has 100 for everyone).
 */
const stores = (count: number, connections: number) =>
  Effect.forEach(
    Array.from({ length: count }),
    () =>
      Layer.build(
        PgSessionStore.layer({ url: pgUrl, schema, maxConnections: connections }) as Layer.Layer<
          SessionStore.SessionStore,
          unknown
        >
      )
  )

const main = Effect.gen(function*() {
  // the first runner creates the cluster's tables; then the two others at once
  yield* Effect.promise(startRunner)
  yield* Effect.promise(() => Promise.all([startRunner(), startRunner()]))
  const { sql, store } = layers(schema, 4)
  const client = yield* Layer.build(
    ClusterPlacement.layer.pipe(
      Layer.provideMerge(store),
      Layer.provide(
        NodeClusterSocket.layer({ clientOnly: true, storage: "sql", shardingConfig: shardingConfig(undefined) })
      ),
      Layer.provide(sql)
    )
  )
  const onCluster = <A, E>(self: Effect.Effect<A, E, Placement.Placement | SessionStore.SessionStore>) =>
    Effect.provide(self, client)
  const rows: Array<Row> = []

  // warm-up: every runner's entity manager and the client's connections
  yield* Effect.forEach(
    Array.from({ length: 30 }, (_, i) => `warm-${i}`),
    (sessionId) => onCluster(Workflow.run(hot, null, { sessionId })),
    { concurrency: 10 }
  )

  // spread: 1,000 sessions, one run each
  rows.push(
    yield* Effect.scoped(Effect.flatMap(stores(4, 4), (plainSpread) =>
      drive(
        "1,000 sessions, one run each",
        "PostgreSQL store, 4 app servers",
        spreadClients,
        Array.from({ length: sessions }, (_, i) => (client: number) =>
          Workflow.run(hot, null, { sessionId: `plain-${i}` }).pipe(Effect.provide(plainSpread[client % 4]!)))
      )))
  )
  rows.push(
    yield* drive(
      "1,000 sessions, one run each",
      "cluster, 3 runner processes",
      spreadClients,
      Array.from(
        { length: sessions },
        (_, i) => () => onCluster(Workflow.run(hot, null, { sessionId: `cluster-${i}` }))
      )
    )
  )

  // hot: 8 clients on one session
  rows.push(
    yield* Effect.scoped(Effect.flatMap(stores(hotClients, 2), (plainHot) =>
      drive(
        "one hot session",
        "PostgreSQL store, 8 app servers, retryOnConflict",
        hotClients,
        Array.from({ length: hotClients * hotRuns }, () => (client: number) =>
          Workflow.run(hot, null, { sessionId: "plain-hot", retryOnConflict: 1000 }).pipe(
            Effect.provide(plainHot[client]!)
          ))
      )))
  )
  yield* onCluster(Workflow.run(hot, null, { sessionId: "cluster-hot" }))
  rows.push(
    yield* drive(
      "one hot session",
      "cluster, 3 runner processes",
      hotClients,
      Array.from(
        { length: hotClients * hotRuns },
        () => () => onCluster(Workflow.run(hot, null, { sessionId: "cluster-hot" }))
      )
    )
  )
  const hotCount = (yield* Workflow.getSessionState(hot, "cluster-hot").pipe(Effect.provide(client))).count

  // failover
  const failovers: Array<
    { readonly repeat: number; readonly interrupted: number; readonly ms: ReadonlyArray<number>; readonly load: string }
  > = []
  for (let repeat = 0; repeat < repeats; repeat++) {
    const runs = Array.from(
      { length: 6 },
      (_, i) => ({ sessionId: `failover-${repeat}-${i}`, runId: `failover-${repeat}-${i}-${crypto.randomUUID()}` })
    )
    const ids = new Set(runs.map((r) => r.runId))
    const fibers = yield* Effect.forEach(
      runs,
      ({ runId, sessionId }) =>
        onCluster(Workflow.run(durable, null, { sessionId, runId, leaseDuration })).pipe(
          Effect.andThen(() => Date.now()),
          Effect.fork
        )
    )
    const mine = () => lines().map((l) => l.split(" ") as [string, string, string]).filter(([runId]) => ids.has(runId))
    let victim: string | undefined
    while (victim === undefined) {
      yield* Effect.sleep("20 millis")
      victim = mine().find(([, step]) => step === "step-2")?.[2]
    }
    // into its next step
    yield* Effect.sleep("100 millis")
    const child = children.find((c) => String(c.pid) === victim)!
    yield* Effect.promise(() => kill(child))
    const killedAt = Date.now()
    const done = new Set(mine().filter(([, step]) => step === "step-4").map(([runId]) => runId))
    const interrupted = new Set(
      mine().filter(([runId, , pid]) => pid === victim && !done.has(runId)).map(([runId]) => runId)
    )
    const completed = yield* Effect.forEach(fibers, Fiber.join)
    const ms = runs.flatMap((r, i) => (interrupted.has(r.runId) ? [completed[i]! - killedAt] : []))
    failovers.push({ repeat, interrupted: interrupted.size, ms, load: load() })
    console.error(JSON.stringify(failovers.at(-1)))
    // a new runner in its place, and the shards settled
    yield* Effect.promise(startRunner)
    yield* Effect.sleep("5 seconds")
  }
  return { rows, hotCount, failovers }
})

const admin = PgClient.layer({ url: Redacted.make(pgUrl) })
const startLoad = load()
const result = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  yield* Effect.acquireRelease(
    Effect.flatMap(PgClient.PgClient, (sql) => sql`CREATE SCHEMA ${sql(schema)}`).pipe(Effect.provide(admin)),
    () =>
      Effect.promise(() => Promise.all(children.map(kill))).pipe(
        Effect.andThen(Effect.flatMap(PgClient.PgClient, (sql) => sql`DROP SCHEMA ${sql(schema)} CASCADE`)),
        Effect.provide(admin),
        Effect.orDie
      )
  )
  return yield* main
}))).finally(() => rmSync(dir, { recursive: true, force: true }))

console.log("| workload | setup | clients | runs | runs/s | p50 ms | p99 ms | retries | failures | load average |")
console.log("|---|---|---|---|---|---|---|---|---|---|")
for (const r of result.rows) {
  console.log(
    `| ${r.workload} | ${r.setup} | ${r.clients} | ${r.runs} | ${r.perSecond} ` +
      `| ${r.p50Ms} | ${r.p99Ms} | ${r.retries} | ${r.failures} | ${r.load} |`
  )
}
console.log(
  `\nthe cluster's hot session at the end: count ${result.hotCount} (${hotClients * hotRuns} runs and one warm-up)`
)
const allMs = result.failovers.flatMap((f) => f.ms)
console.log(`\n| failover | interrupted runs | each run: ms from the kill to its completion | load average |`)
console.log("|---|---|---|---|")
for (const f of result.failovers) console.log(`| ${f.repeat + 1} | ${f.interrupted} | ${f.ms.join(", ")} | ${f.load} |`)
console.log(`\nfailover over ${allMs.length} runs: median ${median(allMs)} ms, max ${Math.max(...allMs)} ms`)
console.log(`load average at the start: ${startLoad}, at the end: ${load()} (${os.cpus().length} cores)`)
console.log(JSON.stringify({ node: process.version, cpus: os.cpus().length, ...result }))
process.exit(0)
