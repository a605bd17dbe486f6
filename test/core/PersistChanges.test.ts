/**
 * `persist: "changes"`: a run that starts from the state its store's last run
 * committed commits only what it changed; the state is frozen; bad states
 * still fail with typed errors and commit nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { Cause, Effect, Exit, Option, Schema } from "effect"
import { on } from "./utils.js"

class Log extends SessionState.Tag("test/Log")<Log>()({
  counter: Schema.Number,
  entries: Schema.Array(Schema.Struct({ text: Schema.String, at: Schema.Number }))
}) {}

/** A store over `backend` that records every commit. */
const recording = (backend: SessionStore.Backend) => {
  const commits: Array<SessionStore.Commit> = []
  const store = SessionStore.make({
    ...backend,
    commit: (commit) => Effect.tap(backend.commit(commit), () => Effect.sync(() => commits.push(commit)))
  })
  return { store, commits }
}

const logWorkflow = Workflow.make({
  name: "log",
  state: Log,
  persist: "changes",
  sessionState: { counter: 0, entries: [] },
  steps: [
    Step.make("count", () => Log.update((s) => ({ ...s, counter: s.counter + 1 }))),
    Step.make(
      "log",
      (input) => Log.update((s) => ({ ...s, entries: [...s.entries, { text: String(input.input), at: s.counter }] }))
    )
  ]
})

/** an untyped workflow appending its input, whole states unless `persist` says otherwise */
const untypedWorkflowOptions = {
  name: "untyped",
  sessionState: { items: [] },
  steps: [
    Step.make(
      "add",
      (input) => SessionState.update((s) => ({ ...s, items: [...(s.items as Array<unknown>), input.input] }))
    )
  ]
} as const

const untypedWorkflow = Workflow.make({ ...untypedWorkflowOptions, persist: "changes" })

const stateOf = (store: SessionStore.Service, sessionId: string) =>
  Effect.map(store.load(sessionId), (found) => Option.getOrThrow(found).state)

