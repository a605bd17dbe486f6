/**
 * `DurableRuns.layer`: the supervisor that resumes abandoned runs, on the
 * memory store and on a SQLite file. An abandoned run is an unfinished-run
 * entry of an owner that no longer renews its lease; "processes" are stores
 * over one backend (or one file), each with its own owner; one whose owner
 * names a process of this host that exited is resumed without waiting for
 * its lease.
 */
import { describe, expect, it } from "@effect/vitest"
import { DurableRuns, SessionState, SessionStore, Workflow, WorkflowError } from "@sessionflow/core"
import { Effect, Option, Ref, Schema, TestClock } from "effect"
import { spawnSync } from "node:child_process"
import { flush, memoryProcesses, recorded, sqliteProcesses } from "./storeProcesses.js"
import { on } from "./utils.js"

class Items extends SessionState.Tag("supervised/Items")<Items>()({ items: Schema.Array(Schema.String) }) {}

/** A two-step workflow whose steps count their side effects. */
const counting = (counts: Ref.Ref<ReadonlyArray<string>>, name = "supervised") =>
  Workflow.make({ name, state: Items, sessionState: { items: [] }, input: Schema.String }).pipe(
    Workflow.andThen("step-1", () => Effect.zipRight(Ref.update(counts, (c) => [...c, "step-1"]), Effect.succeed(1))),
    Workflow.andThen("step-2", () =>
      Effect.gen(function*() {
        yield* Ref.update(counts, (c) => [...c, "step-2"])
        yield* Items.update((s) => ({ items: [...s.items, "done"] }))
        return 2
      }))
  )

type Store = SessionStore.Service

const currentTime = Effect.clockWith((clock) => clock.currentTimeMillis)

/** An unfinished-run entry of a process that died: its lease runs out in 2 seconds (or `leaseMillis`). */
const orphan = (store: Store, runId: string, options?: {
  readonly workflowName?: string
  readonly status?: "running" | "paused"
  readonly shape?: SessionStore.WorkflowShape
  readonly owner?: string
  readonly leaseMillis?: number
}) =>
  Effect.flatMap(currentTime, (now) =>
    store.startRun({
      runId,
      sessionId: `session-${runId}`,
      workflowName: options?.workflowName ?? "supervised",
      status: options?.status ?? "running",
      input: "go",
      owner: options?.status === "paused" ? "" : options?.owner ?? "a-process-that-died",
      leaseExpiresAt: options?.status === "paused" ? 0 : now + (options?.leaseMillis ?? 2000),
      baseVersion: 0,
      initialState: { items: [] },
      durability: "step",
      ...(options?.shape === undefined ? {} : { shape: options.shape }),
      startedAt: now,
      updatedAt: now
    }))

const supervised = (store: Store, options: DurableRuns.Options<Workflow.Any>) =>
  Effect.forkScoped(DurableRuns.supervise(options).pipe(on(store)))

