/**
 * A run that arrives at a busy session (`onBusy`): `"reject"` as before,
 * `"enqueue"` waits its turn in the session's queue in the store (across
 * "processes": stores over one database, each with its own owner),
 * `"interrupt"` cancels what holds the session, then runs. On the memory
 * store and on a SQLite file.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Context, Deferred, Effect, Fiber, Layer, Schedule, Schema, type Scope, Stream } from "effect"
import { on, processes } from "./utils.js"

class Log extends SessionState.Tag("busy/Log")<Log>()({ entries: Schema.Array(Schema.String) }) {}

type Store = SessionStore.Service

/**
 * Appends its input to the session's log; an input in `held` waits for its
 * gate first (and says it started).
 */
const logging = (
  gates: Map<string, { readonly started: Deferred.Deferred<void>; readonly go: Deferred.Deferred<void> }>
) =>
  Workflow.make({ name: "busy", state: Log, sessionState: { entries: [] }, input: Schema.String }).pipe(
    Workflow.andThen("append", ({ input }) =>
      Effect.gen(function*() {
        const gate = gates.get(input)
        if (gate !== undefined) {
          yield* Deferred.succeed(gate.started, undefined)
          yield* Deferred.await(gate.go)
        }
        yield* Log.update((log) => ({ entries: [...log.entries, input] }))
        return input
      }))
  )

/** Asks before it appends its input (and appends `not <input>` when refused). */
const asking = Workflow.make({ name: "busy-ask", state: Log, sessionState: { entries: [] }, input: Schema.String })
  .pipe(
    Workflow.andThen(Step.pause("approve", {
      payload: Schema.String,
      response: Schema.Boolean,
      ask: ({ input }) => Effect.succeed(`may I log ${input}?`),
      resume: (approved, { input }) =>
        Effect.as(Log.update((log) => ({ entries: [...log.entries, approved ? input : `not ${input}`] })), input)
    }))
  )

const gate = () => Effect.all({ started: Deferred.make<void>(), go: Deferred.make<void>() })

/** Two "processes" over one database: memory stores over one backend, or two SQLite stores over one file. */
const stores: ReadonlyArray<readonly [string, Effect.Effect<readonly [Store, Store], unknown, Scope.Scope>]> = [
  ["memory", Effect.map(processes, ({ make }) => [make(), make()] as const)],
  [
    "SQLite",
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "sessionflow-busy-" })
      const open = Effect.map(
        Layer.build(SqliteSessionStore.layer({ filename: `${dir}/sessions.db` })),
        Context.get(SessionStore.SessionStore)
      )
      return [yield* open, yield* open] as const
    }).pipe(Effect.provide(NodeFileSystem.layer))
  ]
]

/** Waits until the session's queue lists these inputs, in this order (the first one `running` when asked). */
const queueIs = (store: Store, wf: Workflow.Any, sessionId: string, inputs: ReadonlyArray<string>) =>
  Effect.repeat(Workflow.queuedRuns(wf, { sessionId }).pipe(on(store)), {
    until: (queued) => queued.length === inputs.length && queued.every((run, i) => run.input === inputs[i]),
    schedule: Schedule.spaced("20 millis")
  }).pipe(
    Effect.timeoutFail({
      duration: "10 seconds",
      onTimeout: () => new Error(`the queue never became ${inputs.join(", ")}`)
    })
  )

const entriesOf = <E>(
  store: Store,
  wf: Workflow.Workflow<string, E, never, typeof Schema.String, typeof Log>,
  sessionId: string
) => Effect.map(Workflow.getSessionState(wf, sessionId).pipe(on(store)), (state) => state.entries)

