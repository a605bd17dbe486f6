/**
 * The server's load figure: requests per second and p99 latency of a small
 * run (`POST /workflows/bench/runs` as JSON, a new session each, ten steps)
 * at 1, 16 and 64 concurrent clients, over SQLite (a temp file) and
 * PostgreSQL (`SESSIONFLOW_TEST_DATABASE_URL`, else the local test database;
 * skipped when it does not answer). The server runs in this process with
 * `WorkflowServer.serve` on 127.0.0.1 (its defaults: the edge checks, the
 * security headers, Debug request logging off).
 *
 *   node --import tsx src/server-load.ts [--requests N]   (default 2,000 per case)
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { SessionStore } from "../../packages/core/src/index.ts"
import { WorkflowServer } from "../../packages/server/src/index.ts"
import { PgSessionStore } from "../../packages/store-pg/src/index.ts"
import { SqliteSessionStore } from "../../packages/store-sqlite/src/index.ts"
import { workflow } from "./w7-workflow.ts"

const argIndex = process.argv.indexOf("--requests")
const requests = argIndex > 0 ? Number(process.argv[argIndex + 1]) : 2000
const clients = [1, 16, 64]
const pgUrl = process.env.SESSIONFLOW_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

interface Row {
  readonly store: string
  readonly clients: number
  readonly requests: number
  readonly perSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly failures: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

/** `requests` runs, `concurrency` at a time, each timed. */
const drive = async (url: string, tag: string, concurrency: number): Promise<Omit<Row, "store">> => {
  const latencies: Array<number> = []
  let failures = 0
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < requests) {
      const i = next++
      const t0 = performance.now()
      const response = await fetch(`${url}/workflows/bench/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ input: null, sessionId: `${tag}-${concurrency}-${i}` })
      })
      await response.arrayBuffer()
      latencies.push(performance.now() - t0)
      if (response.status !== 200) failures++
    }
  }))
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  return {
    clients: concurrency,
    requests,
    perSecond: Math.round(requests / seconds),
    p50Ms: Math.round(percentile(latencies, 0.5) * 10) / 10,
    p99Ms: Math.round(percentile(latencies, 0.99) * 10) / 10,
    failures
  }
}

const measure = (name: string, store: Layer.Layer<SessionStore.SessionStore, unknown>) =>
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(
      WorkflowServer.serve({ workflows: [workflow], port: 0, page: false, docs: false }).pipe(Layer.provide(store))
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("not a TCP server")
    const url = `http://127.0.0.1:${address.port}`
    const tag = crypto.randomUUID().slice(0, 8)
    const rows: Array<Row> = []
    for (const concurrency of clients) {
      rows.push({ store: name, ...(yield* Effect.promise(() => drive(url, tag, concurrency))) })
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

console.log("| store | clients | requests | req/s | p50 ms | p99 ms | failures |")
console.log("|---|---|---|---|---|---|---|")
for (const r of rows) {
  console.log(`| ${r.store} | ${r.clients} | ${r.requests} | ${r.perSecond} | ${r.p50Ms} | ${r.p99Ms} | ${r.failures} |`)
}
console.log(JSON.stringify({ node: process.version, cpus: os.cpus().length, rows }))
