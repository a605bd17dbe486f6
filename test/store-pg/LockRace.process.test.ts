/**
 * One lock order, reproduced rather than argued: real OS processes started at
 * once race cancels, continues (and the commits that end them), resumes,
 * recovery and commits outside any run on the same runs and sessions of one
 * PostgreSQL schema, round after round. No PostgreSQL deadlock (40P01) or
 * other store error ever reaches a caller, each run has exactly one recorded
 * outcome that agrees with what its callers were told, and a run that ended
 * cancelled (or failed) never runs again.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionStore, Workflow, WorkflowError } from "@sessionflow/core"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { RaceRound, RaceRun } from "../store-sqlite/fixtures/lockRaceWorker.js"
import { resumable, twoQuestions } from "../store-sqlite/fixtures/questions.js"
import { lastJsonLine, spawnFixture } from "../store-sqlite/processes.js"
import { storeLayer } from "../stores.js"
import { freshSchema } from "./pg.js"

const rounds = 12
const perKind = 6
const roles = ["cancel", "continue", "recover", "update", "cancel", "continue"] as const

/**
 * What each role may be told, by the kind of run: anything else (a store error, a deadlock, a defect) fails the test.
 */
const allowed: Record<(typeof roles)[number], Record<RaceRun["kind"], ReadonlyArray<string>>> = {
  cancel: { paused: ["Cancelled", "RunEnded"], crashed: ["Cancelled", "RunEnded"] },
  continue: {
    // a paused run is no longer paused once a continue takes it: a commit outside any run may then
    // land first, and the run's own commit ends with the conflict (as a crashed run's does)
    paused: ["Success", "RunLost", "RunEnded", "RunInProgress", "PauseMismatch", "SessionConflict"],
    crashed: ["Success", "RunLost", "RunEnded", "RunInProgress", "SessionConflict"]
  },
  recover: {
    paused: ["NotTaken"],
    crashed: ["Success", "NotTaken", "RunLost", "RunEnded", "RunInProgress", "SessionConflict"]
  },
  // a session's first run creates it (a cancel too): before that, there is nothing to update
  update: {
    paused: ["Updated", "SessionPaused", "SessionConflict", "SessionNotFound"],
    crashed: ["Updated", "SessionConflict", "SessionNotFound"]
  }
}

/**
 * The rounds' runs: paused ones, and running ones of a process that died (lease expired); half on sessions that exist.
 */
const makeRounds = Effect.gen(function*() {
  const store = yield* SessionStore.SessionStore
  const made: Array<RaceRound> = []
  for (let r = 0; r < rounds; r++) {
    const workflow = `crashed-${r}`
    const runs: Array<RaceRun> = []
    for (let i = 0; i < perKind; i++) {
      const sessionId = `r${r}-p${i}`
      if (i % 2 === 1) {
        yield* store.commit({ sessionId, workflowName: twoQuestions.name, expectedVersion: 0, state: { items: [] } })
      }
      const paused = yield* Effect.flip(Workflow.run(twoQuestions, "go", { sessionId }))
      assert.instanceOf(paused, WorkflowError.RunPaused)
      runs.push({ runId: paused.runId, sessionId, kind: "paused", key: paused.key })
    }
    for (let i = 0; i < perKind; i++) {
      const sessionId = `r${r}-c${i}`
      const runId = `crashed-${r}-${i}`
      const seeded = i % 2 === 1
      if (seeded) yield* store.commit({ sessionId, workflowName: workflow, expectedVersion: 0, state: { items: [] } })
      const now = Date.now()
      yield* store.startRun({
        runId,
        sessionId,
        workflowName: workflow,
        status: "running",
        input: "go",
        owner: "a-process-that-died",
        leaseExpiresAt: now - 1,
        baseVersion: seeded ? 1 : 0,
        initialState: { items: [] },
        durability: "step",
        startedAt: now,
        updatedAt: now
      })
      runs.push({ runId, sessionId, kind: "crashed", key: "" })
    }
    made.push({ workflow, runs })
  }
  return made
})

