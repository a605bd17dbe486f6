/**
 * The decoded-state cache over SQLite: a state another connection (another
 * store, another OS process) committed between two runs is always seen.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { spawnFixture, tempFile } from "./processes.js"

// the same workflow as fixtures/appendWorker.ts runs
class Items extends SessionState.Tag("fixtures/Items")<Items>()({ items: Schema.Array(Schema.String) }) {}

const appendWorkflow = Workflow.make({
  name: "append",
  state: Items,
  sessionState: { items: [] },
  steps: [Step.make("append", (input) => Items.update((s) => ({ items: [...s.items, String(input.input)] })))]
})

/** A SQLite store on `filename` whose loads are recorded: whether each left the state out (`unchanged`). */
const openSpied = (filename: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(SqliteSessionStore.layer({ filename }))
    const sqlite = Context.get(context, SessionStore.SessionStore)
    const loads: Array<boolean> = []
    const store = SessionStore.make({
      ...sqlite,
      load: (sessionId, options) =>
        Effect.tap(sqlite.load(sessionId, options), (found) =>
          Effect.sync(() => loads.push(Option.exists(found, (s) => s.unchanged === true)))),
      // a run reads its session through findSession
      findSession: (sessionId, options) =>
        Effect.tap(sqlite.findSession(sessionId, options), (found) =>
          Effect.sync(() =>
            loads.push(found._tag === "Stored" && found.session.unchanged === true)
          ))
    })
    return { store, loads }
  })

const append = (store: SessionStore.Service, item: string) =>
  Effect.map(
    Workflow.run(appendWorkflow, item, { sessionId: "shared" }).pipe(
      Effect.provideService(SessionStore.SessionStore, store)
    ),
    (output) => output.state.items
  )

describe("the decoded-state cache on SQLite", () => {
  it.scopedLive("two stores on one file: a commit by the other between two runs is seen", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const a = yield* openSpied(filename)
      const b = yield* openSpied(filename)
      yield* append(a.store, "A-0")
      yield* append(a.store, "A-1")
      assert.deepStrictEqual(yield* append(a.store, "A-2"), ["A-0", "A-1", "A-2"])
      assert.deepStrictEqual(a.loads, [false, false, true])
      assert.deepStrictEqual(yield* append(b.store, "B-0"), ["A-0", "A-1", "A-2", "B-0"])
      assert.deepStrictEqual(yield* append(a.store, "A-3"), ["A-0", "A-1", "A-2", "B-0", "A-3"])
      assert.deepStrictEqual(a.loads, [false, false, true, false])
    }), 60_000)

  it.scopedLive("a commit by another OS process between two runs is seen", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const a = yield* openSpied(filename)
      yield* append(a.store, "A-0")
      yield* append(a.store, "A-1")
      // this store holds the state of version 2; another process commits version 3
      const worker = yield* spawnFixture("appendWorker.ts", [filename, "shared", "B", "1", "workflow"])
      yield* worker.ready
      yield* worker.start
      yield* worker.exit
      assert.deepStrictEqual(yield* append(a.store, "A-2"), ["A-0", "A-1", "B-0", "A-2"])
      assert.deepStrictEqual(yield* append(a.store, "A-3"), ["A-0", "A-1", "B-0", "A-2", "A-3"])
      // the run after the other process's commit read the state again; the next one had it
      assert.deepStrictEqual(a.loads, [false, false, false, true])
      const stored = Option.getOrThrow(yield* a.store.load("shared"))
      assert.strictEqual(stored.version, 5)
      assert.deepStrictEqual(stored.state, { items: ["A-0", "A-1", "B-0", "A-2", "A-3"] })
    }), 120_000)
})