for (const [name, twoStores] of stores) {
  describe(`onBusy on ${name}`, () => {
    it.live(
      "enqueue: runs from two processes wait their turn and run once each, in arrival order",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* twoStores
          const gates = new Map([["a1", yield* gate()]])
          const wf = logging(gates)
          const sessionId = `queue-${crypto.randomUUID()}`
          const enqueue = (store: Store, input: string) =>
            Effect.fork(Workflow.run(wf, input, { sessionId, onBusy: "enqueue" }).pipe(on(store)))
          const first = yield* enqueue(a, "a1")
          yield* Deferred.await(gates.get("a1")!.started)
          const second = yield* enqueue(b, "b1")
          yield* queueIs(a, wf, sessionId, ["a1", "b1"])
          const third = yield* enqueue(a, "a2")
          yield* queueIs(b, wf, sessionId, ["a1", "b1", "a2"])
          const queued = yield* Workflow.queuedRuns(wf, { sessionId }).pipe(on(b))
          expect(queued.map((run) => run.status)).toEqual(["running", "waiting", "waiting"])
          expect(queued.map((run) => run.owner)).toEqual([a.owner, b.owner, a.owner])
          // nothing ran while the first run holds the session
          expect(yield* Workflow.getRunHistory(wf, sessionId).pipe(on(a), Effect.orElseSucceed(() => []))).toEqual([])
          yield* Deferred.succeed(gates.get("a1")!.go, undefined)
          const outputs = yield* Effect.all([Fiber.join(first), Fiber.join(second), Fiber.join(third)])
          expect(outputs.map((output) => output.content)).toEqual(["a1", "b1", "a2"])
          expect(yield* entriesOf(b, wf, sessionId)).toEqual(["a1", "b1", "a2"])
          expect(yield* Workflow.queuedRuns(wf, { sessionId }).pipe(on(a))).toEqual([])
        }).pipe(Effect.scoped),
      30_000
    )

    it.live(
      "enqueue in the background: start returns once the run is queued, and the run runs after the holder",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* twoStores
          const gates = new Map([["a1", yield* gate()]])
          const wf = logging(gates)
          const sessionId = `start-queue-${crypto.randomUUID()}`
          const holder = yield* Effect.fork(Workflow.run(wf, "a1", { sessionId, onBusy: "enqueue" }).pipe(on(a)))
          yield* Deferred.await(gates.get("a1")!.started)
          // the holder still holds the session: start must not wait for it
          const started = yield* Workflow.start(wf, "b1", { sessionId, onBusy: "enqueue" }).pipe(
            on(b),
            Effect.timeoutFail({
              duration: "5 seconds",
              onTimeout: () => new Error("start waited for the queued run's turn")
            })
          )
          expect(started.sessionId).toBe(sessionId)
          const later = yield* Workflow.start(wf, "b2", { sessionId, onBusy: "enqueue" }).pipe(on(a))
          const queued = yield* Workflow.queuedRuns(wf, { sessionId }).pipe(on(a))
          expect(queued.map((run) => [run.runId, run.status])).toEqual([
            [expect.any(String), "running"],
            [started.runId, "waiting"],
            [later.runId, "waiting"]
          ])
          // nothing committed yet: the holder waits at its gate, the started runs in the queue
          expect(yield* Workflow.getRunHistory(wf, sessionId).pipe(on(a), Effect.orElseSucceed(() => []))).toEqual([])
          // a queued run's status, from either process: Queued, with its place (the runs ahead of it)
          const waiting = yield* Workflow.getRunStatus(wf, started.runId).pipe(on(a))
          expect(waiting).toEqual({
            _tag: "Queued",
            runId: started.runId,
            sessionId,
            workflowName: "busy",
            input: "b1",
            queuedAt: queued[1]!.enqueuedAt,
            position: 1
          })
          const last = yield* Workflow.getRunStatus(wf, later.runId).pipe(on(b))
          expect(last._tag === "Queued" ? [last.position, last.input] : last._tag).toEqual([2, "b2"])
          // the plain holder is in the queue too, first: its turn came (the store knows a plain run once it ended)
          const first = yield* Workflow.getRunStatus(wf, queued[0]!.runId).pipe(on(b))
          expect(first._tag === "Queued" ? [first.position, first.input] : first._tag).toEqual([0, "a1"])
          // another workflow has no such run
          const stranger = yield* Effect.flip(Workflow.getRunStatus(asking, started.runId).pipe(on(b)))
          expect(stranger._tag).toBe("RunNotFound")
          yield* Deferred.succeed(gates.get("a1")!.go, undefined)
          expect((yield* Fiber.join(holder)).content).toBe("a1")
          yield* Effect.repeat(Workflow.getRunStatus(wf, started.runId).pipe(on(b), Effect.either), {
            until: (status) => status._tag === "Right" && status.right._tag === "Completed",
            schedule: Schedule.spaced("20 millis")
          }).pipe(
            Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the queued run never completed") })
          )
          const status = yield* Workflow.getRunStatus(wf, started.runId).pipe(on(a))
          expect([status._tag, status.sessionId]).toEqual(["Completed", sessionId])
          yield* Effect.repeat(Workflow.getRunStatus(wf, later.runId).pipe(on(a), Effect.either), {
            until: (status) => status._tag === "Right" && status.right._tag === "Completed",
            schedule: Schedule.spaced("20 millis")
          }).pipe(Effect.timeoutFail({
            duration: "10 seconds",
            onTimeout: () => new Error("the last queued run never completed")
          }))
          expect(yield* entriesOf(b, wf, sessionId)).toEqual(["a1", "b1", "b2"])
          expect(yield* Workflow.queuedRuns(wf, { sessionId }).pipe(on(a))).toEqual([])
        }).pipe(Effect.scoped),
      30_000
    )

    it.live(
      "reject (the default) is as before: a run of another process that loses the race is a SessionConflict",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* twoStores
          const gates = new Map([["a1", yield* gate()]])
          const wf = logging(gates)
          const sessionId = `reject-${crypto.randomUUID()}`
          yield* Workflow.run(wf, "a0", { sessionId }).pipe(on(a))
          const first = yield* Effect.fork(Workflow.run(wf, "a1", { sessionId }).pipe(on(a)))
          yield* Deferred.await(gates.get("a1")!.started)
          yield* Workflow.run(wf, "b1", { sessionId }).pipe(on(b))
          yield* Deferred.succeed(gates.get("a1")!.go, undefined)
          const error = yield* Effect.flip(Fiber.join(first))
          expect(error._tag).toBe("SessionConflict")
          expect(yield* entriesOf(a, wf, sessionId)).toEqual(["a0", "b1"])
        }).pipe(Effect.scoped),
      30_000
    )

    it.live(
      "enqueue: a queued run whose caller is gone stops blocking the queue when its lease expires",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* twoStores
          const wf = logging(new Map())
          const sessionId = `gone-${crypto.randomUUID()}`
          // a caller that queued its run and died: its entry is never renewed again
          const now = Date.now()
          yield* a.enqueueRun({
            runId: "dead-run",
            sessionId,
            workflowName: "busy",
            input: "dead",
            owner: "a-process-that-died",
            leaseExpiresAt: now + 600,
            enqueuedAt: now
          })
          yield* a.takeQueueTurn(sessionId, "dead-run", {
            owner: "a-process-that-died",
            now,
            leaseExpiresAt: now + 600
          })
          const started = Date.now()
          const output = yield* Workflow.run(wf, "b1", { sessionId, onBusy: "enqueue", leaseDuration: "1 second" })
            .pipe(on(b))
          expect(output.content).toBe("b1")
          // it waited for the dead entry's lease, and not much longer
          expect(Date.now() - started).toBeGreaterThanOrEqual(500)
          expect(Date.now() - started).toBeLessThan(5000)
          expect(yield* Workflow.queuedRuns(wf, { sessionId }).pipe(on(a))).toEqual([])
        }).pipe(Effect.scoped),
      30_000
    )

    it.live("enqueue: a run queued behind a paused run waits until the paused run ends", () =>
      Effect.gen(function*() {
        const [a, b] = yield* twoStores
        const wf = asking
        const sessionId = `paused-${crypto.randomUUID()}`
        const paused = yield* Effect.flip(Workflow.run(wf, "first", { sessionId }).pipe(on(a)))
        if (paused._tag !== "RunPaused") return expect.fail(`expected RunPaused, got ${paused._tag}`)
        // the default refuses a run while the session waits for a person
        expect((yield* Effect.flip(Workflow.run(wf, "now", { sessionId }).pipe(on(b))))._tag).toBe("SessionPaused")
        const queued = yield* Effect.fork(
          Workflow.run(wf, "second", { sessionId, onBusy: "enqueue" }).pipe(on(b), Effect.either)
        )
        yield* queueIs(a, wf, sessionId, ["second"])
        yield* Effect.sleep("300 millis")
        expect(queued.unsafePoll()).toBe(null)
        yield* Workflow.continue(wf, paused.runId, true).pipe(on(a))
        // the queued run then runs, and pauses in its turn
        const second = yield* Fiber.join(queued)
        expect(second._tag === "Left" && second.left._tag).toBe("RunPaused")
        expect(yield* entriesOf(a, wf, sessionId)).toEqual(["first"])
      }).pipe(Effect.scoped), 30_000)

    it.live(
      "interrupt: this process's running run is interrupted (recorded cancelled, " +
        "nothing committed; its caller gets RunEnded cancelled), then the new one runs",
      () =>
        Effect.gen(function*() {
          const [a] = yield* twoStores
          const gates = new Map([["slow", yield* gate()]])
          const wf = logging(gates)
          const sessionId = `interrupt-${crypto.randomUUID()}`
          yield* Workflow.run(wf, "before", { sessionId }).pipe(on(a))
          const slow = yield* Effect.fork(Workflow.run(wf, "slow", { sessionId }).pipe(on(a)))
          yield* Deferred.await(gates.get("slow")!.started)
          const output = yield* Workflow.run(wf, "urgent", { sessionId, onBusy: "interrupt" }).pipe(on(a))
          expect(output.state.entries).toEqual(["before", "urgent"])
          // its caller is told how it ended, as the caller of a cancelled run is
          const ended = yield* Effect.flip(Fiber.join(slow))
          expect(ended).toBeInstanceOf(WorkflowError.RunEnded)
          expect([ended._tag === "RunEnded" && ended.status, ended._tag === "RunEnded" && ended.sessionId]).toEqual([
            "cancelled",
            sessionId
          ])
          const history = yield* Workflow.getRunHistory(wf, sessionId).pipe(on(a))
          expect(history.map((run) => [run.input, run.status])).toEqual([
            ["before", "completed"],
            ["slow", "cancelled"],
            ["urgent", "completed"]
          ])
        }).pipe(Effect.scoped),
      30_000
    )

    it.live(
      "interrupt: the stream of this process's running run ends with RunCancelled and fails with RunEnded (cancelled)",
      () =>
        Effect.gen(function*() {
          const [a] = yield* twoStores
          const gates = new Map([["slow", yield* gate()]])
          const wf = logging(gates)
          const sessionId = `interrupt-stream-${crypto.randomUUID()}`
          const events: Array<string> = []
          const slow = yield* Effect.fork(
            Workflow.stream(wf, "slow", { sessionId }).pipe(
              Stream.runForEach((event) => Effect.sync(() => events.push(event._tag))),
              on(a)
            )
          )
          yield* Deferred.await(gates.get("slow")!.started)
          yield* Workflow.run(wf, "urgent", { sessionId, onBusy: "interrupt" }).pipe(on(a))
          const ended = yield* Effect.flip(Fiber.join(slow))
          expect([ended._tag, ended._tag === "RunEnded" && ended.status]).toEqual(["RunEnded", "cancelled"])
          expect(events[0]).toBe("RunStarted")
          expect(events[events.length - 1]).toBe("RunCancelled")
        }).pipe(Effect.scoped),
      30_000
    )

    it.live(
      "interrupt: the session's paused run is cancelled (its question withdrawn), then the new one runs",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* twoStores
          const wf = asking
          const sessionId = `interrupt-paused-${crypto.randomUUID()}`
          const paused = yield* Effect.flip(Workflow.run(wf, "ask", { sessionId }).pipe(on(a)))
          if (paused._tag !== "RunPaused") return expect.fail(`expected RunPaused, got ${paused._tag}`)
          const next = yield* Effect.flip(Workflow.run(wf, "again", { sessionId, onBusy: "interrupt" }).pipe(on(b)))
          // the new run ran (and paused in its turn)
          expect(next._tag).toBe("RunPaused")
          const ended = yield* Effect.flip(Workflow.continue(wf, paused.runId, true).pipe(on(a)))
          expect(ended).toBeInstanceOf(WorkflowError.RunEnded)
          expect((ended as WorkflowError.RunEnded).status).toBe("cancelled")
        }).pipe(Effect.scoped),
      30_000
    )

    it.live(
      "interrupt: a tracked run of another process is cancelled through the store and commits nothing",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* twoStores
          const gates = new Map([["slow", yield* gate()]])
          const wf = logging(gates)
          const sessionId = `interrupt-elsewhere-${crypto.randomUUID()}`
          const slow = yield* Effect.fork(
            Workflow.run(wf, "slow", { sessionId, runId: `slow-${sessionId}`, leaseDuration: "600 millis" }).pipe(on(a))
          )
          yield* Deferred.await(gates.get("slow")!.started)
          const output = yield* Workflow.run(wf, "urgent", { sessionId, onBusy: "interrupt" }).pipe(on(b))
          expect(output.state.entries).toEqual(["urgent"])
          // the other process's run finds out at its next lease renewal: it was cancelled
          const error = yield* Effect.flip(Fiber.join(slow))
          expect(error._tag).toBe("RunEnded")
          expect(error._tag === "RunEnded" ? error.status : undefined).toBe("cancelled")
          expect(yield* entriesOf(a, wf, sessionId)).toEqual(["urgent"])
          const history = yield* Workflow.getRunHistory(wf, sessionId).pipe(on(a))
          expect(history.map((run) => [run.input, run.status])).toEqual([["slow", "cancelled"], [
            "urgent",
            "completed"
          ]])
        }).pipe(Effect.scoped),
      30_000
    )
  })
}

