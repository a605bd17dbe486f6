/**
 * The run lifecycle where two features meet a crash, across real OS
 * processes on one store (a SQLite file, or a PostgreSQL schema). Each case
 * was a second owner of a run deciding from its own read; each is now one
 * transition of `RunLifecycle` (the core README's lifecycle table names it):
 *
 * - a background run with its events stored, killed mid-step and completed
 *   by the supervisor of another process, goes on writing its event log to
 *   one terminal event (the run carries what it was started with);
 * - a session's queue `[A running, B waiting]` whose A's process is killed,
 *   a supervisor in a third process: A is resumed and ends before B runs —
 *   never both at once — and B completes (an abandoned run holds its session);
 * - five processes signal one run waiting twice for the signal: a caller told
 *   `Delivered` had its own signal taken by a wait.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionStore, Workflow } from "@sessionflow/core"
import { Context, Effect, Layer, Option, Schedule, type Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { lifecycleWorkflows, readEffects } from "./store-sqlite/fixtures/lifecycleWorkflows.js"
import { lastJsonLine, spawnFixture, type Worker } from "./store-sqlite/processes.js"
import { storeLayer } from "./stores.js"

/** A fresh effects file, in a folder removed with the scope. */
const effectsFile = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-effects-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => path.join(dir, "effects.jsonl")))

const storeOf = (spec: string) => Effect.map(Layer.build(storeLayer(spec)), Context.get(SessionStore.SessionStore))

/** Waits until `worker` printed `line`. */
const printed = (worker: Worker, line: string) =>
  Effect.repeat(Effect.map(worker.stdout, (out) => out.split("\n").includes(line)), {
    until: (seen) => seen,
    schedule: Schedule.spaced("25 millis")
  }).pipe(
    Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => new Error(`the worker did not print '${line}'`) })
  )

/** Waits until the run has a record, and returns it. */
const recorded = (store: SessionStore.Service, runId: string) =>
  Effect.flatMap(store.getRun(runId), (found) =>
    Option.isSome(found) && found.value._tag === "Recorded"
      ? Effect.succeed(found.value.record)
      : Effect.fail(new Error(`run ${runId} did not end`))).pipe(
      Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("60 seconds")))
    )

const started = (worker: Worker) => Effect.zipRight(worker.ready, worker.start)

