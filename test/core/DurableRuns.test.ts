/**
 * Durable runs: idempotent runs by id, the step journal, leases and
 * resumption, pauses for a person, cancellation and recovery. "Processes" are
 * stores made over one backend (each its own owner and in-process lock); a
 * crashed process is one whose store stops answering.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, expect, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, type StepInput, Workflow, WorkflowError } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Chunk, Deferred, Effect, Exit, Fiber, Option, Ref, Schema, Stream, TestClock } from "effect"
import { on, onStream, processes } from "./utils.js"

class Items extends SessionState.Tag("durable/Items")<Items>()({ items: Schema.Array(Schema.String) }) {}

/** A four-step workflow whose steps count their side effects; step 3 can be held at its start. */
const counting = (counts: Ref.Ref<ReadonlyArray<string>>, hold?: Deferred.Deferred<void>) =>
  Workflow.make({ name: "counting", state: Items, sessionState: { items: [] }, input: Schema.String }).pipe(
    Workflow.andThen(...stepN(1, counts)),
    Workflow.andThen(...stepN(2, counts)),
    Workflow.andThen("step-3", () =>
      Effect.gen(function*() {
        if (hold !== undefined) yield* Deferred.await(hold)
        yield* Ref.update(counts, (c) => [...c, "step-3"])
        yield* Items.update((s) => ({ items: [...s.items, "3"] }))
        return 3
      })),
    Workflow.andThen(...stepN(4, counts))
  )

const stepN = (n: number, counts: Ref.Ref<ReadonlyArray<string>>) =>
  [
    `step-${n}`,
    () =>
      Effect.gen(function*() {
        yield* Ref.update(counts, (c) => [...c, `step-${n}`])
        yield* Items.update((s) => ({ items: [...s.items, String(n)] }))
        return n
      })
  ] as const

/** Waits until a fiber is suspended (e.g. on a deferred) or done. */
const settled = <A, E>(fiber: Fiber.RuntimeFiber<A, E>) =>
  Effect.repeat(fiber.status, { until: (status) => status._tag !== "Running" })

