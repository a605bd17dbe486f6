/**
 * Durable runs across real OS processes on one store (a SQLite file, or a
 * PostgreSQL schema: `location`): a worker killed
 * with SIGKILL after step 2 of 4 is resumed by a new process (steps 1–2 ran
 * once, 3–4 once after the resume, the state committed once); a killed
 * worker's run (a 60-second lease) carried on before its lease expired by a
 * retry with its id from another process of the host, in process and through
 * the HTTP server; two processes taking over one dead run (one wins, the other
 * is told who has it); a run paused in one process and continued in another;
 * and two processes running `DurableRuns.layer`: the run of a killed worker
 * is resumed by one of them, on its own, before its lease expires; and a run
 * blocked in a step in one process, cancelled from another (this test's): it
 * stops within one lease renewal.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { Effect, Schema, type Scope } from "effect"
import * as fs from "node:fs"
import { lastJsonLine, processExists, spawnFixture } from "./store-sqlite/processes.js"
import { storeLayer } from "./stores.js"

/** Where a test's processes keep their sessions (a store spec, see `stores.ts`) and their side-effect file. */
export interface Location {
  readonly store: string
  readonly effects: string
}

const waitFor = (read: Effect.Effect<boolean>, what: string) =>
  Effect.repeat(Effect.zipLeft(read, Effect.sleep("50 millis")), { until: (done) => done }).pipe(
    Effect.asVoid,
    Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error(`timed out waiting for ${what}`) })
  )

const lines = (
  file: string
) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter((l) => l.length > 0) : [])

/** The committed items of the durable session, read in this process. */
const committed = (store: string) =>
  Workflow.getSessionState(
    Workflow.make({ name: "durable", sessionState: {} }),
    "durable"
  ).pipe(
    Effect.map((state) => Schema.decodeUnknownSync(Schema.Struct({ items: Schema.Array(Schema.String) }))(state).items),
    Effect.provide(storeLayer(store))
  )

class Items extends SessionState.Tag("test/DurableProcessItems")<Items>()({ items: Schema.Array(Schema.String) }) {}

/**
 * The workflow of `durableWorker.ts` (the same steps, so the
 * same shape), in this process: each step appends to `effects`.
 */
const durableIn = (effects: string) =>
  Workflow.make({
    name: "durable",
    state: Items,
    sessionState: { items: [] },
    durability: "step",
    steps: [1, 2, 3, 4].map((n) =>
      Step.make(`step-${n}`, () =>
        Effect.gen(function*() {
          fs.appendFileSync(effects, `step-${n}\n`)
          yield* Items.update((s) => ({ items: [...s.items, String(n)] }))
          return n
        }))
    )
  })

/**
 * Kills the worker running `r1` after its step 2; the run's unfinished entry as the worker left it (its last lease).
 */
const killAfterStep2 = (filename: string, effects: string, lease?: string) =>
  Effect.gen(function*() {
    const worker = yield* spawnFixture("durableWorker.ts", [
      filename,
      effects,
      "run",
      "r1",
      "stall",
      ...(lease === undefined ? [] : [lease])
    ])
    yield* waitFor(Effect.map(worker.stdout, (out) => out.includes("step-2\n")), "step 2")
    // read while it lives (a supervisor may take the run as soon as it is dead)
    const [entry] = yield* Workflow.unfinishedRuns(durableIn(effects)).pipe(Effect.provide(storeLayer(filename)))
    yield* worker.kill
    assert.isFalse(processExists(worker.pid))
    assert.deepStrictEqual(lines(effects), ["step-1", "step-2"])
    assert.isDefined(entry)
    return entry!
  })

