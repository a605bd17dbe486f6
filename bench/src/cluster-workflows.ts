/**
 * What `cluster.ts` and its runner processes (`cluster-runner.ts`) share:
 * the workflows (every step execution appends a line to a side-effect file,
 * so retries and re-executions are counted across processes), the cluster's
 * settings and the connections to the bench's PostgreSQL schema.
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import type * as ShardingConfig from "@effect/cluster/ShardingConfig"
import { PgClient } from "@effect/sql-pg"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { appendFileSync } from "node:fs"
import { ClusterPlacement } from "../../packages/cluster/src/index.ts"
import { RunContext, SessionState, Step, Workflow } from "../../packages/core/src/index.ts"
import { PgSessionStore } from "../../packages/store-pg/src/index.ts"

export const pgUrl = process.env.SESSIONFLOW_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

class Count extends SessionState.Tag("bench/ClusterCount")<Count>()({ count: Schema.Number }) {}
class Items extends SessionState.Tag("bench/ClusterItems")<Items>()({ items: Schema.Array(Schema.String) }) {}

/** How long each step of the durable workflow takes. */
export const durableStepMillis = 250

/** The lease of the durable runs (how long a dead runner's run stays taken). */
export const leaseDuration = Duration.seconds(2)

export const workflows = (effects: string) => {
  /** One step adding one to the session's count (durability `"run"`: one commit). */
  const hot = Workflow.make({ name: "hot", state: Count, sessionState: { count: 0 } }).pipe(
    Workflow.andThen("add", () =>
      Effect.gen(function*() {
        appendFileSync(effects, `${yield* RunContext.runId} add ${process.pid}\n`)
        return yield* Count.modify((s) => [s.count + 1, { count: s.count + 1 }])
      }))
  )
  /** Four journaled steps (durability `"step"`: a commit per step). */
  const durable = Workflow.make({
    name: "durable",
    state: Items,
    sessionState: { items: [] },
    durability: "step",
    steps: [1, 2, 3, 4].map((n) =>
      Step.make(`step-${n}`, () =>
        Effect.gen(function*() {
          yield* Effect.sleep(Duration.millis(durableStepMillis))
          appendFileSync(effects, `${yield* RunContext.runId} step-${n} ${process.pid}\n`)
          yield* Items.update((s) => ({ items: [...s.items, String(n)] }))
          return n
        }))
    )
  })
  return { hot, durable }
}

/** The package's tuned settings and a runner's address (none: a client). */
export const shardingConfig = (port: number | undefined): Partial<ShardingConfig.ShardingConfig["Type"]> => ({
  ...ClusterPlacement.shardingConfig,
  runnerAddress: port === undefined ? Option.none() : Option.some(RunnerAddress.make("127.0.0.1", port))
})

/**
 * The cluster's tables (through the connection's `search_path`) and the
 * store, in `schema`; small pools (the database's 100 connections are shared).
 */
export const layers = (schema: string, storeConnections: number) => {
  const url = new URL(pgUrl)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return {
    sql: PgClient.layer({
      url: Redacted.make(url.toString()),
      applicationName: "sessionflow-bench-cluster",
      maxConnections: 4
    }),
    store: PgSessionStore.layer({ url: pgUrl, schema, maxConnections: storeConnections })
  }
}

/** What a workload of runs measured. */
export interface Figures {
  readonly setup: string
  readonly clients: number
  readonly runs: number
  readonly perSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** step executions beyond one per run */
  readonly retries: number
  readonly failures: number
}

/** The `p` quantile of sorted latencies. */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
