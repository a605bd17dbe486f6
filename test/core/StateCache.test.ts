/**
 * The decoded-state cache: a run starts from the state its store's last run
 * of the session committed while the stored version is unchanged, and never
 * from a stale or mutated one.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { Effect, Option, Schema, TestClock } from "effect"
import { appendInput, Boom, Items, itemsWorkflow, on } from "./utils.js"

/**
 * A store over `backend` that records, for each read of a session's state (a
 * run's `findSession`, a `load`), whether the state was left out (`unchanged`).
 */
const spied = (backend: SessionStore.Backend) => {
  const loads: Array<boolean> = []
  const store = SessionStore.make({
    ...backend,
    load: (sessionId, options) =>
      Effect.tap(
        backend.load(sessionId, options),
        (found) => Effect.sync(() => loads.push(Option.exists(found, (s) => s.unchanged === true)))
      ),
    findSession: (sessionId, options) =>
      Effect.tap(
        backend.findSession(sessionId, options),
        (found) => Effect.sync(() => loads.push(found._tag === "Stored" && found.session.unchanged === true))
      )
  })
  return { store, loads }
}

const itemsOf = (store: SessionStore.Service, sessionId: string) =>
  Effect.map(Workflow.getSessionState(appendInput, sessionId), (s) => s.items).pipe(on(store))

