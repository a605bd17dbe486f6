import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Workflow } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Chunk, Context, Effect, Layer, Schema, Stream } from "effect"
import { lastJsonLine, spawnFixture, tempFile } from "./processes.js"

/** The state of the fixture's `append` workflow, as this process reads it. */
class Items extends SessionState.Tag("fixtures/Items")<Items>()({ items: Schema.Array(Schema.String) }) {}

/** The same workflow name and state as the worker's; this process only watches, it runs nothing. */
const appendWorkflow = Workflow.make({ name: "append", state: Items, sessionState: { items: [] }, steps: [] })

const runs = 20

describe("Workflow.watch across OS processes (SQLite)", () => {
  it.scopedLive(
    "this process watches a session that another process creates and runs a workflow on",
    () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        const store = Context.get(yield* Layer.build(SqliteSessionStore.layer({ filename })), SessionStore.SessionStore)
        const worker = yield* spawnFixture("appendWorker.ts", [filename, "watched", "W", String(runs), "workflow"])
        yield* worker.ready
        // watching before the session exists: it arrives with the worker's first commit
        const watching = yield* Workflow.watch(appendWorkflow, "watched", { pollInterval: "20 millis" }).pipe(
          Stream.takeUntil((update) => update.version === runs),
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray),
          Effect.provideService(SessionStore.SessionStore, store),
          Effect.timeoutFail({
            duration: "60 seconds",
            onTimeout: () => new Error("the watch never saw the last version")
          }),
          Effect.fork
        )
        yield* worker.start
        const { runIds } = lastJsonLine(yield* worker.exit) as { runIds: ReadonlyArray<string> }
        assert.strictEqual(runIds.length, runs)
        const updates = yield* watching.await.pipe(Effect.flatten)

        const last = updates.at(-1)!
        assert.strictEqual(last.version, runs)
        assert.deepStrictEqual(last.state.items, Array.from({ length: runs }, (_, i) => `W-${i}`))
        assert.strictEqual(last.runId, runIds[runs - 1])
        // versions only increase; each version is the state and the run id of the worker's run that made it
        for (const [i, update] of updates.entries()) {
          if (i > 0) assert.isAbove(update.version, updates[i - 1]!.version)
          assert.strictEqual(update.sessionId, "watched")
          assert.strictEqual(update.runId, runIds[update.version - 1])
          assert.strictEqual(update.state.items.length, update.version)
        }
      }),
    120_000
  )
})
