/**
 * Shared pieces of the durability-rule tests with real failures and real
 * processes (see `test/core/DurabilityRules.test.ts` for the rules in one
 * process): a tracked run held just before its final commit, so that the
 * test can make that commit fail for real; and the checks of what the caller
 * was told against what is stored, before and after recovery.
 */
import { assert } from "@effect/vitest"
import { SessionState, SessionStore, Workflow, WorkflowError } from "@sessionflow/core"
import { Deferred, Effect, type Layer, Ref, Schema } from "effect"

class Calls extends SessionState.Tag("test/DurabilityCalls")<Calls>()({ items: Schema.Array(Schema.String) }) {}

/**
 * A one-step workflow whose step, the first time it runs, says it was reached
 * and waits until `proceed` (the test then takes a lock the commit will need).
 */
export const heldBeforeCommit = Effect.gen(function*() {
  const calls = yield* Ref.make(0)
  const reached = yield* Deferred.make<void>()
  const proceed = yield* Deferred.make<void>()
  const workflow = Workflow.make({ name: "held", state: Calls, sessionState: { items: [] } }).pipe(
    Workflow.andThen("work", () =>
      Effect.gen(function*() {
        const n = yield* Ref.updateAndGet(calls, (n) => n + 1)
        if (n === 1) {
          yield* Deferred.succeed(reached, undefined)
          yield* Deferred.await(proceed)
        }
        yield* Calls.update((s) => ({ items: [...s.items, `call-${n}`] }))
        return n
      }))
  )
  return { workflow, calls, reached, proceed }
})

/**
 * What a caller told `RunUnfinished` can rely on: the run is unfinished in the
 * store (nothing committed, nothing recorded as failed); recovery in another
 * process (`recovering`), after the lease, commits it once; the run id then
 * gives the completed run.
 */
export const assertUnfinishedThenRecovered = (
  workflow: Effect.Effect.Success<typeof heldBeforeCommit>["workflow"],
  told: unknown,
  recovering: Layer.Layer<SessionStore.SessionStore, unknown>
) =>
  Effect.gen(function*() {
    assert.instanceOf(told, WorkflowError.RunUnfinished, String(told))
    const error = told as WorkflowError.RunUnfinished
    assert.deepStrictEqual([error.runId, error.sessionId], ["r", "s"])
    const stored = yield* Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      return {
        unfinished: (yield* store.activeRuns({ sessionId: "s" })).map((r) => [r.runId, r.status]),
        session: yield* store.info("s")
      }
    }).pipe(Effect.provide(recovering))
    assert.deepStrictEqual(stored.unfinished, [["r", "running"]])
    assert.isTrue(stored.session._tag === "None")
    // after the lease
    yield* Effect.sleep("1200 millis")
    const outcome = yield* Effect.gen(function*() {
      const recovered = yield* Workflow.recover(workflow)
      const history = yield* Workflow.getRunHistory(workflow, "s")
      const replayed = yield* Workflow.run(workflow, "go", { sessionId: "s", runId: "r" })
      return { recovered: recovered.map((r) => [r.runId, r.outcome._tag]), history: history.map((r) => [r.runId, r.status]), replayed }
    }).pipe(Effect.provide(recovering))
    assert.deepStrictEqual(outcome.recovered, [["r", "Success"]])
    assert.deepStrictEqual(outcome.history, [["r", "completed"]])
    assert.deepStrictEqual(outcome.replayed.state.items, ["call-2"])
  })