describe("the decoded-state cache", () => {
  it.effect("the next run of a session starts from the committed state without reading it again", () =>
    Effect.gen(function*() {
      const { loads, store } = spied(SessionStore.makeMemoryBackend())
      yield* Workflow.run(appendInput, "a", { sessionId: "s" }).pipe(on(store))
      yield* Workflow.run(appendInput, "b", { sessionId: "s" }).pipe(on(store))
      const third = yield* Workflow.run(appendInput, "c", { sessionId: "s" }).pipe(on(store))
      assert.deepStrictEqual(third.state.items, ["a", "b", "c"])
      // the first run found no session, the second read the state, the third had it
      assert.deepStrictEqual(loads, [false, false, true])
      assert.deepStrictEqual(yield* itemsOf(store, "s"), ["a", "b", "c"])
    }))

  it.effect("a commit by another store between two runs is seen", () =>
    Effect.gen(function*() {
      const backend = SessionStore.makeMemoryBackend()
      const a = spied(backend)
      const b = SessionStore.make(backend)
      yield* Workflow.run(appendInput, "a1", { sessionId: "s" }).pipe(on(a.store))
      yield* Workflow.run(appendInput, "a2", { sessionId: "s" }).pipe(on(a.store))
      yield* Workflow.run(appendInput, "b1", { sessionId: "s" }).pipe(on(b))
      const next = yield* Workflow.run(appendInput, "a3", { sessionId: "s" }).pipe(on(a.store))
      assert.deepStrictEqual(next.state.items, ["a1", "a2", "b1", "a3"])
      assert.deepStrictEqual(a.loads, [false, false, false])
      // and from then on the cache serves again
      const last = yield* Workflow.run(appendInput, "a4", { sessionId: "s" }).pipe(on(a.store))
      assert.deepStrictEqual(last.state.items, ["a1", "a2", "b1", "a3", "a4"])
      assert.deepStrictEqual(a.loads, [false, false, false, true])
    }))

  it.effect("a session removed and made anew elsewhere, back at the same version, is read again", () =>
    Effect.gen(function*() {
      const backend = SessionStore.makeMemoryBackend()
      const a = spied(backend)
      const b = SessionStore.make(backend)
      yield* Workflow.run(appendInput, "a1", { sessionId: "s" }).pipe(on(a.store))
      yield* Workflow.run(appendInput, "a2", { sessionId: "s" }).pipe(on(a.store))
      assert.isTrue(yield* b.remove("s"))
      yield* TestClock.adjust("1 second")
      yield* Workflow.run(appendInput, "b1", { sessionId: "s" }).pipe(on(b))
      yield* Workflow.run(appendInput, "b2", { sessionId: "s" }).pipe(on(b))
      const next = yield* Workflow.run(appendInput, "a3", { sessionId: "s" }).pipe(on(a.store))
      assert.deepStrictEqual(next.state.items, ["b1", "b2", "a3"])
    }))

  it.effect("a step that mutates the state in place and then fails leaves no trace", () =>
    Effect.gen(function*() {
      const { loads, store } = spied(SessionStore.makeMemoryBackend())
      const poison = itemsWorkflow([
        Step.make("poison", () =>
          Effect.flatMap(Items.get, (s) => {
            ;(s.items as Array<string>).push("poison")
            return Effect.fail(new Boom({ reason: "after mutating" }))
          }))
      ])
      yield* Workflow.run(appendInput, "a", { sessionId: "s" }).pipe(on(store))
      yield* Workflow.run(appendInput, "b", { sessionId: "s" }).pipe(on(store))
      const failed = yield* Effect.flip(Workflow.run(poison, "x", { sessionId: "s" }).pipe(on(store)))
      assert.strictEqual(failed._tag, "Boom")
      const next = yield* Workflow.run(appendInput, "c", { sessionId: "s" }).pipe(on(store))
      assert.deepStrictEqual(next.state.items, ["a", "b", "c"])
      // the poisoned run had the cached state; the run after it read the state again
      assert.deepStrictEqual(loads, [false, false, true, false])
    }))

  it.effect(
    "the untyped state: neither a step that mutates it in place and " +
      "fails nor the caller mutating a returned state leaves a trace",
    () =>
      Effect.gen(function*() {
        const store = SessionStore.make(SessionStore.makeMemoryBackend())
        const count = Workflow.make({
          name: "count",
          sessionState: { list: [] },
          steps: [
            Step.make(
              "add",
              (input) => SessionState.update((s) => ({ list: [...(s.list as Array<unknown>), input.input] }))
            )
          ]
        })
        const poison = Workflow.make({
          name: "count",
          steps: [
            Step.make("poison", () =>
              Effect.flatMap(SessionState.get, (s) => {
                ;(s.list as Array<unknown>).push("poison")
                s.extra = true
                return Effect.fail(new Boom({ reason: "after mutating" }))
              }))
          ]
        })
        yield* Workflow.run(count, 1, { sessionId: "s" }).pipe(on(store))
        yield* Workflow.run(count, 2, { sessionId: "s" }).pipe(on(store))
        yield* Effect.flip(Workflow.run(poison, "x", { sessionId: "s" }).pipe(on(store)))
        const next = yield* Workflow.run(count, 3, { sessionId: "s" }).pipe(on(store))
        assert.deepStrictEqual(next.state, { list: [1, 2, 3] }) // nor does mutating the state a run returned
        ;(next.state.list as Array<unknown>).push("poison")
        const last = yield* Workflow.run(count, 4, { sessionId: "s" }).pipe(on(store))
        assert.deepStrictEqual(last.state, { list: [1, 2, 3, 4] })
      })
  )

  it.effect("mutating the state a run returned does not change the next run's state", () =>
    Effect.gen(function*() {
      const { loads, store } = spied(SessionStore.makeMemoryBackend())
      yield* Workflow.run(appendInput, "a", { sessionId: "s" }).pipe(on(store))
      const second = yield* Workflow.run(appendInput, "b", { sessionId: "s" }).pipe(on(store))
      ;(second.state.items as Array<string>).push("poison")
      const third = yield* Workflow.run(appendInput, "c", { sessionId: "s" }).pipe(on(store))
      assert.deepStrictEqual(third.state.items, ["a", "b", "c"])
      ;(third.state.items as Array<string>).push("poison")
      const fourth = yield* Workflow.run(appendInput, "d", { sessionId: "s" }).pipe(on(store))
      assert.deepStrictEqual(fourth.state.items, ["a", "b", "c", "d"])
      assert.deepStrictEqual(loads, [false, false, true, true])
    }))

  it.effect("a workflow with another Schema on the same session still decodes (and checks) the state", () =>
    Effect.gen(function*() {
      const store = SessionStore.make(SessionStore.makeMemoryBackend())
      class Short extends SessionState.Tag("test/Short")<Short>()({
        items: Schema.Array(Schema.String).pipe(Schema.maxItems(2))
      }) {}
      const short = Workflow.make({
        name: "items",
        state: Short,
        sessionState: { items: [] },
        steps: [Step.make("read", () => Short.get)]
      })
      yield* Workflow.run(appendInput, "a", { sessionId: "s" }).pipe(on(store))
      yield* Workflow.run(appendInput, "b", { sessionId: "s" }).pipe(on(store))
      yield* Workflow.run(appendInput, "c", { sessionId: "s" }).pipe(on(store))
      const error = yield* Effect.flip(Workflow.run(short, "x", { sessionId: "s" }).pipe(on(store)))
      assert.strictEqual(error._tag, "StateDecodeError")
    }))

  it.effect("from a cached state only what changed is encoded, and it is still checked", () =>
    Effect.gen(function*() {
      const { loads, store } = spied(SessionStore.makeMemoryBackend())
      class Short extends SessionState.Tag("test/ShortItems")<Short>()({
        items: Schema.Array(Schema.String.pipe(Schema.maxLength(3))),
        count: Schema.Number,
        note: Schema.optional(Schema.String)
      }) {}
      const wf = (name: string, f: (s: typeof Short.schema.Type) => typeof Short.schema.Type) =>
        Workflow.make({
          name: "short",
          state: Short,
          sessionState: { items: [], count: 0 },
          steps: [Step.make(name, () => Short.update(f))]
        })
      const add = (item: string) => wf("add", (s) => ({ ...s, items: [...s.items, item], count: s.count + 1 }))
      const stored = Effect.map(store.load("s"), (s) => Option.getOrThrow(s).state)
      yield* Workflow.run(add("a"), "x", { sessionId: "s" }).pipe(on(store))
      yield* Workflow.run(add("b"), "x", { sessionId: "s" }).pipe(on(store))
      const before = yield* stored

      // a new item that does not fit, set immutably or pushed in place: StateDecodeError, nothing committed
      const tooLong = yield* Effect.flip(Workflow.run(add("long"), "x", { sessionId: "s" }).pipe(on(store)))
      assert.strictEqual(tooLong._tag, "StateDecodeError")
      yield* Workflow.run(add("c"), "x", { sessionId: "s" }).pipe(on(store))
      const pushed = wf("push", (s) => {
        ;(s.items as Array<unknown>).push(42)
        return s
      })
      const notAString = yield* Effect.flip(Workflow.run(pushed, "x", { sessionId: "s" }).pipe(on(store)))
      assert.strictEqual(notAString._tag, "StateDecodeError")
      yield* Workflow.run(add("d"), "x", { sessionId: "s" }).pipe(on(store))
      // a changed field of the wrong type
      const nan = wf("count", (s) => ({ ...s, count: "many" as unknown as number }))
      assert.strictEqual(
        (yield* Effect.flip(Workflow.run(nan, "x", { sessionId: "s" }).pipe(on(store))))._tag,
        "StateDecodeError"
      )
      yield* Workflow.run(add("e"), "x", { sessionId: "s" }).pipe(on(store))
      assert.deepStrictEqual(yield* stored, { items: ["a", "b", "c", "d", "e"], count: 5 })
      assert.deepStrictEqual(before, { items: ["a", "b"], count: 2 })

      // a key the Schema does not know is dropped, as the encoding always drops it; an optional one is kept
      const extra = wf("extra", (s) => ({ ...s, note: "n", unknown: true } as typeof Short.schema.Type))
      const withExtra = yield* Workflow.run(extra, "x", { sessionId: "s" }).pipe(on(store))
      assert.strictEqual(withExtra.state.note, "n")
      assert.deepStrictEqual(yield* stored, { items: ["a", "b", "c", "d", "e"], count: 5, note: "n" })
      // runs after a committing run had the state (true), the failed ones did not leave it; the plain loads read it
      // a, b, load, long, c, push, d, count, e, load, extra, load
      assert.deepStrictEqual(loads, [false, false, false, true, false, true, false, true, false, false, true, false])
    }))

  it.effect("a state Schema with a transformation is decoded at every run", () =>
    Effect.gen(function*() {
      const { loads, store } = spied(SessionStore.makeMemoryBackend())
      class Counter extends SessionState.Tag("test/Counter")<Counter>()({ count: Schema.NumberFromString }) {}
      const inc = Workflow.make({
        name: "counter",
        state: Counter,
        sessionState: { count: "0" },
        steps: [Step.make("inc", () => Counter.update((s) => ({ count: s.count + 1 })))]
      })
      for (let i = 0; i < 3; i++) yield* Workflow.run(inc, "x", { sessionId: "s" }).pipe(on(store))
      const stored = Option.getOrThrow(yield* store.load("s"))
      assert.deepStrictEqual(stored.state, { count: "3" })
      assert.deepStrictEqual(loads, [false, false, false, false])
    }))
})