describe("onBusy reject and interrupt against a queue turn taken as they start", () => {
  for (const onBusy of ["reject", "interrupt"] as const) {
    for (const [name, twoStores] of stores) {
      it.live(
        `${onBusy} on ${name}: refused with SessionBusy before any of its work, the queue's run holds the session`,
        () =>
          Effect.gen(function*() {
            const [a, b] = yield* twoStores
            const wf = logging(new Map())
            const sessionId = `turn-race-${crypto.randomUUID()}`
            const runId = `r-${crypto.randomUUID()}`
            const queuedId = `q-${crypto.randomUUID()}`
            // another process's queued run takes its turn after this run read the session, before it registered
            const turnTaken = Effect.gen(function*() {
              const now = Date.now()
              yield* b.enqueueRun({
                runId: queuedId,
                sessionId,
                workflowName: wf.name,
                input: "q",
                owner: b.owner,
                leaseExpiresAt: now + 60_000,
                enqueuedAt: now
              })
              expect(yield* b.takeQueueTurn(sessionId, queuedId, { owner: b.owner, now, leaseExpiresAt: now + 60_000 }))
                .toBe("taken")
            })
            const racing: Store = {
              ...a,
              startRun: (run) =>
                run.runId === runId ? Effect.zipRight(Effect.orDie(turnTaken), a.startRun(run)) : a.startRun(run)
            }
            const refused = yield* Effect.flip(Workflow.run(wf, "r", { sessionId, runId, onBusy }).pipe(on(racing)))
            expect(refused._tag === "SessionBusy" ? refused.runId : refused).toBe(queuedId)
            // none of its work: its step never appended
            const state = yield* Effect.either(Workflow.getSessionState(wf, sessionId).pipe(on(b)))
            expect(state._tag === "Right" ? state.right.entries : []).toEqual([])
            // the queue's run still has its turn
            const queued = yield* Workflow.queuedRuns(wf, { sessionId }).pipe(on(b))
            expect(queued.map((run) => [run.runId, run.status])).toEqual([[queuedId, "running"]])
          }).pipe(Effect.scoped),
        30_000
      )
    }
  }
})

