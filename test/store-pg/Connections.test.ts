/**
 * A store on PostgreSQL holds no more connections than its pool allows and
 * one listening connection, however its watchers come and go: reconnect
 * storms of event-log followers (each `Workflow.events` follower listens on
 * its run's channel, and stops when its client goes) once opened a new
 * listening connection each time the last follower left and the next came,
 * while the one before was still closing.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { Context, Effect, Fiber, Layer, Stream } from "effect"
import { freshSchema, testUrl, withClient } from "./pg.js"

const connectionsOf = (applicationName: string) =>
  Effect.map(
    withClient((sql) =>
      sql<
        { n: number | string }
      >`SELECT COUNT(*) AS n FROM pg_stat_activity WHERE application_name = ${applicationName}`
    ),
    ([row]) => Number(row?.n ?? 0)
  )

describe("PgSessionStore connections", () => {
  it.live(
    "followers of run logs that come and go in storms: at most maxConnections in the pool and one listening",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const schema = yield* freshSchema
        const applicationName = `sf-conn-${crypto.randomUUID().slice(0, 8)}`
        const maxConnections = 4
        const store = yield* Effect.map(
          Layer.build(
            // (a pooled connection closed for idleness is still counted by the server until its backend
            // exits, while the pool may open its replacement: on a loaded machine the storms outlast the
            // default idle timeout; the pool itself never holds more than maxConnections)
            PgSessionStore.layer({ url: testUrl, schema, maxConnections, applicationName, idleTimeout: "1 hour" })
          ),
          Context.get(SessionStore.SessionStore)
        )
        let most = 0
        const sampler = yield* Effect.fork(Effect.forever(Effect.zipRight(
          Effect.flatMap(connectionsOf(applicationName), (n) => Effect.sync(() => (most = Math.max(most, n)))),
          Effect.sleep("5 millis")
        )))
        for (let storm = 0; storm < 40; storm++) {
          // 25 followers of a few runs listen at once, read a little, and go
          const followers = yield* Effect.forEach(
            Array.from({ length: 25 }, (_, i) => `run-${i % 5}`),
            (runId) =>
              Effect.fork(Stream.runDrain(Stream.take(store.watchEvents(runId, { pollInterval: "50 millis" }), 2))),
            { concurrency: "unbounded" }
          )
          yield* Effect.forEach(followers, Fiber.join, { discard: true })
        }
        yield* Fiber.interrupt(sampler)
        assert.isAtMost(most, maxConnections + 1, `the store held ${most} connections`)
      })),
    120_000
  )
})