describe("durable runs", () => {
  describe("onInterrupt", () => {
    it.effect("release: an interrupted run is left unfinished, lease given up, then carried on from its journal", () =>
      Effect.gen(function*() {
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const hold = yield* Deferred.make<void>()
        const wf = counting(counts, hold)
        const options = { sessionId: "s", runId: "released", durability: "step", onInterrupt: "release" } as const
        const fiber = yield* Effect.fork(Workflow.run(wf, "go", options))
        yield* settled(fiber)
        yield* Fiber.interrupt(fiber)
        const store = yield* SessionStore.SessionStore
        const found = yield* store.getRun("released")
        assert(Option.isSome(found) && found.value._tag === "Active")
        assert.deepStrictEqual(
          [found.value.run.status, found.value.run.leaseExpiresAt, found.value.run.journal?.next],
          [
            "running",
            0,
            2
          ]
        )
        yield* Deferred.succeed(hold, undefined)
        yield* TestClock.adjust("1 millis")
        const out = yield* Workflow.resume(wf, "released")
        expect(out.content).toBe(4)
        // the journaled steps did not run again
        expect(yield* Ref.get(counts)).toEqual(["step-1", "step-2", "step-3", "step-4"])
      }).pipe(Effect.provide(SessionStore.layerMemory)))

    it.effect("cancel (the default): an interrupted run is recorded cancelled", () =>
      Effect.gen(function*() {
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const hold = yield* Deferred.make<void>()
        const wf = counting(counts, hold)
        const fiber = yield* Effect.fork(
          Workflow.run(wf, "go", { sessionId: "s", runId: "cancelled", durability: "step" })
        )
        yield* settled(fiber)
        yield* Fiber.interrupt(fiber)
        const found = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.getRun("cancelled"))
        assert(Option.isSome(found) && found.value._tag === "Recorded")
        expect(found.value.record.status).toBe("cancelled")
      }).pipe(Effect.provide(SessionStore.layerMemory)))
  })

  describe("idempotent runs (runId)", () => {
    it.effect("a run id that completed returns its recorded output without running again", () =>
      Effect.gen(function*() {
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const wf = counting(counts)
        const first = yield* Workflow.run(wf, "go", { sessionId: "s", runId: "r1" })
        const again = yield* Workflow.run(wf, "go", { sessionId: "s", runId: "r1" })
        expect(first.content).toBe(4)
        expect(again.content).toBe(4)
        expect(again.runId).toBe("r1")
        expect(again.state.items).toEqual(["1", "2", "3", "4"])
        expect(again.stepOutputs).toEqual([])
        expect((yield* Ref.get(counts)).length).toBe(4)
        expect((yield* Workflow.getRunHistory(wf, "s")).map((r) => r.runId)).toEqual(["r1"])
        // the id of another session's run is refused
        const other = yield* Effect.flip(Workflow.run(wf, "go", { sessionId: "t", runId: "r1" }))
        expect(other._tag).toBe("RunNotFound")
      }).pipe(Effect.provide(SessionStore.layerMemory)))

    it.effect("a run id whose run failed never runs again: RunEnded, and its record stays", () =>
      Effect.gen(function*() {
        const attempts = yield* Ref.make(0)
        const flaky = Workflow.make({ name: "flaky", input: Schema.String }).pipe(
          Workflow.andThen(
            "try",
            () =>
              Effect.flatMap(Ref.updateAndGet(attempts, (n) => n + 1), (n) =>
                n === 1
                  ? Effect.fail(new WorkflowError.StepError({ step: "try", description: "first attempt fails" }))
                  : Effect.succeed(n))
          )
        )
        yield* Workflow.run(flaky, "x", { sessionId: "s", runId: "r" }).pipe(Effect.flip)
        expect((yield* Workflow.getRunHistory(flaky, "s")).map((r) => r.status)).toEqual(["error"])
        const retried = yield* Effect.flip(Workflow.run(flaky, "x", { sessionId: "s", runId: "r" }))
        expect(retried).toMatchObject({ _tag: "RunEnded", runId: "r", sessionId: "s", status: "error" })
        expect(yield* Ref.get(attempts)).toBe(1)
        expect((yield* Workflow.getRunHistory(flaky, "s")).map((r) => [r.runId, r.status])).toEqual([["r", "error"]])
      }).pipe(Effect.provide(SessionStore.layerMemory)))

    it.effect("while a run with that id runs elsewhere, RunInProgress", () =>
      Effect.gen(function*() {
        const { make } = yield* processes
        const [a, b] = [make(), make()]
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const hold = yield* Deferred.make<void>()
        const running = yield* Effect.fork(
          Workflow.run(counting(counts, hold), "go", { sessionId: "s", runId: "r1" }).pipe(on(a))
        )
        yield* settled(running)
        const error = yield* Effect.flip(
          Workflow.run(counting(counts), "go", { sessionId: "s", runId: "r1" }).pipe(on(b))
        )
        assert(error._tag === "RunInProgress")
        expect(error.owner).toBe(a.owner)
        yield* Deferred.succeed(hold, undefined)
        expect((yield* Fiber.join(running)).content).toBe(4)
        // and once it completed, the same call replays it
        expect((yield* Workflow.run(counting(counts), "go", { sessionId: "s", runId: "r1" }).pipe(on(b))).content).toBe(
          4
        )
        expect((yield* Ref.get(counts)).length).toBe(4)
      }))
  })

  describe("the step journal, leases and resuming", () => {
    it.effect("an abandoned run resumes in another process from its last journaled step, committing once", () =>
      Effect.gen(function*() {
        const { crash, make } = yield* processes
        const [a, b] = [make(), make()]
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const hold = yield* Deferred.make<void>()
        yield* Workflow.run(counting(counts), "seed", { sessionId: "s" }).pipe(on(a))
        yield* Ref.set(counts, [])
        // process A runs with a step journal and dies while step 3 waits
        yield* Effect.forkDaemon(
          Workflow.run(counting(counts, hold), "go", { sessionId: "s", runId: "r1", durability: "step" }).pipe(on(a))
        )
        yield* Effect.repeat(Ref.get(counts), { until: (c) => c.length === 2 })
        const [unfinished] = yield* Workflow.unfinishedRuns(counting(counts)).pipe(on(b))
        expect(unfinished?.journal?.next).toBe(2)
        expect(unfinished?.abandoned).toBe(false)
        yield* crash(a)
        // while its lease holds, nobody may take it
        const early = yield* Effect.flip(Workflow.resume(counting(counts), "r1").pipe(on(b)))
        expect(early._tag).toBe("RunInProgress")
        yield* TestClock.adjust("31 seconds")
        const [abandoned] = yield* Workflow.unfinishedRuns(counting(counts)).pipe(on(b))
        expect(abandoned?.abandoned).toBe(true)
        // process B resumes it: steps 1 and 2 come from the journal
        const events = yield* Workflow.resumeStream(counting(counts), "r1").pipe(
          onStream(b),
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray)
        )
        expect(events[0]).toMatchObject({ _tag: "RunResumed", fromStep: 2, reason: "resumed", runId: "r1" })
        expect(events.at(-1)).toMatchObject({ _tag: "RunCompleted", content: 4 })
        expect(yield* Ref.get(counts)).toEqual(["step-1", "step-2", "step-3", "step-4"])
        expect((yield* Workflow.getSessionState(counting(counts), "s").pipe(on(b))).items).toEqual([
          "1",
          "2",
          "3",
          "4",
          "1",
          "2",
          "3",
          "4"
        ])
        const history = yield* Workflow.getRunHistory(counting(counts), "s").pipe(on(b))
        expect(history.map((r) => [r.runId, r.status])).toEqual([[history[0]!.runId, "completed"], ["r1", "completed"]])
        expect(yield* Workflow.unfinishedRuns(counting(counts)).pipe(on(b))).toEqual([])
      }))

    it.effect("two processes resuming one abandoned run: exactly one wins", () =>
      Effect.gen(function*() {
        const { crash, make } = yield* processes
        const [a, b, c] = [make(), make(), make()]
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const hold = yield* Deferred.make<void>()
        yield* Effect.forkDaemon(
          Workflow.run(counting(counts, hold), "go", { sessionId: "s", runId: "r1", durability: "step" }).pipe(on(a))
        )
        yield* Effect.repeat(Ref.get(counts), { until: (n) => n.length === 2 })
        yield* crash(a)
        yield* TestClock.adjust("31 seconds")
        const gate = yield* Deferred.make<void>()
        // B holds step 3 so that C tries while B runs
        const slow = counting(counts, gate)
        const byB = yield* Effect.fork(Workflow.resume(slow, "r1").pipe(on(b)))
        yield* settled(byB)
        const byC = yield* Effect.exit(Workflow.resume(slow, "r1").pipe(on(c)))
        yield* Deferred.succeed(gate, undefined)
        const won = yield* Fiber.join(byB)
        expect(won.content).toBe(4)
        assert(Exit.isFailure(byC))
        expect(Option.getOrThrow(
          Exit.causeOption(byC).pipe(
            Option.flatMap((cause) => Option.fromNullable(cause._tag === "Fail" ? cause.error : undefined))
          )
        )).toMatchObject({ _tag: "RunInProgress" })
        expect((yield* Ref.get(counts)).filter((s) => s === "step-3")).toEqual(["step-3"])
      }))

    it.effect(
      "resuming after another run committed to the session is a SessionConflict; retryOnConflict starts over",
      () =>
        Effect.gen(function*() {
          const { crash, make } = yield* processes
          const [a, b] = [make(), make()]
          const counts = yield* Ref.make<ReadonlyArray<string>>([])
          const hold = yield* Deferred.make<void>()
          const abandon = (runId: string) =>
            Effect.gen(function*() {
              yield* Ref.set(counts, [])
              yield* Effect.forkDaemon(
                Workflow.run(counting(counts, hold), "go", { sessionId: "s", runId, durability: "step" }).pipe(on(a))
              )
              yield* Effect.repeat(Ref.get(counts), { until: (n) => n.length === 2 })
            })
          yield* abandon("r1")
          yield* crash(a)
          yield* TestClock.adjust("31 seconds")
          // another run commits meanwhile
          yield* Workflow.run(counting(counts), "other", { sessionId: "s" }).pipe(on(b))
          const conflict = yield* Effect.flip(Workflow.resume(counting(counts), "r1").pipe(on(b)))
          expect(conflict._tag).toBe("SessionConflict")
          // the stale run ended with the conflict
          const history = yield* Workflow.getRunHistory(counting(counts), "s").pipe(on(b))
          expect(history.find((r) => r.runId === "r1")).toMatchObject({ status: "error" })
          expect(history.find((r) => r.runId === "r1")?.error).toMatch(/^SessionConflict: /)
          expect(yield* Workflow.unfinishedRuns(counting(counts)).pipe(on(b))).toEqual([])

          // with retryOnConflict, the run starts over on the new state, under the same id
          const { crash: crash2, make: make2 } = yield* processes
          const [c, d] = [make2(), make2()]
          yield* Workflow.run(counting(counts), "seed", { sessionId: "s" }).pipe(on(c))
          yield* Ref.set(counts, [])
          yield* Effect.forkDaemon(
            Workflow.run(counting(counts, hold), "go", { sessionId: "s", runId: "r2", durability: "step" }).pipe(on(c))
          )
          yield* Effect.repeat(Ref.get(counts), { until: (n) => n.length === 2 })
          yield* crash2(c)
          yield* TestClock.adjust("31 seconds")
          yield* Workflow.run(counting(counts), "other", { sessionId: "s" }).pipe(on(d))
          yield* Ref.set(counts, [])
          const over = yield* Workflow.resume(counting(counts), "r2", { retryOnConflict: true }).pipe(on(d))
          expect(over.runId).toBe("r2")
          expect(yield* Ref.get(counts)).toEqual(["step-1", "step-2", "step-3", "step-4"])
          expect(over.state.items).toEqual(["1", "2", "3", "4", "1", "2", "3", "4", "1", "2", "3", "4"])
          const after = yield* Workflow.getRunHistory(counting(counts), "s").pipe(on(d))
          expect(after.filter((r) => r.runId === "r2").map((r) => r.status)).toEqual(["completed"])
        })
    )

    it.effect("recover resumes the abandoned runs of a workflow, or ends them as abandoned", () =>
      Effect.gen(function*() {
        const { crash, make } = yield* processes
        const [a, b] = [make(), make()]
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const hold = yield* Deferred.make<void>()
        for (const sessionId of ["s1", "s2"]) {
          yield* Effect.forkDaemon(
            Workflow.run(counting(counts, hold), "go", { sessionId, runId: `run-${sessionId}`, durability: "step" })
              .pipe(on(a))
          )
        }
        yield* Effect.repeat(Ref.get(counts), { until: (n) => n.length === 4 })
        yield* crash(a)
        yield* TestClock.adjust("31 seconds")
        const recovered = yield* Workflow.recover(counting(counts), { mode: "abandon" }).pipe(on(b))
        expect(recovered.map((r) => [r.runId, Exit.isSuccess(r.outcome) ? r.outcome.value : "failed"])).toEqual([
          ["run-s1", "abandoned"],
          ["run-s2", "abandoned"]
        ])
        expect((yield* Workflow.getRunHistory(counting(counts), "s1").pipe(on(b))).map((r) => r.status)).toEqual([
          "abandoned"
        ])
        // the session of an abandoned run keeps its state: a new session got the seed only
        expect((yield* Workflow.getSessionState(counting(counts), "s1").pipe(on(b))).items).toEqual([])

        const { crash: crash2, make: make2 } = yield* processes
        const [c, d] = [make2(), make2()]
        yield* Ref.set(counts, [])
        yield* Effect.forkDaemon(
          Workflow.run(counting(counts, hold), "go", { sessionId: "s3", runId: "run-s3", durability: "step" }).pipe(
            on(c)
          )
        )
        yield* Effect.repeat(Ref.get(counts), { until: (n) => n.length === 2 })
        yield* crash2(c)
        yield* TestClock.adjust("31 seconds")
        const resumed = yield* Workflow.recover(counting(counts)).pipe(on(d))
        expect(
          resumed.map((
            r
          ) => [
            r.runId,
            Exit.isSuccess(r.outcome) && typeof r.outcome.value === "object" ? r.outcome.value.content : "?"
          ])
        ).toEqual([["run-s3", 4]])
        expect((yield* Workflow.getSessionState(counting(counts), "s3").pipe(on(d))).items).toEqual([
          "1",
          "2",
          "3",
          "4"
        ])
      }))

    it.effect("a running run that is cancelled elsewhere stops at its next lease renewal and commits nothing", () =>
      Effect.gen(function*() {
        const { make } = yield* processes
        const [a, b] = [make(), make()]
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const hold = yield* Deferred.make<void>()
        const running = yield* Effect.fork(
          Workflow.run(counting(counts, hold), "go", { sessionId: "s", runId: "r1", durability: "step" }).pipe(on(a))
        )
        yield* Effect.repeat(Ref.get(counts), { until: (n) => n.length === 2 })
        yield* Workflow.cancel(counting(counts), "r1").pipe(on(b))
        yield* TestClock.adjust("11 seconds")
        const exit = yield* Fiber.await(running)
        assert(Exit.isFailure(exit))
        // its caller is told it was cancelled
        expect(JSON.stringify(exit.cause)).toContain("RunEnded")
        expect(JSON.stringify(exit.cause)).toContain("cancelled")
        const history = yield* Workflow.getRunHistory(counting(counts), "s").pipe(on(b))
        expect(history.map((r) => [r.runId, r.status])).toEqual([["r1", "cancelled"]])
        expect((yield* Workflow.getSessionState(counting(counts), "s").pipe(on(b))).items).toEqual([])
      }))
  })

  describe("pausing for a person", () => {
    const Request = Schema.Struct({ item: Schema.String, price: Schema.Number })
    const Decision = Schema.Struct({ approved: Schema.Boolean, note: Schema.optional(Schema.String) })
    const asked = (counts: Ref.Ref<ReadonlyArray<string>>) =>
      Workflow.make({ name: "approvals", state: Items, sessionState: { items: [] }, input: Schema.String }).pipe(
        Workflow.andThen(...stepN(1, counts)),
        Workflow.andThen(Step.pause("approve", {
          payload: Request,
          response: Decision,
          ask: (input: StepInput.StepInput<number, string>) =>
            Effect.as(Ref.update(counts, (c) => [...c, "ask"]), { item: input.input, price: 120 }),
          resume: (decision, input: StepInput.StepInput<number, string>) =>
            decision.approved
              ? Effect.as(
                Items.update((s) => ({ items: [...s.items, input.input] })),
                `approved${decision.note === undefined ? "" : `: ${decision.note}`}`
              )
              : Effect.succeed("rejected")
        })),
        Workflow.andThen(
          "after",
          ({ previousStepContent }) => Effect.as(Ref.update(counts, (c) => [...c, "after"]), previousStepContent)
        )
      )

    it.effect("a run pauses with its question, commits nothing, and continues in another process with the answer", () =>
      Effect.gen(function*() {
        const { make } = yield* processes
        const [a, b] = [make(), make()]
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const wf = asked(counts)
        yield* Workflow.run(wf, "first", { sessionId: "s" }).pipe(Effect.flip, on(a))
        // streamed: the stream ends with RunPaused and does not fail
        const events = yield* Workflow.stream(wf, "laptop", { sessionId: "t" }).pipe(
          onStream(a),
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray)
        )
        const last = events.at(-1)!
        assert(last._tag === "RunPaused")
        expect(last.payload).toEqual({ item: "laptop", price: 120 })
        expect(last.stepPath).toEqual(["approve"])
        expect(events.some((e) => e._tag === "RunFailed")).toBe(false)
        const runId = last.runId
        // Workflow.run fails with RunPaused, typed
        const paused = yield* Workflow.run(wf, "phone", { sessionId: "u" }).pipe(Effect.flip, on(a))
        assert(paused._tag === "RunPaused")
        expect(paused.payload).toEqual({ item: "phone", price: 120 })
        // nothing committed; the session takes no other run while it waits
        const blocked = yield* Effect.flip(Workflow.run(wf, "other", { sessionId: "t" }).pipe(on(b)))
        assert(blocked._tag === "SessionPaused")
        expect(blocked.runId).toBe(runId)
        expect((yield* Workflow.pausedRuns(wf, { sessionId: "t" }).pipe(on(b))).map((r) => [r.runId, r.pause?.payload]))
          .toEqual([
            [runId, { item: "laptop", price: 120 }]
          ])
        // a bad answer: typed error, still paused
        const bad = yield* Effect.flip(Workflow.continue(wf, runId, { approved: "yes" }).pipe(on(b)))
        expect(bad._tag).toBe("ResponseDecodeError")
        expect((yield* Workflow.pausedRuns(wf, { sessionId: "t" }).pipe(on(b))).length).toBe(1)
        // the answer, in another process: the step before the question does not run again
        yield* Ref.set(counts, [])
        const done = yield* Workflow.continueStream(wf, runId, { approved: true, note: "ok" }).pipe(
          onStream(b),
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray)
        )
        expect(done[0]).toMatchObject({ _tag: "RunResumed", reason: "continued", fromStep: 1 })
        expect(done.at(-1)).toMatchObject({ _tag: "RunCompleted", content: "approved: ok" })
        expect(yield* Ref.get(counts)).toEqual(["ask", "after"])
        // the new session was created by the continued run
        expect((yield* Workflow.getSessionState(wf, "t").pipe(on(b))).items).toEqual(["1", "laptop"])
        expect(yield* Workflow.pausedRuns(wf, { sessionId: "t" }).pipe(on(b))).toEqual([])
        expect((yield* Workflow.run(wf, "again", { sessionId: "t" }).pipe(Effect.flip, on(b)))._tag).toBe("RunPaused")
      }))

    it.effect("cancel ends a paused run, recorded as cancelled; the session takes runs again", () =>
      Effect.gen(function*() {
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const wf = asked(counts)
        const okFirst = Workflow.make({
          name: "approvals",
          state: Items,
          sessionState: { items: [] },
          input: Schema.String
        }).pipe(
          Workflow.andThen(...stepN(1, counts))
        )
        yield* Workflow.run(okFirst, "seed", { sessionId: "s" })
        const paused = yield* Workflow.run(wf, "x", { sessionId: "s" }).pipe(Effect.flip)
        assert(paused._tag === "RunPaused")
        expect((yield* Effect.flip(Workflow.updateSessionState(wf, "s", (s) => s)))._tag).toBe("SessionPaused")
        yield* Workflow.cancel(wf, paused.runId)
        const history = yield* Workflow.getRunHistory(wf, "s")
        expect(history.map((r) => r.status)).toEqual(["completed", "cancelled"])
        expect((yield* Workflow.getSessionState(wf, "s")).items).toEqual(["1"])
        expect((yield* Effect.flip(Workflow.cancel(wf, paused.runId)))._tag).toBe("RunEnded")
        expect((yield* Effect.flip(Workflow.continue(wf, paused.runId, { approved: true })))._tag).toBe("RunEnded")
        yield* Workflow.run(okFirst, "next", { sessionId: "s" })
      }).pipe(Effect.provide(SessionStore.layerMemory)))

    it.effect("a step that asks twice pauses twice; each answer is kept for the replays", () =>
      Effect.gen(function*() {
        const twice = Workflow.make({ name: "twice", input: Schema.String }).pipe(
          Workflow.andThen(Step.container("both", (_input, runner) =>
            Effect.gen(function*() {
              const question = (n: number) =>
                Step.pause(`q`, {
                  payload: Schema.Number,
                  response: Schema.String,
                  ask: () => Effect.succeed(n),
                  resume: (answer) => Effect.succeed(answer)
                })
              const first = yield* runner.run(question(1), { ..._input, previousStepOutputs: runner.outputs() })
              const second = yield* runner.run(question(2), { ..._input, previousStepOutputs: runner.outputs() })
              return `${first.content}+${second.content}`
            })))
        )
        const one = yield* Workflow.run(twice, "x", { sessionId: "s" }).pipe(Effect.flip)
        assert(one._tag === "RunPaused")
        expect(one.payload).toBe(1)
        const two = yield* Workflow.continue(twice, one.runId, "a").pipe(Effect.flip)
        assert(two._tag === "RunPaused")
        expect(two.payload).toBe(2)
        expect((yield* Workflow.continue(twice, one.runId, "b")).content).toBe("a+b")
      }).pipe(Effect.provide(SessionStore.layerMemory)))
  })

  it.scoped("on a SQLite file: a run paused by one store is continued by another; idempotent replays", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "sessionflow-durable-" })
      const filename = `${dir}/durable.db`
      const counts = yield* Ref.make<ReadonlyArray<string>>([])
      const wf = Workflow.make({
        name: "sqlite-approvals",
        state: Items,
        sessionState: { items: [] },
        input: Schema.String
      }).pipe(
        Workflow.andThen(...stepN(1, counts)),
        Workflow.andThen(Step.pause("approve", {
          payload: Schema.String,
          response: Schema.Boolean,
          ask: ({ input }) => Effect.succeed(`approve ${input}?`),
          resume: (ok) => Effect.succeed(ok ? "approved" : "rejected")
        }))
      )
      const paused = yield* Workflow.run(wf, "tea", { sessionId: "s", runId: "r1" }).pipe(
        Effect.flip,
        Effect.provide(SqliteSessionStore.layer({ filename }))
      )
      assert(paused._tag === "RunPaused")
      expect(paused.payload).toBe("approve tea?")
      const done = yield* Workflow.continue(wf, "r1", true).pipe(Effect.provide(SqliteSessionStore.layer({ filename })))
      expect(done.content).toBe("approved")
      const replay = yield* Workflow.run(wf, "tea", { sessionId: "s", runId: "r1" }).pipe(
        Effect.provide(SqliteSessionStore.layer({ filename }))
      )
      expect(replay.content).toBe("approved")
      expect(yield* Ref.get(counts)).toEqual(["step-1"])
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
