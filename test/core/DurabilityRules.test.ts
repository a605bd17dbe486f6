/**
 * The durability rules of the core README ("Durability rules"), in one
 * process, on the memory store, a SQLite file and a PostgreSQL schema: who
 * wins when answers, cancels and continues meet, and what a caller is told
 * when the store fails under a tracked run. The same races between real OS
 * processes are in `test/durabilityRules.ts` (`*.process.test.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import { RunContext, SessionState, SessionStore, Workflow, WorkflowError } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Deferred, Effect, Layer, Option, Ref, Schema, Stream, TestClock } from "effect"
import { storeLayer as pgStoreLayer } from "../store-pg/pg.js"
import { twoQuestions } from "../store-sqlite/fixtures/questions.js"
import { tempFile } from "../store-sqlite/processes.js"

class Counted extends SessionState.Tag("test/DurabilityCounted")<Counted>()({ items: Schema.Array(Schema.String) }) {}

const stores: ReadonlyArray<readonly [string, Layer.Layer<SessionStore.SessionStore, unknown>]> = [
  ["memory", SessionStore.layerMemory],
  ["SQLite file", Layer.unwrapScoped(Effect.map(tempFile, (filename) => SqliteSessionStore.layer({ filename })))],
  ["PostgreSQL", pgStoreLayer()]
]

/** The store in context with `change` applied to its primitives. */
const altered = <R>(
  change: (inner: SessionStore.Service) => Effect.Effect<Partial<SessionStore.Backend>, never, R>
) =>
<A, E, R2>(self: Effect.Effect<A, E, R2>) =>
  Effect.flatMap(
    SessionStore.SessionStore,
    (inner) =>
      Effect.flatMap(change(inner), (changed) =>
        Effect.provideService(self, SessionStore.SessionStore, { ...inner, ...changed }))
  )

/** A one-step workflow whose step counts its calls in `calls` and appends `call-<n>` to the state. */
const countedWorkflow = (calls: Ref.Ref<number>) =>
  Workflow.make({ name: "counted", state: Counted, sessionState: { items: [] } }).pipe(
    Workflow.andThen(
      "count",
      () =>
        Effect.flatMap(
          Ref.updateAndGet(calls, (n) => n + 1),
          (n) => Effect.as(Counted.update((s) => ({ items: [...s.items, `call-${n}`] })), n)
        )
    )
  )

const gate = Effect.all({ reached: Deferred.make<void>(), proceed: Deferred.make<void>() })

const pausedAt = (error: unknown) => {
  assert.instanceOf(error, WorkflowError.RunPaused)
  return error as WorkflowError.RunPaused
}

