/**
 * One hot session, 8 clients: the plain PostgreSQL store against the cluster
 * placement. Each client sends `--runs N` runs (default 50) of a one-step
 * workflow that adds one to the session's count, all on the same session.
 *
 * - `postgres`: 8 app servers (8 stores over one schema, each its own owner
 *   and in-process lock, as 8 processes would be), runs with
 *   `retryOnConflict`: a run that lost the race runs again. Retries are the
 *   step's executions beyond one per run.
 * - `cluster`: the cluster placement on `SingleRunner`, its messages and shard
 *   locks in the same PostgreSQL: every run goes through the session's
 *   entity, one at a time. (One runner process holds the session: the
 *   8 clients are fibers of this process sending through the cluster client.)
 *   Twice: with `@effect/cluster`'s own intervals (before) and with
 *   `ClusterPlacement.shardingConfig` (after, `layerSingleRunner`'s default).
 *
 * Both commit each run with the store's one transaction (durability `"run"`);
 * the cluster also stores each run message and its reply in PostgreSQL.
 *
 *   node --import tsx src/cluster-hot.ts [--runs N]   (per client)
 */
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import { PgClient } from "@effect/sql-pg"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as os from "node:os"
import { ClusterPlacement } from "../../packages/cluster/src/index.ts"
import { SessionState, type SessionStore, Workflow } from "../../packages/core/src/index.ts"
import { PgSessionStore } from "../../packages/store-pg/src/index.ts"
import { type Figures, percentile } from "./cluster-workflows.ts"

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(name)
  return index > 0 ? Number(process.argv[index + 1]) : fallback
}
const runsPerClient = arg("--runs", 50)
const clients = 8
const pgUrl = process.env.SESSIONFLOW_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

class Count extends SessionState.Tag("bench/HotCount")<Count>()({ count: Schema.Number }) {}

let executions = 0
const hot = Workflow.make({ name: "hot", state: Count, sessionState: { count: 0 } }).pipe(
  Workflow.andThen("add", () =>
    Effect.suspend(() => {
      executions++
      return Count.modify((s) => [s.count + 1, { count: s.count + 1 }])
    }))
)

interface Row extends Figures {
  readonly finalCount: number
}

/** `clients` clients each sending `runsPerClient` runs with `run(client)`, one after the other. */
const drive = (
  setup: string,
  run: (client: number) => Effect.Effect<unknown, unknown>,
  finalCount: Effect.Effect<number, unknown>
) =>
  Effect.gen(function*() {
    executions = 0
    const latencies: Array<number> = []
    let failures = 0
    const started = performance.now()
    yield* Effect.forEach(
      Array.from({ length: clients }, (_, c) => c),
      (client) =>
        Effect.forEach(Array.from({ length: runsPerClient }), () =>
          Effect.suspend(() => {
            const t0 = performance.now()
            return run(client).pipe(
              Effect.catchAll(() => Effect.sync(() => failures++)),
              Effect.ensuring(Effect.sync(() => latencies.push(performance.now() - t0)))
            )
          }), { discard: true }),
      { concurrency: "unbounded", discard: true }
    )
    const seconds = (performance.now() - started) / 1000
    latencies.sort((a, b) => a - b)
    const runs = clients * runsPerClient
    const row: Row = {
      setup,
      clients,
      runs,
      perSecond: Math.round(runs / seconds),
      p50Ms: Math.round(percentile(latencies, 0.5) * 10) / 10,
      p99Ms: Math.round(percentile(latencies, 0.99) * 10) / 10,
      retries: executions - (runs - failures),
      failures,
      finalCount: yield* finalCount
    }
    return row
  })

const schema = `bench_cluster_${process.pid}`
const admin = PgClient.layer({ url: Redacted.make(pgUrl) })
const inSchema = (() => {
  const url = new URL(pgUrl)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return PgClient.layer({ url: Redacted.make(url.toString()) })
})()

const stateOf = (sessionId: string) => Effect.map(Workflow.getSessionState(hot, sessionId), (s) => s.count)

const plain = Effect.gen(function*() {
  const sessionId = `plain-${crypto.randomUUID()}`
  // 8 stores over one schema: 8 app servers
  const stores = yield* Effect.forEach(
    Array.from({ length: clients }),
    () => Layer.build(PgSessionStore.layer({ url: pgUrl, schema }) as Layer.Layer<SessionStore.SessionStore, unknown>)
  )
  return yield* drive(
    "postgres store, 8 app servers, retryOnConflict",
    (client) => Workflow.run(hot, null, { sessionId, retryOnConflict: 1000 }).pipe(Effect.provide(stores[client]!)),
    stateOf(sessionId).pipe(Effect.provide(stores[0]!))
  )
})

/** `@effect/cluster`'s own values of the intervals `ClusterPlacement.shardingConfig` sets. */
const upstream = Object.fromEntries(
  Object.keys(ClusterPlacement.shardingConfig).map((
    key
  ) => [key, ShardingConfig.defaults[key as keyof typeof ShardingConfig.defaults]])
)

const cluster = (setup: string, shardingConfig: typeof ClusterPlacement.shardingConfig | undefined) =>
  Effect.gen(function*() {
    const sessionId = `cluster-${crypto.randomUUID()}`
    const context = yield* Layer.build(
      ClusterPlacement.layerSingleRunner({ workflows: [hot], shardingConfig }).pipe(
        Layer.provideMerge(PgSessionStore.layer({ url: pgUrl, schema })),
        Layer.provide(inSchema)
      )
    )
    const run = () => Workflow.run(hot, null, { sessionId }).pipe(Effect.provide(context))
    // the entity and the first statements: not counted
    yield* run()
    return yield* drive(setup, run, stateOf(sessionId).pipe(Effect.provide(context)))
  })

const rows = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  yield* Effect.acquireRelease(
    Effect.flatMap(PgClient.PgClient, (sql) => sql`CREATE SCHEMA ${sql(schema)}`).pipe(Effect.provide(admin)),
    () =>
      Effect.orDie(
        Effect.flatMap(PgClient.PgClient, (sql) => sql`DROP SCHEMA ${sql(schema)} CASCADE`).pipe(Effect.provide(admin))
      )
  )
  return [
    yield* plain,
    yield* Effect.scoped(cluster("cluster placement (SingleRunner), @effect/cluster's intervals", upstream)),
    yield* Effect.scoped(cluster("cluster placement (SingleRunner), ClusterPlacement.shardingConfig", undefined))
  ]
})))

console.log("| setup | clients | runs | runs/s | p50 ms | p99 ms | retries | failures | final count |")
console.log("|---|---|---|---|---|---|---|---|---|")
for (const r of rows) {
  console.log(
    `| ${r.setup} | ${r.clients} | ${r.runs} | ${r.perSecond} | ${r.p50Ms} ` +
      `| ${r.p99Ms} | ${r.retries} | ${r.failures} | ${r.finalCount} |`
  )
}
console.log(`load average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(" ")} (${os.cpus().length} cores)`)
console.log(JSON.stringify({ node: process.version, cpus: os.cpus().length, loadAverage: os.loadavg(), rows }))
