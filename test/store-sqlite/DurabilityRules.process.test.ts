/**
 * A durability rule with a real SQLite failure: another process holds the
 * database's write lock past the store's `lockTimeout` while a tracked run
 * makes its final commit.
 */
import { describe, it } from "@effect/vitest"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { assertUnfinishedThenRecovered, forkHeldRun, heldBeforeCommit } from "../durabilityRules.js"
import { spawnFixture, tempFile } from "./processes.js"

describe("durability rules (SQLite, the write lock held elsewhere)", () => {
  it.live(
    "a tracked run whose final commit waits past lockTimeout is " +
      "RunUnfinished; stored unfinished; recovery elsewhere commits it once",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const filename = yield* tempFile
        const running = yield* Layer.build(SqliteSessionStore.layer({ filename, lockTimeout: "500 millis" }))
        const { proceed, reached, workflow } = yield* heldBeforeCommit
        const run = yield* forkHeldRun(workflow, running)
        yield* Deferred.await(reached)
        const holder = yield* spawnFixture("lockHolder.ts", [filename, "20000"])
        yield* holder.ready
        yield* Deferred.succeed(proceed, undefined)
        const told = yield* Fiber.join(run)
        yield* holder.start
        yield* holder.exit
        yield* assertUnfinishedThenRecovered(workflow, told, SqliteSessionStore.layer({ filename }))
      })),
    60_000
  )
})
