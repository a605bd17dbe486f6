/**
 * `SessionStore.readSession`: a session read for checks made before a run
 * (a server's admission checks) is given to the run, which then does not
 * read the session again — only where the read is what the store would
 * answer, once, and never in place of a newer state.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionStore, Step, Workflow } from "@sessionflow/core"
import { Deferred, Effect, Fiber } from "effect"
import { appendInput, Items, on } from "./utils.js"

/** A store over `backend` that notes the session of every `findSession` that reaches the backend. */
const counted = (backend: SessionStore.Backend) => {
  const reads: Array<string> = []
  const store = SessionStore.make({
    ...backend,
    findSession: (sessionId, options) =>
      Effect.zipRight(Effect.sync(() => reads.push(sessionId)), backend.findSession(sessionId, options))
  })
  return { store, reads }
}

const run = (input: string, sessionId: string, options?: { readonly retryOnConflict?: number }) =>
  Effect.map(Workflow.run(appendInput, input, { ...options, sessionId }), (result) => result.state.items)

describe("SessionStore.readSession", () => {
  it.effect("a run given a new session's read does not read the session again", () =>
    Effect.gen(function*() {
      const { reads, store } = counted(SessionStore.makeMemoryBackend())
      const read = yield* SessionStore.readSession(store, "s", { state: false })
      assert.deepStrictEqual(read.found, { _tag: "New", runs: [] })
      assert.deepStrictEqual(yield* read.ahead(run("a", "s")).pipe(on(store)), ["a"])
      assert.deepStrictEqual(reads, ["s"])
      assert.deepStrictEqual(yield* Workflow.getSessionState(appendInput, "s").pipe(on(store)), { items: ["a"] })
    }))

  it.effect("a stored session read without its state answers a run that starts from its cached state", () =>
    Effect.gen(function*() {
      const { reads, store } = counted(SessionStore.makeMemoryBackend())
      yield* run("a", "s").pipe(on(store))
      yield* run("b", "s").pipe(on(store))
      reads.length = 0
      const read = yield* SessionStore.readSession(store, "s", { state: false })
      assert.strictEqual(read.found._tag === "Stored" && read.found.session.version, 2)
      assert.deepStrictEqual(yield* read.ahead(run("c", "s")).pipe(on(store)), ["a", "b", "c"])
      assert.deepStrictEqual(reads, ["s"])
    }))

  it.effect("a run that must read the state (no cached state) reads it, whatever was read ahead", () =>
    Effect.gen(function*() {
      const backend = SessionStore.makeMemoryBackend()
      yield* run("a", "s").pipe(on(SessionStore.make(backend)))
      const { reads, store } = counted(backend)
      const read = yield* SessionStore.readSession(store, "s", { state: false })
      assert.deepStrictEqual(yield* read.ahead(run("b", "s")).pipe(on(store)), ["a", "b"])
      assert.deepStrictEqual(reads, ["s", "s"])
    }))

  it.effect(
    "a read made stale by a commit before the run is never used in its place: the run's conflict reads again",
    () =>
      Effect.gen(function*() {
        const backend = SessionStore.makeMemoryBackend()
        const { reads, store } = counted(backend)
        const read = yield* SessionStore.readSession(store, "s", { state: false })
        // another process creates the session meanwhile
        yield* run("x", "s").pipe(on(SessionStore.make(backend)))
        assert.deepStrictEqual(yield* read.ahead(run("a", "s", { retryOnConflict: 1 })).pipe(on(store)), ["x", "a"])
        assert.deepStrictEqual(reads, ["s", "s"])
        // without a try left, the conflict is the run's answer, and nothing is lost
        const stale = yield* SessionStore.readSession(store, "t", { state: false })
        yield* run("y", "t").pipe(on(SessionStore.make(backend)))
        const refused = yield* Effect.flip(stale.ahead(run("b", "t")).pipe(on(store)))
        assert.strictEqual(refused._tag, "SessionConflict")
        assert.deepStrictEqual(yield* Workflow.getSessionState(appendInput, "t").pipe(on(store)), { items: ["y"] })
      })
  )

  it.effect("a run that waits for the session's lock (another run of it in this process) reads the session again", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const gated = Workflow.make({
        name: "items",
        state: Items,
        sessionState: { items: [] },
        steps: [
          Step.make(
            "wait",
            (input) =>
              input.input === "a"
                ? Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gate))
                : Effect.void
          ),
          Step.make("add", (input) => Items.update((s) => ({ items: [...s.items, String(input.input)] })))
        ]
      })
      const { reads, store } = counted(SessionStore.makeMemoryBackend())
      const first = yield* Effect.fork(Workflow.run(gated, "a", { sessionId: "s" }).pipe(on(store)))
      yield* Deferred.await(started)
      // read while the first run holds the session: still new
      const read = yield* SessionStore.readSession(store, "s", { state: false })
      assert.strictEqual(read.found._tag, "New")
      const second = yield* Effect.fork(read.ahead(Workflow.run(gated, "b", { sessionId: "s" })).pipe(on(store)))
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      assert.deepStrictEqual((yield* Fiber.join(second)).state.items, ["a", "b"])
      // the first run's read, the read ahead, the second run's own read after the wait
      assert.deepStrictEqual(reads, ["s", "s", "s"])
    }))

  it.effect("the read answers once, its own session only, on its own store only", () =>
    Effect.gen(function*() {
      const backend = SessionStore.makeMemoryBackend()
      const { reads, store } = counted(backend)
      const other = counted(backend)
      const read = yield* SessionStore.readSession(store, "s", { state: false })
      const items = yield* read.ahead(Effect.gen(function*() {
        const first = yield* run("a", "s").pipe(on(store))
        const second = yield* run("b", "s").pipe(on(store))
        const elsewhere = yield* run("c", "u").pipe(on(store))
        const otherStore = yield* run("d", "v").pipe(on(other.store))
        return [first, second, elsewhere, otherStore]
      }))
      assert.deepStrictEqual(items, [["a"], ["a", "b"], ["c"], ["d"]])
      // the read ahead, then the second run's (from its cached state), the other session's; the other store's own
      assert.deepStrictEqual(reads, ["s", "s", "u"])
      assert.deepStrictEqual(other.reads, ["v"])
    }))

  it.effect("a read with the state is never given in place of a read", () =>
    Effect.gen(function*() {
      const { reads, store } = counted(SessionStore.makeMemoryBackend())
      yield* run("a", "s").pipe(on(store))
      reads.length = 0
      const read = yield* SessionStore.readSession(store, "s")
      assert.deepStrictEqual(read.found._tag === "Stored" && read.found.session.state, { items: ["a"] })
      assert.deepStrictEqual(yield* read.ahead(run("b", "s")).pipe(on(store)), ["a", "b"])
      assert.deepStrictEqual(reads, ["s", "s"])
    }))
})