describe.each(stores)("durability rules (%s)", (_, layer) => {
  it.effect(
    "a continue names the pause it answers: an answer for a pause " +
      "that is no longer current is PauseMismatch and changes nothing",
    () =>
      Effect.gen(function*() {
        const first = pausedAt(yield* Effect.flip(Workflow.run(twoQuestions, "go", { sessionId: "s" })))
        const second = pausedAt(
          yield* Effect.flip(Workflow.continue(twoQuestions, first.runId, { approved: true }, { pause: first.key }))
        )
        assert.notStrictEqual(second.key, first.key)
        const waiting = yield* Workflow.pausedRuns(twoQuestions)
        // another answer meant for the first question
        const stale = yield* Effect.flip(
          Workflow.continue(twoQuestions, first.runId, { approved: false }, { pause: first.key })
        )
        assert.instanceOf(stale, WorkflowError.PauseMismatch)
        assert.deepStrictEqual([stale.expected, stale.current], [first.key, second.key])
        assert.deepStrictEqual(yield* Workflow.pausedRuns(twoQuestions), waiting)
        const done = yield* Workflow.continue(twoQuestions, first.runId, { approved: false }, { pause: second.key })
        assert.deepStrictEqual(done.state.items, ["first:true", "second:false"])
      }).pipe(Effect.provide(layer))
  )

  it.effect(
    "of several answers to one pause, one is taken; the others are refused and the run waits at the next pause with it",
    () =>
      Effect.gen(function*() {
        const first = pausedAt(yield* Effect.flip(Workflow.run(twoQuestions, "go", { sessionId: "s" })))
        const outcomes = yield* Effect.forEach(
          [true, false, true, false],
          (approved) => Effect.flip(Workflow.continue(twoQuestions, first.runId, { approved }, { pause: first.key })),
          { concurrency: "unbounded" }
        )
        const taken = outcomes.filter((error) => error._tag === "RunPaused")
        assert.strictEqual(taken.length, 1, outcomes.map((error) => error._tag).join())
        for (const error of outcomes) assert.include(["RunPaused", "PauseMismatch", "RunInProgress"], error._tag)
        const [waiting] = yield* Workflow.pausedRuns(twoQuestions)
        assert.strictEqual(waiting?.pause?.key, (taken[0] as WorkflowError.RunPaused).key)
        const done = yield* Workflow.continue(twoQuestions, first.runId, { approved: true }, {
          pause: waiting!.pause!.key
        })
        assert.strictEqual(done.state.items.length, 2)
        assert.strictEqual(done.state.items[1], "second:true")
      }).pipe(Effect.provide(layer))
  )

  it.effect(
    "a cancel that lands while a continue carries the run on wins: the " +
      "continue is RunLost, and the cancelled run never runs again under its id",
    () =>
      Effect.gen(function*() {
        // a session's first run: the cancel creates the session to hold its record
        const first = pausedAt(yield* Effect.flip(Workflow.run(twoQuestions, "go", { sessionId: "s" })))
        const cancelAfterClaim = altered((inner) =>
          Effect.succeed({
            claimRun: (runId, claim) =>
              Effect.tap(
                inner.claimRun(runId, claim),
                () =>
                  Effect.orDie(
                    Effect.provideService(Workflow.cancel(twoQuestions, runId), SessionStore.SessionStore, inner)
                  )
              )
          })
        )
        const lost = yield* Effect.flip(
          Workflow.continue(twoQuestions, first.runId, { approved: true }, { pause: first.key, retryOnConflict: true })
            .pipe(
              cancelAfterClaim
            )
        )
        assert.strictEqual(lost._tag, "RunLost", String(lost))
        assert.deepStrictEqual((yield* Workflow.getRunHistory(twoQuestions, "s")).map((r) => [r.runId, r.status]), [
          [first.runId, "cancelled"]
        ])
        assert.deepStrictEqual(yield* Workflow.unfinishedRuns(twoQuestions), [])
        const again = yield* Effect.flip(Workflow.run(twoQuestions, "go", { sessionId: "s", runId: first.runId }))
        assert.instanceOf(again, WorkflowError.RunEnded)
        assert.strictEqual(again.status, "cancelled")
        const continued = yield* Effect.flip(Workflow.continue(twoQuestions, first.runId, { approved: true }))
        assert.instanceOf(continued, WorkflowError.RunEnded)
        assert.deepStrictEqual(yield* Workflow.getSessionState(twoQuestions, "s"), { items: [] })
      }).pipe(Effect.provide(layer))
  )

  it.effect(
    "a tracked run whose final commit fails is RunUnfinished " +
      "with its id, stays unfinished, and recovery commits it once",
    () =>
      Effect.gen(function*() {
        const calls = yield* Ref.make(0)
        const counted = countedWorkflow(calls)
        const failingCommit = altered((inner) =>
          Effect.succeed({
            commit: (commit) =>
              commit.ends === undefined
                ? inner.commit(commit)
                : Effect.fail(new WorkflowError.SessionStoreError({ method: "commit", description: "connection lost" }))
          })
        )
        const told = yield* Effect.flip(
          Workflow.run(counted, "go", { sessionId: "s", runId: "r", leaseDuration: "1 second" }).pipe(failingCommit)
        )
        assert.instanceOf(told, WorkflowError.RunUnfinished)
        assert.deepStrictEqual([told.runId, told.sessionId], ["r", "s"])
        // stored: unfinished, nothing committed, nothing recorded as failed
        assert.deepStrictEqual((yield* Workflow.unfinishedRuns(counted)).map((r) => [r.runId, r.status]), [[
          "r",
          "running"
        ]])
        assert.strictEqual(
          Option.isNone(yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.load("s"))),
          true
        )
        // a retry under the same id while the lease holds is RunInProgress, never a second run
        assert.strictEqual(
          (yield* Effect.flip(Workflow.run(counted, "go", { sessionId: "s", runId: "r" })))._tag,
          "RunInProgress"
        )
        yield* TestClock.adjust("2 seconds")
        const recovered = yield* Workflow.recover(counted)
        assert.deepStrictEqual(recovered.map((r) => [r.runId, r.outcome._tag]), [["r", "Success"]])
        assert.deepStrictEqual((yield* Workflow.getRunHistory(counted, "s")).map((r) => [r.runId, r.status]), [[
          "r",
          "completed"
        ]])
        // the caller waiting for its id gets the completed run
        const replayed = yield* Workflow.run(counted, "go", { sessionId: "s", runId: "r" })
        assert.strictEqual(replayed.content, 2)
        assert.deepStrictEqual(replayed.state.items, ["call-2"])
      }).pipe(Effect.provide(layer))
  )

  it.effect(
    "a tracked run whose commit conflicts ends with the conflict: never left for " +
      "recovery, and retryOnConflict carries it on under its id without ending it",
    () =>
      Effect.gen(function*() {
        const calls = yield* Ref.make(0)
        const gates = { s1: yield* gate, s2: yield* gate }
        const held = Workflow.make({ name: "held", state: Counted, sessionState: { items: [] } }).pipe(
          Workflow.andThen("count", () =>
            Effect.gen(function*() {
              const n = yield* Ref.updateAndGet(calls, (n) => n + 1)
              const { sessionId } = yield* RunContext.RunContext
              const { proceed, reached } = gates[sessionId as "s1" | "s2"]
              if (!(yield* Deferred.isDone(proceed))) {
                yield* Deferred.succeed(reached, undefined)
                yield* Deferred.await(proceed)
              }
              yield* Counted.update((s) => ({ items: [...s.items, `call-${n}`] }))
              return n
            }))
        )
        const seed = Workflow.make({ name: "held", state: Counted, sessionState: { items: [] } })
        // another process commits to the session while the run's step runs (the run holds this process's session lock)
        const otherCommit = (sessionId: "s1" | "s2") =>
          Effect.gen(function*() {
            yield* Deferred.await(gates[sessionId].reached)
            const store = yield* SessionStore.SessionStore
            yield* store.commit({ sessionId, workflowName: "held", expectedVersion: 1, state: { items: ["other"] } })
            yield* Deferred.succeed(gates[sessionId].proceed, undefined)
          })
        for (const sessionId of ["s1", "s2"]) yield* Workflow.run(seed, "seed", { sessionId })
        // without retries: SessionConflict, recorded, nothing left running
        const [conflict] = yield* Effect.all([
          Effect.flip(Workflow.run(held, "go", { sessionId: "s1", runId: "r1" })),
          otherCommit("s1")
        ], { concurrency: "unbounded" })
        assert.strictEqual(conflict._tag, "SessionConflict")
        assert.deepStrictEqual(yield* Workflow.unfinishedRuns(held), [])
        const history = yield* Workflow.getRunHistory(held, "s1")
        assert.strictEqual(history.find((r) => r.runId === "r1")?.status, "error")
        // it ended: its id never runs again
        const ended = yield* Effect.flip(
          Workflow.run(held, "go", { sessionId: "s1", runId: "r1", retryOnConflict: true })
        )
        assert.instanceOf(ended, WorkflowError.RunEnded)
        assert.strictEqual(ended.status, "error")
        // with retries: it runs again under its id, on the new state
        const [retried] = yield* Effect.all([
          Workflow.run(held, "go", { sessionId: "s2", runId: "r2", retryOnConflict: true }),
          otherCommit("s2")
        ], { concurrency: "unbounded" })
        assert.deepStrictEqual(retried.state.items, ["other", "call-3"])
        assert.strictEqual(retried.runId, "r2")
        // one record of r2, completed: it was never recorded as failed in between
        assert.deepStrictEqual(
          (yield* Workflow.getRunHistory(held, "s2")).filter((r) => r.runId === "r2").map((r) => r.status),
          ["completed"]
        )
      }).pipe(Effect.provide(layer))
  )

  it.effect(
    "a run id that ended never runs again: a completed one " +
      "replays, a failed or cancelled one is RunEnded and nothing runs",
    () =>
      Effect.gen(function*() {
        const calls = yield* Ref.make(0)
        const flaky = Workflow.make({
          name: "flaky",
          state: Counted,
          sessionState: { items: [] },
          input: Schema.String
        })
          .pipe(
            Workflow.andThen("count", ({ input }) =>
              Effect.gen(function*() {
                const n = yield* Ref.updateAndGet(calls, (n) => n + 1)
                if (input === "fail") return yield* new WorkflowError.StepError({ step: "count", description: "boom" })
                yield* Counted.update((s) => ({ items: [...s.items, `call-${n}`] }))
                return n
              }))
          )
        const done = yield* Workflow.run(flaky, "go", { sessionId: "s", runId: "done" })
        const failed = yield* Effect.flip(Workflow.run(flaky, "fail", { sessionId: "s", runId: "failed" }))
        assert.instanceOf(failed, WorkflowError.StepError)
        const paused = pausedAt(yield* Effect.flip(Workflow.run(twoQuestions, "go", { sessionId: "q" })))
        yield* Workflow.cancel(twoQuestions, paused.runId)
        assert.strictEqual(yield* Ref.get(calls), 2)
        // completed: replayed, nothing runs
        const replayed = yield* Workflow.run(flaky, "go", { sessionId: "s", runId: "done" })
        assert.deepStrictEqual([replayed.content, replayed.state.items], [done.content, ["call-1"]])
        // failed: refused, whatever the input or retry option
        for (const options of [{}, { retryOnConflict: true }, { durability: "step" as const }]) {
          const again = yield* Effect.flip(Workflow.run(flaky, "go", { sessionId: "s", runId: "failed", ...options }))
          assert.instanceOf(again, WorkflowError.RunEnded)
          assert.deepStrictEqual([again.runId, again.sessionId, again.status], ["failed", "s", "error"])
          // it answers with what is recorded: the run's error, as its record has it
          assert.strictEqual(
            again.error,
            (yield* Workflow.getRunHistory(flaky, "s")).find((r) => r.runId === "failed")?.error
          )
          assert.match(again.error ?? "", /StepError: .*boom/)
          assert.match(again.message, /'failed'.*\(error\).*; its recorded error: StepError: .*boom/)
        }
        assert.instanceOf(
          yield* Effect.flip(Effect.scoped(Workflow.start(flaky, "go", { sessionId: "s", runId: "failed" }))),
          WorkflowError.RunEnded
        )
        assert.strictEqual(
          (yield* Effect.flip(Stream.runDrain(Workflow.stream(flaky, "go", { sessionId: "s", runId: "failed" }))))._tag,
          "RunEnded"
        )
        // cancelled: refused by a run, a continue, a resume and another cancel
        const refusals = yield* Effect.all([
          Effect.flip(Workflow.run(twoQuestions, "go", { sessionId: "q", runId: paused.runId })),
          Effect.flip(Workflow.continue(twoQuestions, paused.runId, { approved: true }, { pause: paused.key })),
          Effect.flip(Workflow.resume(twoQuestions, paused.runId)),
          Effect.flip(Workflow.cancel(twoQuestions, paused.runId))
        ])
        for (const refused of refusals) {
          assert.instanceOf(refused, WorkflowError.RunEnded)
          assert.strictEqual(refused.status, "cancelled")
        }
        assert.strictEqual(yield* Ref.get(calls), 2)
        assert.deepStrictEqual((yield* Workflow.getRunHistory(flaky, "s")).map((r) => [r.runId, r.status]), [
          ["done", "completed"],
          ["failed", "error"]
        ])
        assert.deepStrictEqual(yield* Workflow.getSessionState(twoQuestions, "q"), { items: [] })
      }).pipe(Effect.provide(layer))
  )

  it.effect(
    "a conflict retry is the run's next attempt: a run cancelled between its attempts never comes back (RunLost)",
    () =>
      Effect.gen(function*() {
        const calls = yield* Ref.make(0)
        const counted = countedWorkflow(calls)
        yield* Workflow.run(counted, "seed", { sessionId: "s" })
        // the run's first commit finds the session moved on, and the run is cancelled before its next attempt
        const cancelledOnConflict = altered((inner) =>
          Effect.map(Effect.sync(() => ({ current: false })), (conflicted) => ({
            commit: (commit) =>
              commit.ends === undefined || conflicted.current
                ? inner.commit(commit)
                : Effect.gen(function*() {
                  conflicted.current = true
                  yield* Effect.orDie(
                    Effect.provideService(
                      Workflow.cancel(counted, commit.ends!.runId),
                      SessionStore.SessionStore,
                      inner
                    )
                  )
                  return yield* new WorkflowError.SessionConflict({
                    sessionId: "s",
                    expectedVersion: 1,
                    actualVersion: 2
                  })
                })
          }))
        )
        const lost = yield* Effect.flip(
          Workflow.run(counted, "go", { sessionId: "s", runId: "r", retryOnConflict: 3 }).pipe(cancelledOnConflict)
        )
        assert.strictEqual(lost._tag, "RunLost", String(lost))
        // the steps ran once (the first attempt), nothing was committed, the run is cancelled for good
        assert.strictEqual(yield* Ref.get(calls), 2)
        assert.deepStrictEqual((yield* Workflow.getSessionState(counted, "s")).items, ["call-1"])
        assert.deepStrictEqual(
          (yield* Workflow.getRunHistory(counted, "s")).filter((r) => r.runId === "r").map((r) => r.status),
          ["cancelled"]
        )
        assert.deepStrictEqual(yield* Workflow.unfinishedRuns(counted), [])
        assert.instanceOf(
          yield* Effect.flip(Workflow.run(counted, "go", { sessionId: "s", runId: "r", retryOnConflict: 3 })),
          WorkflowError.RunEnded
        )
        assert.strictEqual(yield* Ref.get(calls), 2)
      }).pipe(Effect.provide(layer))
  )

  it.scoped(
    "a run id outside the id rules is InvalidRunId for every entry that takes one, before any store sees it",
    () =>
      Effect.gen(function*() {
        const reasons = [
          ["", "empty"],
          ["a\u0000b", "control-character"],
          ["line\nbreak", "control-character"],
          ["x".repeat(SessionStore.maxIdLength + 1), "too-long"],
          ["lone\uD800surrogate", "malformed"]
        ] as const
        for (const [runId, reason] of reasons) {
          const refused = yield* Effect.all({
            run: Effect.flip(Workflow.run(twoQuestions, "go", { sessionId: "s", runId })),
            stream: Effect.flip(Stream.runDrain(Workflow.stream(twoQuestions, "go", { sessionId: "s", runId }))),
            start: Effect.flip(Workflow.start(twoQuestions, "go", { sessionId: "s", runId })),
            continue: Effect.flip(Workflow.continue(twoQuestions, runId, { approved: true })),
            continueStream: Effect.flip(
              Stream.runDrain(Workflow.continueStream(twoQuestions, runId, { approved: true }))
            ),
            resume: Effect.flip(Workflow.resume(twoQuestions, runId)),
            resumeStream: Effect.flip(Stream.runDrain(Workflow.resumeStream(twoQuestions, runId))),
            cancel: Effect.flip(Workflow.cancel(twoQuestions, runId)),
            signal: Effect.flip(Workflow.signal(twoQuestions, runId, "go", true)),
            getRunStatus: Effect.flip(Workflow.getRunStatus(twoQuestions, runId)),
            events: Effect.flip(Stream.runDrain(Workflow.events(twoQuestions, runId)))
          })
          for (const [entry, error] of Object.entries(refused)) {
            assert.instanceOf(error, WorkflowError.InvalidRunId, `${entry}: ${String(error)}`)
            assert.deepStrictEqual([error.runId, error.reason], [runId, reason], entry)
          }
        }
        // nothing was written: no run, no session, no stored event
        const store = yield* SessionStore.SessionStore
        assert.deepStrictEqual(yield* Workflow.unfinishedRuns(twoQuestions), [])
        assert.deepStrictEqual((yield* store.listRuns({})).runs, [])
        assert.strictEqual(Option.isNone(yield* store.info("s")), true)
      }).pipe(Effect.provide(layer))
  )

  it.effect(
    "a tracked run whose failure cannot be recorded is RunUnfinished " +
      "too: it is not told failed while it stays unfinished",
    () =>
      Effect.gen(function*() {
        const failing = Workflow.make({ name: "failing", sessionState: {} }).pipe(
          Workflow.andThen(
            "fail",
            () => Effect.fail(new WorkflowError.StepError({ step: "fail", description: "boom" }))
          )
        )
        const failingEnd = altered(() =>
          Effect.succeed({
            endRun: () =>
              Effect.fail(new WorkflowError.SessionStoreError({ method: "endRun", description: "connection lost" }))
          })
        )
        const told = yield* Effect.flip(Workflow.run(failing, "go", { sessionId: "s", runId: "r" }).pipe(failingEnd))
        assert.instanceOf(told, WorkflowError.RunUnfinished)
        assert.match(told.description, /boom/)
        assert.deepStrictEqual((yield* Workflow.unfinishedRuns(failing)).map((r) => r.runId), ["r"])
      }).pipe(Effect.provide(layer))
  )
})
