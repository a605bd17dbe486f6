/**
 * Shared pieces of the durability-rule tests with real failures and real
 * processes (see `test/core/DurabilityRules.test.ts` for the rules in one
 * process): a tracked run held just before its final commit, so that the
 * test can make that commit fail for real, and the checks of what the caller
 * was told against what is stored, before and after recovery; the races of
 * answers, continues and cancels between OS processes (`raceWorker.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Workflow, WorkflowError } from "@sessionflow/core"
import { type Context, Deferred, Effect, type Layer, Ref, Schema, type Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { twoQuestions } from "./store-sqlite/fixtures/questions.js"
import { lastJsonLine, spawnFixture } from "./store-sqlite/processes.js"
import { storeLayer } from "./stores.js"

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
 * Runs the held workflow as the tracked run `r` of session `s` (lease 1 s) on `store`, in a fiber: what it fails with.
 */
export const forkHeldRun = (
  workflow: Effect.Effect.Success<typeof heldBeforeCommit>["workflow"],
  store: Context.Context<SessionStore.SessionStore>
) =>
  Effect.fork(
    Workflow.run(workflow, "go", { sessionId: "s", runId: "r", leaseDuration: "1 second" }).pipe(
      Effect.flip,
      Effect.provide(store)
    )
  )

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
      return {
        recovered: recovered.map((r) => [r.runId, r.outcome._tag]),
        history: history.map((r) => [r.runId, r.status]),
        replayed
      }
    }).pipe(Effect.provide(recovering))
    assert.deepStrictEqual(outcome.recovered, [["r", "Success"]])
    assert.deepStrictEqual(outcome.history, [["r", "completed"]])
    assert.deepStrictEqual(outcome.replayed.state.items, ["call-2"])
  })

// -----------------------------------------------------------------------------
// races between OS processes
// -----------------------------------------------------------------------------

interface Outcome {
  readonly outcome: string
  readonly key?: string
}

/** `count` race workers with `args`, each `ready`, then started together: their outcomes. */
const race = (store: string, workers: ReadonlyArray<ReadonlyArray<string>>) =>
  Effect.gen(function*() {
    const spawned = yield* Effect.forEach(workers, (args) => spawnFixture("raceWorker.ts", [store, ...args]))
    yield* Effect.forEach(spawned, (worker) => worker.ready, { concurrency: "unbounded" })
    yield* Effect.forEach(spawned, (worker) => worker.start)
    return (yield* Effect.forEach(spawned, (worker) => worker.exit, { concurrency: "unbounded" })).map(
      lastJsonLine
    ) as Array<Outcome>
  })

const pauseFirst = (store: string, sessionId: string) =>
  Effect.map(
    Effect.flatMap(spawnFixture("raceWorker.ts", [store, "pause", sessionId]), (worker) => worker.exit),
    (out) => lastJsonLine(out) as { runId: string; key: string }
  )

/**
 * The races of the durability rules between real processes on one store
 * (`location`: a store spec, see `stores.ts`).
 */