describe("SessionStore.findRun", () => {
  it.effect("a run that leaves the queue as it is looked for (its turn came, it ran and ended) is found recorded", () =>
    Effect.gen(function*() {
      const backend = SessionStore.makeMemoryBackend()
      const ids = { runId: "r-race", sessionId: "s-race", workflowName: "busy" }
      yield* backend.enqueueRun({ ...ids, input: "x", owner: "o", leaseExpiresAt: 10_000, enqueuedAt: 0 })
      const ranMeanwhile = Effect.gen(function*() {
        yield* backend.startRun({
          ...ids,
          status: "running",
          input: "x",
          owner: "o",
          leaseExpiresAt: 10_000,
          baseVersion: 0,
          durability: "step",
          startedAt: 1,
          updatedAt: 1
        })
        yield* backend.endRun(ids.runId, {
          ...ids,
          status: "completed",
          input: "x",
          content: "done",
          startedAt: 1,
          completedAt: 2
        })
        yield* backend.leaveQueue(ids.sessionId, ids.runId)
      }).pipe(Effect.orDie)
      // the run was neither unfinished nor recorded at the first read; before the queue is read, it ran and left it
      const racing: SessionStore.Backend = {
        ...backend,
        queuedRuns: (filter) =>
          Effect.zipRight(filter.runId === ids.runId ? ranMeanwhile : Effect.void, backend.queuedRuns(filter))
      }
      const found = yield* SessionStore.findRun(racing, ids.runId)
      expect(found._tag === "Some" && found.value._tag === "Recorded" ? found.value.record.content : found).toBe("done")
      // a run queued and still there is found in the queue, with its place
      yield* backend.enqueueRun({ ...ids, runId: "r-2", input: "y", owner: "o", leaseExpiresAt: 10_000, enqueuedAt: 3 })
      yield* backend.enqueueRun({ ...ids, runId: "r-3", input: "z", owner: "o", leaseExpiresAt: 10_000, enqueuedAt: 4 })
      const third = yield* SessionStore.findRun(backend, "r-3")
      expect(
        third._tag === "Some" && third.value._tag === "Queued"
          ? [third.value.position, third.value.run.enqueuedAt]
          : third
      ).toEqual([1, 4])
      expect((yield* SessionStore.findRun(backend, "nobody"))._tag).toBe("None")
    }))
})