describe("persist: \"changes\"", () => {
  it.effect("runs from the cached state commit only their changes; a run without one sets the whole state", () =>
    Effect.gen(function*() {
      const { commits, store } = recording(SessionStore.makeMemoryBackend())
      for (const text of ["a", "b", "c"]) yield* Workflow.run(logWorkflow, text, { sessionId: "s" }).pipe(on(store))
      // the new session: its state; the first run on the stored state (nothing cached yet): a change setting it whole
      assert.isUndefined(commits[0]!.changes)
      assert.deepStrictEqual(commits[1]!.changes, [{ op: "set", path: [], value: commits[1]!.state }])
      assert.deepStrictEqual(commits[2]!.changes, [
        { op: "set", path: ["counter"], value: 3 },
        { op: "append", path: ["entries"], items: [{ text: "c", at: 3 }] }
      ])
      // the state goes with the changes, and the store has exactly it
      assert.deepStrictEqual(commits[2]!.state, {
        counter: 3,
        entries: [{ text: "a", at: 1 }, { text: "b", at: 2 }, { text: "c", at: 3 }]
      })
      assert.deepStrictEqual(yield* stateOf(store, "s"), commits[2]!.state)
    }))

  it.effect("the state a run returns is frozen, and a step that mutates it in place fails; nothing is committed", () =>
    Effect.gen(function*() {
      const { commits, store } = recording(SessionStore.makeMemoryBackend())
      yield* Workflow.run(untypedWorkflow, "a", { sessionId: "s" }).pipe(on(store))
      const second = yield* Workflow.run(untypedWorkflow, "b", { sessionId: "s" }).pipe(on(store))
      assert.isTrue(Object.isFrozen(second.state))
      assert.isTrue(Object.isFrozen(second.state.items))
      const pushing = Workflow.make({
        name: "untyped",
        persist: "changes",
        steps: [
          Step.make("push", () =>
            Effect.flatMap(SessionState.get, (s) =>
              Effect.sync(() => {
                ;(s.items as Array<unknown>).push("in place")
              })))
        ]
      })
      const exit = yield* Effect.exit(Workflow.run(pushing, "x", { sessionId: "s" }).pipe(on(store)))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        assert.include(Cause.pretty(exit.cause), "a step changed the session state in place")
        assert.include(Cause.pretty(exit.cause), "committed states are frozen")
      }
      // the run record says so too
      const [, , failed] = yield* store.runs("s", {})
      assert.strictEqual(failed!.status, "error")
      assert.include(failed!.error, "a step changed the session state in place")
      const committed = commits.length
      assert.deepStrictEqual(yield* stateOf(store, "s"), { items: ["a", "b"] })
      // the next run starts from the stored state, as if the failed one had not been
      const third = yield* Workflow.run(untypedWorkflow, "c", { sessionId: "s" }).pipe(on(store))
      assert.deepStrictEqual(third.state, { items: ["a", "b", "c"] })
      assert.strictEqual(commits.length, committed + 1)
    }))

  it.effect("a change that is not JSON is NotSerializable with its path; nothing is committed", () =>
    Effect.gen(function*() {
      const { store } = recording(SessionStore.makeMemoryBackend())
      yield* Workflow.run(untypedWorkflow, "a", { sessionId: "s" }).pipe(on(store))
      yield* Workflow.run(untypedWorkflow, "b", { sessionId: "s" }).pipe(on(store))
      const dating = Workflow.make({
        name: "untyped",
        persist: "changes",
        steps: [
          Step.make(
            "date",
            () => SessionState.update((s) => ({ ...s, items: [...(s.items as Array<unknown>), { when: new Date(0) }] }))
          )
        ]
      })
      const error = yield* Effect.flip(Workflow.run(dating, "x", { sessionId: "s" }).pipe(on(store)))
      assert.strictEqual(error._tag, "NotSerializable")
      if (error._tag === "NotSerializable") {
        assert.strictEqual(error.what, "state")
        assert.strictEqual(error.path, ".items[2].when")
        assert.include(error.description, "Date")
      }
      assert.deepStrictEqual(yield* stateOf(store, "s"), { items: ["a", "b"] })
    }))

  it.effect("a typed state that breaks its Schema in a changed part fails to encode; nothing is committed", () =>
    Effect.gen(function*() {
      const { store } = recording(SessionStore.makeMemoryBackend())
      yield* Workflow.run(logWorkflow, "a", { sessionId: "s" }).pipe(on(store))
      yield* Workflow.run(logWorkflow, "b", { sessionId: "s" }).pipe(on(store))
      const breaking = Workflow.make({
        name: "log",
        state: Log,
        persist: "changes",
        sessionState: { counter: 0, entries: [] },
        steps: [
          Step.make(
            "bad",
            () => Log.update((s) => ({ ...s, entries: [...s.entries, { text: 42 as unknown as string, at: 0 }] }))
          )
        ]
      })
      const error = yield* Effect.flip(Workflow.run(breaking, "x", { sessionId: "s" }).pipe(on(store)))
      assert.strictEqual(error._tag, "StateDecodeError")
      const stored = (yield* stateOf(store, "s")) as { entries: ReadonlyArray<unknown> }
      assert.strictEqual(stored.entries.length, 2)
    }))

  it.effect("another store's commit between two runs is seen: the run starts from it and sets the whole state", () =>
    Effect.gen(function*() {
      const backend = SessionStore.makeMemoryBackend()
      const a = recording(backend)
      const b = SessionStore.make(backend)
      yield* Workflow.run(untypedWorkflow, "a1", { sessionId: "s" }).pipe(on(a.store))
      yield* Workflow.run(untypedWorkflow, "a2", { sessionId: "s" }).pipe(on(a.store))
      yield* Workflow.run(untypedWorkflow, "b1", { sessionId: "s" }).pipe(on(b))
      const next = yield* Workflow.run(untypedWorkflow, "a3", { sessionId: "s" }).pipe(on(a.store))
      assert.deepStrictEqual(next.state, { items: ["a1", "a2", "b1", "a3"] })
      assert.deepStrictEqual(a.commits.at(-1)!.changes, [{
        op: "set",
        path: [],
        value: { items: ["a1", "a2", "b1", "a3"] }
      }])
      yield* Workflow.run(untypedWorkflow, "a4", { sessionId: "s" }).pipe(on(a.store))
      assert.deepStrictEqual(a.commits.at(-1)!.changes, [{ op: "append", path: ["items"], items: ["a4"] }])
      assert.deepStrictEqual(yield* stateOf(b, "s"), { items: ["a1", "a2", "b1", "a3", "a4"] })
    }))

  it.effect("a workflow that persists whole states never sends changes, and does not get the frozen cached state", () =>
    Effect.gen(function*() {
      const { commits, store } = recording(SessionStore.makeMemoryBackend())
      const whole = Workflow.make({ ...untypedWorkflowOptions, persist: "state" })
      yield* Workflow.run(untypedWorkflow, "a", { sessionId: "s" }).pipe(on(store))
      yield* Workflow.run(untypedWorkflow, "b", { sessionId: "s" }).pipe(on(store))
      const run = yield* Workflow.run(whole, "c", { sessionId: "s" }).pipe(on(store))
      assert.isFalse(Object.isFrozen(run.state))
      const again = yield* Workflow.run(whole, "d", { sessionId: "s" }).pipe(on(store))
      assert.deepStrictEqual(again.state, { items: ["a", "b", "c", "d"] })
      assert.isTrue(commits.slice(2).every((commit) => commit.changes === undefined))
    }))
})