export const lifecycleProcessSuite = (name: string, spec: Effect.Effect<string, unknown, Scope.Scope>) =>
  describe(`the run lifecycle where features meet a crash, across OS processes (${name})`, () => {
    it.live(
      "a background run with stored events, killed mid-step and completed by a " +
        "supervisor elsewhere: its log goes on to one terminal event",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const db = yield* spec
          const effects = yield* effectsFile
          const store = yield* storeOf(db)
          const runId = `bg-${crypto.randomUUID()}`
          const supervisor = yield* spawnFixture("lifecycleWorker.ts", [db, effects, "supervise"])
          yield* started(supervisor)
          const starter = yield* spawnFixture("lifecycleWorker.ts", [db, effects, "start", runId, `s-${runId}`])
          yield* started(starter)
          yield* printed(starter, "in-two")
          // killed once the events before it are stored (they are written in batches)
          yield* Effect.repeat(store.readEvents(runId), {
            until: (events) => events.some((event) => event._tag === "StepStarted" && event.stepName === "two"),
            schedule: Schedule.spaced("25 millis")
          })
          yield* starter.kill
          const record = yield* recorded(store, runId)
          assert.strictEqual(record.status, "completed")
          const events = yield* store.readEvents(runId)
          // one sequence, from 0, with no gap
          assert.deepStrictEqual(events.map((event) => event.seq), events.map((_, i) => i))
          const tags = events.map((event) => event._tag)
          assert.strictEqual(tags[0], "RunStarted")
          assert.include(tags, "RunResumed")
          assert.strictEqual(events.filter(SessionStore.isFinalEvent).length, 1)
          assert.strictEqual(tags.at(-1), "RunCompleted")
          const completedSteps = events.flatMap((event) => event._tag === "StepCompleted" ? [event.stepName] : [])
          assert.deepStrictEqual(completedSteps.slice(-2), ["two", "three"])
        })),
      120_000
    )

    it.live(
      "a queue [A running, B waiting] whose A's process is killed, a supervisor " +
        "elsewhere: A is carried on and ends before B starts, and both complete",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const db = yield* spec
          const effects = yield* effectsFile
          const store = yield* storeOf(db)
          const sessionId = `q-${crypto.randomUUID()}`
          const [a, b] = [`a-${sessionId}`, `b-${sessionId}`]
          // it looks every second, as by default: A's queued successor looks sooner
          const supervisor = yield* spawnFixture("lifecycleWorker.ts", [db, effects, "supervise", "1000"])
          yield* started(supervisor)
          const first = yield* spawnFixture("lifecycleWorker.ts", [db, effects, "enqueue", a, sessionId, "3000"])
          const second = yield* spawnFixture("lifecycleWorker.ts", [db, effects, "enqueue", b, sessionId, "1000"])
          yield* started(first)
          yield* printed(first, `turn ${a}`)
          yield* started(second)
          yield* Effect.repeat(store.queuedRuns({ sessionId }), {
            until: (runs) => runs.length === 2,
            schedule: Schedule.spaced("25 millis")
          }).pipe(Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => new Error("B was not queued") }))
          const killedAt = Date.now()
          yield* first.kill
          const told = lastJsonLine(yield* second.exit) as {
            readonly ok: boolean
            readonly value?: string
            readonly error?: string
          }
          assert.deepStrictEqual(told, { ok: true, value: b })
          assert.strictEqual((yield* recorded(store, a)).status, "completed")
          assert.strictEqual((yield* recorded(store, b)).status, "completed")
          // the executions of the two runs' step, each from its start to its end (or its process's kill)
          const lines = readEffects(effects).filter((line) => line.sessionId === sessionId)
          const spans = lines.filter((line) => line.step === "start").map((start) => {
            const end = lines.find((line) =>
              line.step === "end" && line.runId === start.runId && line.pid === start.pid
            )
            return { runId: start.runId!, from: start.at, to: end?.at ?? killedAt }
          })
          for (const x of spans) {
            for (const y of spans) {
              if (x.runId === y.runId) continue
              assert.isTrue(
                x.to <= y.from || y.to <= x.from,
                `${x.runId} and ${y.runId} ran at once: ${JSON.stringify(spans)}`
              )
            }
          }
          // the session's state has each run once, A first
          const session = yield* store.load(sessionId)
          assert.deepStrictEqual(Option.map(session, (s) => s.state), Option.some({ runs: [a, b] }))
        })),
      120_000
    )

    it.live(
      "onBusy reject with a tracked run of the session running in " +
        "another process: refused before any work (SessionBusy)",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const db = yield* spec
          const effects = yield* effectsFile
          const sessionId = `r-${crypto.randomUUID()}`
          const [held, refused] = [`held-${sessionId}`, `refused-${sessionId}`]
          const holder = yield* spawnFixture("lifecycleWorker.ts", [db, effects, "enqueue", held, sessionId, "6000"])
          const rejecting = yield* spawnFixture("lifecycleWorker.ts", [db, effects, "reject", refused, sessionId])
          yield* Effect.all([holder.ready, rejecting.ready], { concurrency: "unbounded" })
          yield* holder.start
          yield* printed(holder, `turn ${held}`)
          yield* rejecting.start
          const told = lastJsonLine(yield* rejecting.exit) as { readonly ok: boolean; readonly error?: string }
          assert.deepStrictEqual(told, { ok: false, error: "SessionBusy" })
          assert.deepStrictEqual(lastJsonLine(yield* holder.exit), { ok: true, value: held })
          // the refused run did none of its work, and left no record
          assert.isFalse(readEffects(effects).some((line) => line.runId === refused))
          const store = yield* storeOf(db)
          assert.isTrue(Option.isNone(yield* store.getRun(refused)))
        })),
      120_000
    )

    it.live(
      "a background run queued behind a busy session whose starter is killed: taken over and run by a " +
        "supervisor elsewhere, never lost",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const db = yield* spec
          const effects = yield* effectsFile
          const store = yield* storeOf(db)
          const sessionId = `d-${crypto.randomUUID()}`
          const [held, queued] = [`held-${sessionId}`, `queued-${sessionId}`]
          const supervisor = yield* spawnFixture("lifecycleWorker.ts", [db, effects, "supervise"])
          const holder = yield* spawnFixture("lifecycleWorker.ts", [db, effects, "enqueue", held, sessionId, "4000"])
          const starter = yield* spawnFixture("lifecycleWorker.ts", [db, effects, "start-enqueue", queued, sessionId])
          yield* Effect.all([supervisor.ready, holder.ready, starter.ready], { concurrency: "unbounded" })
          yield* supervisor.start
          yield* holder.start
          yield* printed(holder, `turn ${held}`)
          yield* starter.start
          yield* printed(starter, "registered")
          yield* starter.kill
          assert.deepStrictEqual(lastJsonLine(yield* holder.exit), { ok: true, value: held })
          // the supervisor took its place over and ran it, after the holder: completed, once
          const record = yield* recorded(store, queued)
          assert.strictEqual(record.status, "completed")
          const ran = readEffects(effects).filter((line) => line.runId === queued && line.step === "start")
          assert.deepStrictEqual(ran.map((line) => line.pid), [supervisor.pid])
          const heldEnd = readEffects(effects).find((line) => line.runId === held && line.step === "end")
          assert.isAtLeast(ran[0]!.at, heldEnd!.at)
          assert.deepStrictEqual(yield* store.queuedRuns({ sessionId }), [])
        })),
      120_000
    )

    it.live(
      "five processes signal one run waiting twice: a caller told Delivered had its own signal taken by a wait",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const db = yield* spec
          const effects = yield* effectsFile
          const store = yield* storeOf(db)
          const { waiter } = lifecycleWorkflows(effects, false)
          const runIds = Array.from({ length: 6 }, (_, i) => `w${i}-${crypto.randomUUID()}`)
          for (const runId of runIds) {
            const paused = yield* Workflow.run(waiter, null, { runId, sessionId: `ws-${runId}` }).pipe(
              Effect.flip,
              Effect.provideService(SessionStore.SessionStore, store)
            )
            assert.strictEqual(paused._tag, "RunPaused")
          }
          const at = Date.now() + 8000
          const senders = yield* Effect.forEach(
            ["p0", "p1", "p2", "p3", "p4"],
            (token) => spawnFixture("lifecycleWorker.ts", [db, effects, "signal", String(at), token, ...runIds])
          )
          yield* Effect.forEach(senders, started, { concurrency: "unbounded" })
          const told = yield* Effect.forEach(
            senders,
            (sender) =>
              Effect.map(sender.exit, (out) =>
                lastJsonLine(out) as ReadonlyArray<
                  { readonly ok: boolean; readonly value?: { readonly _tag: string } }
                >),
            { concurrency: "unbounded" }
          )
          const effected = readEffects(effects)
          for (const [i, runId] of runIds.entries()) {
            assert.strictEqual((yield* recorded(store, runId)).status, "completed")
            const took = effected.filter((line) => line.step === "took" && line.runId === runId).map((line) =>
              line.token
            )
            assert.strictEqual(took.length, 2, `run ${runId} took ${JSON.stringify(took)}`)
            told.forEach((calls, sender) => {
              const call = calls[i]!
              if (call.ok && call.value?._tag === "Delivered") {
                assert.include(
                  took,
                  `p${sender}`,
                  `p${sender} was told Delivered for run ${runId}, whose waits took ${JSON.stringify(took)}`
                )
              }
            })
          }
        })),
      180_000
    )
  })