for (const [name, makeProcesses] of [["memory", memoryProcesses], ["sqlite", sqliteProcesses]] as const) {
  describe(`DurableRuns.layer (${name})`, () => {
    it.scoped("two supervisors resume an abandoned run exactly once, after its lease expires", () =>
      Effect.gen(function*() {
        const make = yield* makeProcesses
        const [a, b, c] = [yield* make(), yield* make(), yield* make()]
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const wf = counting(counts)
        yield* orphan(a, "r1")
        yield* supervised(b, { workflows: [wf] })
        yield* supervised(c, { workflows: [wf] })
        yield* flush
        // its lease holds: nobody takes it
        yield* TestClock.adjust("1 second")
        yield* flush
        expect(yield* Ref.get(counts)).toEqual([])
        const record = yield* recorded(b, "r1", "500 millis")
        expect(record).toMatchObject({ status: "completed", runId: "r1" })
        yield* TestClock.adjust("10 seconds")
        yield* flush
        expect(yield* Ref.get(counts)).toEqual(["step-1", "step-2"])
        expect((yield* Workflow.getSessionState(wf, "session-r1").pipe(on(c))).items).toEqual(["done"])
      }))

    it.scoped(
      "a run whose owner is a process of this host that exited is " +
        "resumed once at the supervisors' next look, its lease still held",
      () =>
        Effect.gen(function*() {
          const make = yield* makeProcesses
          const [a, b, c] = [yield* make(), yield* make(), yield* make()]
          const counts = yield* Ref.make<ReadonlyArray<string>>([])
          const wf = counting(counts)
          // the owner id of a process of this host that ran and exited
          const pid = Number(
            spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" })
              .stdout
          )
          const dead = a.owner.replace(/:\d+:/, `:${pid}:`)
          expect(SessionStore.ownerGone(dead)).toBe(true)
          const now = yield* currentTime
          yield* orphan(a, "gone", { owner: dead, leaseMillis: 60_000 })
          yield* supervised(b, { workflows: [wf] })
          yield* supervised(c, { workflows: [wf] })
          // well within the lease
          const record = yield* recorded(b, "gone", "100 millis", 20)
          expect(record).toMatchObject({ status: "completed", runId: "gone" })
          expect(yield* currentTime).toBeLessThan(now + 60_000)
          yield* TestClock.adjust("2 seconds")
          yield* flush
          expect(yield* Ref.get(counts)).toEqual(["step-1", "step-2"])
          expect((yield* Workflow.getSessionState(wf, "session-gone").pipe(on(c))).items).toEqual(["done"])
        })
    )

    it.scoped("a run whose resume keeps failing is ended as abandoned after maxAttempts, with the reason", () =>
      Effect.gen(function*() {
        const make = yield* makeProcesses
        const [a, b] = [yield* make(), yield* make()]
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const wf = counting(counts)
        yield* orphan(a, "r2")
        // a process whose store refuses every claim: each resume fails, the run stays unfinished
        const refusing: Store = {
          ...b,
          claimRun: () =>
            Effect.fail(
              new WorkflowError.SessionStoreError({ method: "claimRun", description: "the database refuses writes" })
            )
        }
        yield* supervised(refusing, { workflows: [wf], maxAttempts: 2, pollInterval: "1 second" })
        const record = yield* recorded(b, "r2", "1 second")
        expect(record.status).toBe("abandoned")
        expect(record.error).toMatch(/^abandoned: resuming it failed 2 times; last: SessionStoreError: /)
        expect(yield* Ref.get(counts)).toEqual([])
        expect(yield* Workflow.unfinishedRuns(wf).pipe(on(b))).toEqual([])
      }))

    it.scoped("a run started by another shape of its workflow is left alone, never abandoned (a rolling deploy)", () =>
      Effect.gen(function*() {
        const make = yield* makeProcesses
        const [a, b] = [yield* make(), yield* make()]
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const wf = counting(counts)
        // started by a workflow of another shape: every resume here is WorkflowChanged
        yield* orphan(a, "r3", { shape: { fingerprint: "another-shape", steps: ["elsewhere step"] } })
        yield* supervised(b, { workflows: [wf], maxAttempts: 1, pollInterval: "1 second" })
        for (let i = 0; i < 10; i++) {
          yield* TestClock.adjust("1 second")
          yield* flush
        }
        expect(yield* b.getRun("r3")).toMatchObject(
          Option.some({ _tag: "Active", run: { runId: "r3", status: "running" } })
        )
        expect(yield* Ref.get(counts)).toEqual([])
      }))

    it.scoped("paused runs and runs of workflows it does not know are left alone", () =>
      Effect.gen(function*() {
        const make = yield* makeProcesses
        const [a, b] = [yield* make(), yield* make()]
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const wf = counting(counts)
        yield* orphan(a, "paused", { status: "paused" })
        yield* orphan(a, "other", { workflowName: "not-supervised" })
        yield* orphan(a, "mine")
        yield* supervised(b, { workflows: [wf], maxAttempts: 1 })
        expect(yield* recorded(b, "mine", "1 second")).toMatchObject({ status: "completed" })
        for (let i = 0; i < 10; i++) {
          yield* TestClock.adjust("1 second")
          yield* flush
        }
        const left = yield* b.activeRuns({})
        expect(left.map((run) => [run.runId, run.status, run.owner]).sort()).toEqual([
          ["other", "running", "a-process-that-died"],
          ["paused", "paused", ""]
        ])
        expect(yield* Ref.get(counts)).toEqual(["step-1", "step-2"])
      }))
  })
}
