/**
 * A durability rule with a real PostgreSQL failure: the backend of a tracked
 * run's final commit is terminated (`pg_terminate_backend`) while the commit
 * waits for a row lock another connection holds.
 */
import { assert, describe, it } from "@effect/vitest"
import { PgSessionStore } from "@sessionflow/store-pg"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { assertUnfinishedThenRecovered, forkHeldRun, heldBeforeCommit } from "../durabilityRules.js"
import { freshSchema, terminateLockWaiter, testUrl, withClient } from "./pg.js"

describe("durability rules (PostgreSQL, a backend terminated)", () => {
  it.live(
    "a tracked run whose final commit loses its backend is " +
      "RunUnfinished; stored unfinished; recovery elsewhere commits it once",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const schema = yield* freshSchema
        const applicationName = `sessionflow-${crypto.randomUUID()}`
        const running = yield* Layer.build(PgSessionStore.layer({ url: testUrl, schema, applicationName }))
        const { proceed, reached, workflow } = yield* heldBeforeCommit
        const run = yield* forkHeldRun(workflow, running)
        yield* Deferred.await(reached)
        // another connection holds the unfinished run's row: the commit waits there
        const locked = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const holder = yield* withClient((sql) =>
          Effect.gen(function*() {
            yield* sql`SELECT run_id FROM ${sql(`${schema}.sessionflow_sessions_active`)} WHERE run_id = 'r' FOR UPDATE`
            yield* Deferred.succeed(locked, undefined)
            yield* Deferred.await(release)
          }).pipe(sql.withTransaction)
        ).pipe(Effect.fork)
        yield* Deferred.await(locked)
        yield* Deferred.succeed(proceed, undefined)
        yield* terminateLockWaiter(applicationName)
        const told = yield* Fiber.join(run)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        assert.strictEqual((told as { _tag?: string })._tag, "RunUnfinished", String(told))
        // recovery in another process (its own pool)
        yield* assertUnfinishedThenRecovered(workflow, told, PgSessionStore.layer({ url: testUrl, schema }))
      })),
    60_000
  )
})