export const durabilityRaceSuite = (name: string, location: Effect.Effect<string, unknown, Scope.Scope>) =>
  describe(`durability rules across OS processes (${name})`, () => {
    it.live(
      "of several processes answering one pause, one answer is " +
        "taken; the others are refused, none lands on the next pause",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const store = yield* location
          const { key, runId } = yield* pauseFirst(store, "s")
          const answers = ["true", "false", "true"]
          const outcomes = yield* race(store, answers.map((approved) => ["continue", runId, key, approved]))
          const taken = outcomes.flatMap((o, i) => (o.outcome === "RunPaused" ? [{ ...o, approved: answers[i] }] : []))
          assert.strictEqual(taken.length, 1, JSON.stringify(outcomes))
          for (const o of outcomes) {
            assert.include(["RunPaused", "PauseMismatch", "RunInProgress"], o.outcome, JSON.stringify(outcomes))
          }
          assert.notStrictEqual(taken[0]!.key, key)
          // the run waits at the second question, with the one answer taken at the first
          const done = yield* Workflow.continue(twoQuestions, runId, { approved: true }, { pause: taken[0]!.key! })
            .pipe(
              Effect.flatMap(() => Workflow.getSessionState(twoQuestions, "s")),
              Effect.provide(storeLayer(store))
            )
          assert.deepStrictEqual(done, { items: [`first:${taken[0]!.approved}`, "second:true"] })
        })),
      300_000
    )

    it.live(
      "a cancel racing continues (with retryOnConflict) on a session's " +
        "first run wins: the run ends cancelled and never runs again",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const store = yield* location
          for (const sessionId of ["s1"]) {
            const { key, runId } = yield* pauseFirst(store, sessionId)
            const outcomes = yield* race(store, [
              ["cancel", runId],
              ["continue", runId, key, "true", "retry"],
              ["continue", runId, key, "true", "retry"],
              ["continue", runId, key, "true", "retry"]
            ])
            assert.strictEqual(outcomes[0]!.outcome, "Cancelled", JSON.stringify(outcomes))
            for (const o of outcomes.slice(1)) {
              // a continue taken before the cancel paused at the second question; the others were told why not
              assert.include(
                ["RunPaused", "RunLost", "RunEnded", "PauseMismatch", "RunInProgress"],
                o.outcome,
                JSON.stringify(outcomes)
              )
            }
            const after = yield* Effect.gen(function*() {
              const history = yield* Workflow.getRunHistory(twoQuestions, sessionId)
              const unfinished = yield* Workflow.unfinishedRuns(twoQuestions, { sessionId })
              const again = yield* Effect.flip(Workflow.run(twoQuestions, "go", { sessionId, runId }))
              const state = yield* Workflow.getSessionState(twoQuestions, sessionId)
              return {
                history: history.map((r) => [r.runId, r.status]),
                unfinished: unfinished.length,
                again: again._tag,
                state
              }
            }).pipe(Effect.provide(storeLayer(store)))
            assert.deepStrictEqual(after, {
              history: [[runId, "cancelled"]],
              unfinished: 0,
              again: "RunEnded",
              state: { items: [] }
            })
          }
        })),
      300_000
    )

    it.live(
      "one lock order: cancels racing continues and their commits " +
        "on many runs never deadlock, and each run has one outcome",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const store = yield* location
          const layer = storeLayer(store)
          const rounds = 16
          // half the runs are their session's first (the commit and the cancel both create the session row),
          // half run on a session that exists (both write its row)
          const runs = yield* Effect.forEach(Array.from({ length: rounds }, (_, i) => `lock-${i}`), (sessionId, i) =>
            Effect.gen(function*() {
              if (i % 2 === 1) {
                const seeded = yield* SessionStore.SessionStore
                yield* seeded.commit({
                  sessionId,
                  workflowName: twoQuestions.name,
                  expectedVersion: 0,
                  state: { items: [] }
                })
              }
              const paused = yield* Effect.flip(Workflow.run(twoQuestions, "go", { sessionId }))
              assert.instanceOf(paused, WorkflowError.RunPaused)
              return { runId: paused.runId, key: paused.key, sessionId }
            })).pipe(Effect.provide(layer))
          const dir = yield* Effect.acquireRelease(
            Effect.sync(() =>
              fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-lock-"))
            ),
            (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
          )
          const runsFile = path.join(dir, "runs.json")
          fs.writeFileSync(runsFile, JSON.stringify(runs))
          const roles = ["cancel", "continue", "cancel", "continue"]
          const spawned = yield* Effect.forEach(roles, (role) =>
            spawnFixture("lockOrderWorker.ts", [store, runsFile, role]))
          yield* Effect.forEach(spawned, (worker) =>
            worker.ready, { concurrency: "unbounded" })
          yield* Effect.forEach(spawned, (worker) =>
            worker.start)
          const outcomes = (yield* Effect.forEach(spawned, (worker) => worker.exit, { concurrency: "unbounded" })).map(
            lastJsonLine
          ) as Array<
            Record<string, string>
          >
          const stored = yield* Effect.forEach(runs, ({ runId, sessionId }) =>
            Effect.gen(function*() {
              const history = yield* Workflow.getRunHistory(twoQuestions, sessionId)
              const state = yield* Workflow.getSessionState(twoQuestions, sessionId)
              return { records: history.filter((r) => r.runId === runId).map((r) => r.status), state }
            })).pipe(Effect.provide(layer))
          assert.deepStrictEqual(yield* Workflow.unfinishedRuns(twoQuestions).pipe(Effect.provide(layer)), [])
          for (const [i, { runId }] of runs.entries()) {
            const told = roles.map((role, w) => [role, outcomes[w]![runId]!] as const)
            const context = JSON.stringify({ runId, told, stored: stored[i] })
            // no deadlock, no store error of any kind
            for (const [, outcome] of told) {
              assert.include(
                ["Cancelled", "Success", "RunLost", "RunEnded", "RunInProgress", "PauseMismatch", "RunNotFound"],
                outcome,
                context
              )
            }
            const cancelled = told.filter(([, o]) => o === "Cancelled").length
            const completed = told.filter(([, o]) => o === "Success").length
            // one outcome: exactly one record, and what each caller was told agrees with it
            assert.strictEqual(cancelled + completed, 1, context)
            assert.deepStrictEqual(stored[i]!.records, [cancelled === 1 ? "cancelled" : "completed"], context)
            assert.deepStrictEqual(
              stored[i]!.state,
              { items: cancelled === 1 ? [] : ["first:true", "second:true"] },
              context
            )
          }
        })),
      300_000
    )
  })
