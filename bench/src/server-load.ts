/**
 * The server's load figure: requests per second and p99 latency of a small
 * run (`POST /workflows/bench/runs` as JSON, a new session each, ten steps)
 * at 1, 16 and 64 concurrent clients, over SQLite (a temp file) and
 * PostgreSQL (`SESSIONFLOW_TEST_DATABASE_URL`, else the local test database;
 * skipped when it does not answer). The server runs in this process with
 * `WorkflowServer.serve` on 127.0.0.1 (its defaults: the edge checks, the
 * security headers, Debug request logging off). Each store is warmed up
 * first (`--warmup N` requests, default 500, not counted); beside each HTTP
 * row, the same runs with `Workflow.run` in this process on the same store
 * (`in-process`), so that a figure taken on a busy machine still tells what
 * the server adds to the engine.
 *
 *   node --import tsx src/server-load.ts [--requests N] [--warmup N]   (default 2,000 per case)
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type SessionStore, Workflow } from "../../packages/core/src/index.ts"
import { WorkflowServer } from "../../packages/server/src/index.ts"
import { PgSessionStore } from "../../packages/store-pg/src/index.ts"
import { SqliteSessionStore } from "../../packages/store-sqlite/src/index.ts"
import { postRun, summarize, type Summary, timeCalls } from "./load.ts"
import { workflow } from "./w7-workflow.ts"

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(name)
  return index > 0 ? Number(process.argv[index + 1]) : fallback
}
const requests = arg("--requests", 2000)
const warmup = arg("--warmup", 500)
const clients = [1, 16, 64]
const pgUrl = process.env.SESSIONFLOW_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

interface Row extends Summary {
  readonly store: string
  /** over HTTP, or `Workflow.run` in this process */
  readonly via: "http" | "in-process"
}

const drive = async (call: (i: number) => Promise<boolean>, concurrency: number, count = requests) =>
  summarize(concurrency, [await timeCalls(call, concurrency, count)])

const measure = (name: string, store: Layer.Layer<SessionStore.SessionStore, unknown>) =>
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(
      WorkflowServer.serve({ workflows: [workflow], port: 0, page: false, docs: false }).pipe(Layer.provideMerge(store))
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("not a TCP server")
    const url = `http://127.0.0.1:${address.port}`
    const tag = crypto.randomUUID().slice(0, 8)
    const http = (prefix: string) => postRun(url, `${tag}-${prefix}`)
    const inProcess = (prefix: string) => (i: number) =>
      Effect.runPromise(
        Workflow.run(workflow, null, { sessionId: `${tag}-${prefix}-${i}` }).pipe(
          Effect.provide(context),
          Effect.as(true),
          Effect.orElseSucceed(() => false)
        )
      )
    // JIT, lazily loaded modules, the store's first statements: not counted
    yield* Effect.promise(() => drive(http("warm-http"), 16, warmup))
    yield* Effect.promise(() => drive(inProcess("warm-run"), 16, warmup))
    const rows: Array<Row> = []
    for (const concurrency of clients) {
      rows.push({
        store: name,
        via: "http",
        ...(yield* Effect.promise(() => drive(http(`h${concurrency}`), concurrency)))
      })
      rows.push({
        store: name,
        via: "in-process",
        ...(yield* Effect.promise(() => drive(inProcess(`p${concurrency}`), concurrency)))
      })
    }
    return rows
  }))

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-server-load-"))
const schema = "bench_server" // reused by every run (the session ids are new each time)
const rows = await Effect.runPromise(Effect.gen(function*() {
  const sqlite = yield* measure("sqlite", SqliteSessionStore.layer({ filename: path.join(dir, "sessions.db") }))
  const pg = yield* measure("postgres", PgSessionStore.layer({ url: pgUrl, schema })).pipe(
    Effect.catchAllCause((cause) =>
      Effect.as(Effect.logWarning("PostgreSQL skipped: it did not answer", cause), [] as Array<Row>)
    )
  )
  return [...sqlite, ...pg]
}))
fs.rmSync(dir, { recursive: true, force: true })

const load = os.loadavg().map((l) => l.toFixed(1)).join(" ")
console.log("| store | via | clients | requests | req/s | p50 ms | p99 ms | failures |")
console.log("|---|---|---|---|---|---|---|---|")
for (const r of rows) {
  console.log(
    `| ${r.store} | ${r.via} | ${r.clients} | ${r.requests} | ` +
      `${r.perSecond} | ${r.p50Ms} | ${r.p99Ms} | ${r.failures} |`
  )
}
console.log(`load average at the end: ${load} (${os.cpus().length} cores)`)
console.log(JSON.stringify({ node: process.version, cpus: os.cpus().length, loadAverage: os.loadavg(), rows }))