describe("one lock order across OS processes (PostgreSQL)", () => {
  it.live(
    "cancels, continues, resumes, recovery and commits racing on the same runs and sessions never " +
      "deadlock; each run has one outcome, told to its callers, and a cancelled run never runs again",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const schema = yield* freshSchema
        const spec = `pg:${schema}`
        const layer = storeLayer(spec)
        const made = yield* makeRounds.pipe(Effect.provide(layer))
        const dir = yield* Effect.acquireRelease(
          Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-lockrace-"))),
          (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
        )
        const roundsFile = path.join(dir, "rounds.json")
        const barrier = path.join(dir, "barrier")
        fs.mkdirSync(barrier)
        fs.writeFileSync(roundsFile, JSON.stringify(made))
        const spawned = yield* Effect.forEach(roles, (role, w) =>
          spawnFixture("lockRaceWorker.ts", [spec, roundsFile, barrier, role, String(roles.length), String(w)]))
        yield* Effect.forEach(spawned, (worker) =>
          worker.ready, { concurrency: "unbounded" })
        yield* Effect.forEach(spawned, (worker) =>
          worker.start)
        const outcomes = (yield* Effect.forEach(spawned, (worker) => worker.exit, { concurrency: "unbounded" })).map(
          lastJsonLine
        ) as Array<
          Record<string, string>
        >
        // no caller of any role was ever told of a deadlock (or any store error)
        const everything = JSON.stringify(outcomes)
        assert.notMatch(everything, /40P01|deadlock/i)
        assert.notInclude(everything, "SessionStoreError")

        const stored = yield* Effect.forEach(made, (round) =>
          Effect.gen(function*() {
            const crashed = resumable(round.workflow)
            const unfinished = [
              ...(yield* Workflow.unfinishedRuns(twoQuestions)),
              ...(yield* Workflow.unfinishedRuns(crashed))
            ]
            const runs = yield* Effect.forEach(round.runs, (run) =>
              Effect.gen(function*() {
                const workflow = run.kind === "paused" ? twoQuestions : crashed
                const history = yield* Workflow.getRunHistory(workflow, run.sessionId)
                const state = yield* Workflow.getSessionState(workflow, run.sessionId).pipe(
                  Effect.catchTag("SessionNotFound", () => Effect.succeed({ items: [] as ReadonlyArray<string> }))
                )
                return { records: history.filter((r) => r.runId === run.runId).map((r) => r.status), state }
              }))
            return { unfinished: unfinished.map((r) => r.runId), runs }
          })).pipe(Effect.provide(layer))

        let ended = { cancelled: 0, completed: 0, error: 0 }
        for (const [r, round] of made.entries()) {
          assert.deepStrictEqual(stored[r]!.unfinished, [], `round ${r}: runs left unfinished`)
          for (const [i, run] of round.runs.entries()) {
            const told = roles.map((role, w) => [role, outcomes[w]![run.runId]!] as const)
            const { records, state } = stored[r]!.runs[i]!
            const context = JSON.stringify({ run, told, records, state })
            for (const [role, outcome] of told) assert.include(allowed[role][run.kind], outcome, context)
            const count = (outcome: string) => told.filter(([, o]) => o === outcome).length
            // exactly one record, and what the callers were told agrees with it
            assert.strictEqual(records.length, 1, context)
            const status = records[0]!
            if (status === "cancelled") {
              assert.deepStrictEqual([count("Cancelled"), count("Success")], [1, 0], context)
            } else if (status === "completed") {
              assert.deepStrictEqual([count("Cancelled"), count("Success")], [0, 1], context)
            } else {
              // a run carried on (a crashed one resumed or recovered, a paused one continued) whose commit
              // lost to a commit outside any run: ended with the conflict, the update's state kept
              assert.deepStrictEqual([
                status,
                count("Cancelled"),
                count("Success"),
                count("SessionConflict"),
                count("Updated")
              ], [
                "error",
                0,
                0,
                1,
                1
              ], context)
            }
            ended = { ...ended, [status]: ended[status as keyof typeof ended] + 1 }
            // the state holds the run's work only when the run completed
            const work = run.kind === "paused" ? ["first:true", "second:true"] : ["resumed"]
            assert.deepStrictEqual(
              state.items.filter((item) => work.includes(item)),
              status === "completed" ? work : [],
              context
            )
          }
        }
        // the races went more than one way
        assert.isAbove(ended.cancelled, 0, JSON.stringify(ended))
        assert.isAbove(ended.completed, 0, JSON.stringify(ended))

        // a run that ended cancelled or failed never runs again: by id, resumed, or recovered
        yield* Effect.gen(function*() {
          for (const [r, round] of made.entries()) {
            const crashed = resumable(round.workflow)
            assert.deepStrictEqual(yield* Workflow.recover(crashed), [])
            for (const [i, run] of round.runs.entries()) {
              if (stored[r]!.runs[i]!.records[0] === "completed") continue
              const workflow = run.kind === "paused" ? twoQuestions : crashed
              const again = yield* Effect.flip(
                Workflow.run(workflow, "go", { sessionId: run.sessionId, runId: run.runId })
              )
              assert.instanceOf(again, WorkflowError.RunEnded, String(again))
              assert.instanceOf(yield* Effect.flip(Workflow.resume(workflow, run.runId)), WorkflowError.RunEnded)
              const state = yield* Workflow.getSessionState(workflow, run.sessionId).pipe(
                Effect.catchTag("SessionNotFound", () => Effect.succeed({ items: [] as ReadonlyArray<string> }))
              )
              assert.deepStrictEqual(state, stored[r]!.runs[i]!.state)
            }
          }
        }).pipe(Effect.provide(layer))
      })),
    600_000
  )
})