export const durableProcessSuite = (name: string, location: Effect.Effect<Location, unknown, Scope.Scope>) =>
  describe(`durable runs across OS processes (${name})`, () => {
    it.live(
      "a worker killed after step 2 of 4 is resumed by a new process: every step ran once, the state committed once",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const { effects, store: filename } = yield* location
          yield* killAfterStep2(filename, effects)
          // nothing of the session was committed by the dead run
          const before = yield* Effect.either(committed(filename))
          assert.isTrue(before._tag === "Left" && before.left._tag === "SessionNotFound")
          const resumer = yield* spawnFixture("durableWorker.ts", [filename, effects, "resume", "r1"])
          const result = lastJsonLine(yield* resumer.exit) as { won: boolean; content: number }
          assert.deepStrictEqual(result, { won: true, content: 4 })
          assert.deepStrictEqual(lines(effects), ["step-1", "step-2", "step-3", "step-4"])
          assert.deepStrictEqual(yield* committed(filename), ["1", "2", "3", "4"])
        })),
      90_000
    )

    it.live(
      "a crashed run's id is carried on by a retry from another process of the " +
        "host before its 60-second lease expires: each step once, then replayed",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const { effects, store: filename } = yield* location
          const dead = yield* killAfterStep2(filename, effects, "60 seconds")
          const workflow = durableIn(effects)
          const [after] = yield* Workflow.unfinishedRuns(workflow).pipe(Effect.provide(storeLayer(filename)))
          // its owner is a process of this host that no longer exists: the run is abandoned, lease or not
          assert.isTrue(SessionStore.ownerGone(dead.owner), dead.owner)
          assert.strictEqual(after?.owner, dead.owner)
          assert.isTrue(after?.abandoned)
          const again = Workflow.run(workflow, "go", { sessionId: "durable", runId: "r1" }).pipe(
            Effect.provide(storeLayer(filename))
          )
          // steps 1-2 come from the journal
          const done = yield* again
          assert.isBelow(Date.now(), dead.leaseExpiresAt)
          assert.deepStrictEqual([done.runId, done.content, done.state.items], ["r1", 4, ["1", "2", "3", "4"]])
          assert.deepStrictEqual(lines(effects), ["step-1", "step-2", "step-3", "step-4"])
          // and once more: the completed run is replayed, nothing runs
          assert.strictEqual((yield* again).content, 4)
          assert.deepStrictEqual(lines(effects), ["step-1", "step-2", "step-3", "step-4"])
          assert.deepStrictEqual(yield* committed(filename), ["1", "2", "3", "4"])
        })),
      90_000
    )

    it.live(
      "a crashed run's id is carried on by a retry through the HTTP " +
        "server of another process before its 60-second lease expires",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const { effects, store: filename } = yield* location
          const dead = yield* killAfterStep2(filename, effects, "60 seconds")
          const server = yield* spawnFixture("durableWorker.ts", [filename, effects, "serve", "-"])
          yield* server.ready
          const port = /port (\d+)/.exec(yield* server.stdout)?.[1]
          assert.isDefined(port)
          const retry = Effect.promise(async () => {
            const response = await fetch(`http://127.0.0.1:${port}/workflows/durable/runs`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ input: "go", sessionId: "durable", runId: "r1" })
            })
            return {
              status: response.status,
              body: await response.json() as { runId?: string; status?: string; content?: unknown }
            }
          })
          const done = yield* retry
          assert.isBelow(Date.now(), dead.leaseExpiresAt)
          assert.strictEqual(done.status, 200, JSON.stringify(done.body))
          assert.deepStrictEqual([done.body.runId, done.body.status, done.body.content], ["r1", "completed", 4])
          assert.deepStrictEqual(lines(effects), ["step-1", "step-2", "step-3", "step-4"])
          assert.deepStrictEqual(yield* committed(filename), ["1", "2", "3", "4"])
          // the same retry again: the recorded result, nothing runs
          const replayed = yield* retry
          assert.deepStrictEqual([replayed.status, replayed.body.content], [200, 4])
          assert.deepStrictEqual(lines(effects), ["step-1", "step-2", "step-3", "step-4"])
        })),
      90_000
    )

    it.live(
      "two processes taking over one dead run at once (60-second lease): " +
        "exactly one wins, the other is told, the steps after the journal run once",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const { effects, store: filename } = yield* location
          const dead = yield* killAfterStep2(filename, effects, "60 seconds")
          const resumers = yield* Effect.forEach(["a", "b"], () =>
            spawnFixture("durableWorker.ts", [filename, effects, "resume", "r1"]))
          const results = (yield* Effect.forEach(resumers, (r) =>
            r.exit, { concurrency: "unbounded" })).map(lastJsonLine) as Array<
              { won: boolean; error?: string }
            >
          assert.strictEqual(
            results.filter((r) =>
              r.won
            ).length,
            1,
            JSON.stringify(results)
          )
          const loser = results.find((r) => !r.won)!
          // it lost the claim (RunInProgress, naming the winner), or found the run completed by the winner
          assert.include(["RunInProgress", "RunEnded"], loser.error)
          assert.isBelow(Date.now(), dead.leaseExpiresAt)
          assert.deepStrictEqual(lines(effects), ["step-1", "step-2", "step-3", "step-4"])
          assert.deepStrictEqual(yield* committed(filename), ["1", "2", "3", "4"])
        })),
      90_000
    )

    it.live(
      "a worker killed mid-run is resumed by one of two supervising processes " +
        "of the host before its 60-second lease expires, every step once",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const { effects, store: filename } = yield* location
          // two live processes supervise the store
          const supervisors = yield* Effect.forEach(["b", "c"], () =>
            spawnFixture("durableWorker.ts", [filename, effects, "supervise", "-"]))
          yield* Effect.forEach(supervisors, (s) =>
            s.ready)
          // the dead run's lease as it last renewed it
          const dead = yield* killAfterStep2(filename, effects, "60 seconds")
          yield* waitFor(Effect.sync(() => lines(effects).length === 4), "the resumed run")
          // one of them resumed it: steps 3 and 4 ran there, once
          const outputs = yield* Effect.forEach(supervisors, (s) => s.stdout)
          const resumedAt = outputs.flatMap((out) =>
            out.split("\n").filter((l) => l.startsWith("at-3 ")).map((l) => Number(l.slice(5)))
          )
          assert.strictEqual(resumedAt.length, 1, JSON.stringify(outputs))
          // its process is gone: taken over without waiting for the lease
          assert.isBelow(resumedAt[0]!, dead.leaseExpiresAt)
          yield* waitFor(
            Effect.map(Effect.either(committed(filename)), (c) => c._tag === "Right" && c.right.length === 4),
            "the commit"
          )
          assert.deepStrictEqual(lines(effects), ["step-1", "step-2", "step-3", "step-4"])
          assert.deepStrictEqual(yield* committed(filename), ["1", "2", "3", "4"])
          // nothing is left unfinished, and the supervisors do not run it again
          yield* Effect.sleep("3 seconds")
          assert.deepStrictEqual(lines(effects), ["step-1", "step-2", "step-3", "step-4"])
          assert.deepStrictEqual(
            yield* Workflow.unfinishedRuns(durableIn(effects)).pipe(Effect.provide(storeLayer(filename))),
            []
          )
        })),
      90_000
    )

    it.live(
      "a run blocked in a step in one process is cancelled from another: it ends cancelled " +
        "within one lease renewal, nothing committed, the step's later effects never happen",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const { effects, store: filename } = yield* location
          const workflow = durableIn(effects)
          // renewed every 500 ms
          const worker = yield* spawnFixture("durableWorker.ts", [filename, effects, "block", "r1", "-", "1500 millis"])
          yield* waitFor(Effect.map(worker.stdout, (out) => out.includes("step-3-start\n")), "step 3")
          const cancelledAt = Date.now()
          yield* Workflow.cancel(workflow, "r1").pipe(Effect.provide(storeLayer(filename)))
          const ended = yield* waitFor(Effect.map(worker.stdout, (out) => out.includes("\"at\"")), "the run's end")
            .pipe(
              Effect.zipRight(worker.stdout),
              Effect.map((out) =>
                JSON.parse(out.trim().split("\n").find((l) => l.includes("\"at\""))!) as {
                  error?: string
                  status?: string
                  at: number
                }
              )
            )
          // its caller was told it was cancelled, within one renewal (and a little)
          assert.deepStrictEqual([ended.error, ended.status], ["RunEnded", "cancelled"])
          console.log(`cancel (${name}): the run stopped ${ended.at - cancelledAt} ms after the cancel`)
          assert.isAtMost(ended.at - cancelledAt, 1000)
          // the worker stays alive past the step's 3 seconds: its late effect never happens
          yield* worker.exit
          assert.deepStrictEqual(lines(effects), ["step-1", "step-2"])
          const status = yield* Workflow.getRunStatus(workflow, "r1").pipe(Effect.provide(storeLayer(filename)))
          assert.strictEqual(status._tag, "Cancelled")
          // the cancel created the session to hold the record: nothing of the run is in it
          assert.deepStrictEqual(yield* committed(filename), [])
          assert.deepStrictEqual(
            yield* Workflow.unfinishedRuns(workflow).pipe(Effect.provide(storeLayer(filename))),
            []
          )
        })),
      90_000
    )

    it.live("a run paused in one process is continued in another", () =>
      Effect.scoped(Effect.gen(function*() {
        const { effects, store: filename } = yield* location
        const pausing = yield* spawnFixture("durableWorker.ts", [filename, effects, "pause", "-"])
        const paused = lastJsonLine(yield* pausing.exit) as { runId: string; payload: unknown }
        assert.deepStrictEqual(paused.payload, { amount: 250 })
        const continuing = yield* spawnFixture("durableWorker.ts", [filename, effects, "continue", paused.runId])
        const done = lastJsonLine(yield* continuing.exit)
        assert.deepStrictEqual(done, { content: true, items: ["1", "approved"] })
        // step 1 ran once, before the pause
        assert.deepStrictEqual(lines(effects), ["step-1"])
      })), 90_000)

    it.live(
      "a continue whose process died mid-step (60-second lease) is carried on by one of two racing " +
        "retries of it before its lease: the dead process's answer is the one the run goes on with",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const { effects, store: filename } = yield* location
          const pausing = yield* spawnFixture("durableWorker.ts", [filename, effects, "pause", "-"])
          const paused = lastJsonLine(yield* pausing.exit) as { runId: string }
          // approves, then dies in the answered step
          const dying = yield* spawnFixture("durableWorker.ts", [
            filename,
            effects,
            "continue",
            paused.runId,
            "stall",
            "60 seconds"
          ])
          yield* waitFor(Effect.map(dying.stdout, (out) => out.includes("answered\n")), "the answered step")
          yield* dying.kill
          const killedAt = Date.now()
          assert.isFalse(processExists(dying.pid))
          // two retries of the continue, each answering "rejected"
          const retries = yield* Effect.forEach(
            ["a", "b"],
            () =>
              spawnFixture("durableWorker.ts", [filename, effects, "continue", paused.runId, "reject", "60 seconds"])
          )
          const results = (yield* Effect.forEach(retries, (r) => r.exit, { concurrency: "unbounded" })).map(
            lastJsonLine
          ) as Array<
            { content?: boolean; items?: ReadonlyArray<string>; error?: string }
          >
          const won = results.filter((r) => r.error === undefined)
          assert.strictEqual(won.length, 1, JSON.stringify(results))
          // the recorded answer (approved) wins over the retry's
          assert.deepStrictEqual(won[0], { content: true, items: ["1", "approved"] })
          // the loser lost the claim, or found the run completed (or no longer at its pause)
          assert.include(
            ["RunInProgress", "RunEnded", "RunNotFound"],
            results.find((r) => r.error !== undefined)!.error
          )
          assert.isBelow(Date.now(), killedAt + 50_000)
          assert.deepStrictEqual(lines(effects), ["step-1", "answer-true", "answer-true"])
        })),
      90_000
    )
  })
