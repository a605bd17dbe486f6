import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { Effect, Queue, Schema, Stream, TestClock } from "effect"
import { collecting, memory, nextOf, on, onStream, processes } from "./utils.js"

/** A state whose stored form differs from its decoded form (the count is kept as text). */
class Counter extends SessionState.Tag("test/WatchCounter")<Counter>()({
  count: Schema.NumberFromString
}) {}

const counter = (options: { readonly sessionId?: string; readonly userId?: string } = {}) =>
  Workflow.make({
    name: "counter",
    state: Counter,
    sessionState: { count: "0" },
    ...options,
    steps: [Step.make("increment", () => Counter.update((s) => ({ count: s.count + 1 })))]
  })

const summary = (
  update: Workflow.SessionUpdate<{ readonly count: number }>
) => [update.version, update.state.count, update.runId]

describe("Workflow.watch", () => {
  it.scoped(
    "streams the session's current version, then each run's commit, with the state decoded and the run's id",
    () =>
      Effect.gen(function*() {
        const wf = counter()
        const first = yield* Workflow.run(wf, "go", { sessionId: "c" })
        const watcher = yield* collecting(Workflow.watch(wf, "c"))
        assert.deepStrictEqual(summary(yield* nextOf(watcher)), [1, 1, first.runId])
        const second = yield* Workflow.run(wf, "go", { sessionId: "c" })
        const update = yield* nextOf(watcher)
        assert.deepStrictEqual(summary(update), [2, 2, second.runId])
        // decoded: the stored "2" arrives as the number 2
        assert.strictEqual(typeof update.state.count, "number")
        assert.strictEqual(update.sessionId, "c")
        // a change outside a run has no run id
        yield* Workflow.updateSessionState(wf, "c", (s) => ({ count: s.count * 10 }))
        assert.deepStrictEqual(summary(yield* nextOf(watcher)), [3, 20, undefined])
      }).pipe(memory)
  )

  it.scoped("watches the workflow's own sessionId when none is given; without either it is SessionIdRequired", () =>
    Effect.gen(function*() {
      const fixed = counter({ sessionId: "fixed" })
      const watcher = yield* collecting(Workflow.watch(fixed))
      // the session does not exist yet: nothing until its first run
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Queue.size(watcher.queue), 0)
      const run = yield* Workflow.run(fixed, "go")
      assert.deepStrictEqual(summary(yield* nextOf(watcher)), [1, 1, run.runId])
      const error = yield* Effect.flip(Stream.runDrain(Workflow.watch(counter())))
      assert.strictEqual(error._tag, "SessionIdRequired")
      const invalid = yield* Effect.flip(Stream.runDrain(Workflow.watch(counter(), "bad-\ud800")))
      assert.strictEqual(invalid._tag, "InvalidSessionId")
    }).pipe(memory))

  it.scoped("a session owned by another user fails the watch with SessionOwnershipError, like a read", () =>
    Effect.gen(function*() {
      const wf = counter()
      yield* Workflow.run(wf, "go", { sessionId: "owned", userId: "alice" })
      const asBob = yield* Effect.flip(Stream.runDrain(Workflow.watch(wf, "owned", { userId: "bob" })))
      assert(asBob._tag === "SessionOwnershipError")
      assert.deepInclude(asBob, { sessionId: "owned", ownerId: "alice", userId: "bob" })
      const anonymous = yield* Effect.flip(Stream.runDrain(Workflow.watch(wf, "owned")))
      assert.strictEqual(anonymous._tag, "SessionOwnershipError")
      // the owner, given as an option or as the workflow's user
      const [asAlice] = yield* Stream.runCollect(Stream.take(Workflow.watch(wf, "owned", { userId: "alice" }), 1))
      assert.deepStrictEqual(asAlice!.state, { count: 1 })
      const [asAlicesWorkflow] = yield* Stream.runCollect(
        Stream.take(Workflow.watch(counter({ userId: "alice" }), "owned"), 1)
      )
      assert.strictEqual(asAlicesWorkflow!.version, 1)
      // a session created later by another user fails the watch when it appears
      const waiting = yield* collecting(Workflow.watch(wf, "later", { userId: "bob" }))
      yield* Workflow.run(wf, "go", { sessionId: "later", userId: "alice" })
      const exit = yield* waiting.fiber.await
      assert(exit._tag === "Failure")
      assert.include(String(exit.cause), "SessionOwnershipError")
    }).pipe(memory))

  it.scoped(
    "a committed state that fails the workflow's Schema ends the watch with StateDecodeError naming the session",
    () =>
      Effect.gen(function*() {
        const wf = counter()
        yield* Workflow.run(wf, "go", { sessionId: "c" })
        const watcher = yield* collecting(Workflow.watch(wf, "c"))
        assert.strictEqual((yield* nextOf(watcher)).version, 1)
        const store = yield* SessionStore.SessionStore
        yield* store.commit({ sessionId: "c", workflowName: "counter", expectedVersion: 1, state: { count: "many" } })
        const exit = yield* watcher.fiber.await
        assert(exit._tag === "Failure")
        const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
        assert(error?._tag === "StateDecodeError")
        assert.strictEqual(error.sessionId, "c")
      }).pipe(memory)
  )

  it.scoped("a watch on one process sees the runs of another process on the same store", () =>
    Effect.gen(function*() {
      const { make } = yield* processes
      const a = make()
      const b = make()
      const wf = counter()
      const runs = [(yield* Workflow.run(wf, "go", { sessionId: "shared" }).pipe(on(b))).runId]
      const watcher = yield* collecting(Workflow.watch(wf, "shared").pipe(onStream(a)))
      const seen = [summary(yield* nextOf(watcher))]
      // the watch has started: every later commit of the other process arrives, in order
      for (let i = 0; i < 2; i++) runs.push((yield* Workflow.run(wf, "go", { sessionId: "shared" }).pipe(on(b))).runId)
      seen.push(summary(yield* nextOf(watcher)), summary(yield* nextOf(watcher)))
      assert.deepStrictEqual(seen, [[1, 1, runs[0]], [2, 2, runs[1]], [3, 3, runs[2]]])
    }))
})
