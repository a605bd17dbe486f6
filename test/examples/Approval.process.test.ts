/**
 * The approval example across processes: a run paused by `npm start -- run
 * approval` is continued by another process.
 */
import { describe, expect, it } from "@effect/vitest"
import { Workflow, WorkflowEvent } from "@sessionflow/core"
import { Approval, Cli } from "@sessionflow/examples"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, Schema } from "effect"
import { exec } from "../process.js"
import { captured, cli, tempDb } from "./utils.js"

const { expenseWorkflow } = Approval
const decodeEvent = Schema.decodeUnknownSync(WorkflowEvent.WorkflowEvent)

/** The events of a `--json` run: every stdout line is one. */
const jsonEvents = (stdout: string) => stdout.trim().split("\n").map((line) => decodeEvent(JSON.parse(line)))

/** The session state the runs of a SQLite file committed. */
const stateIn = (db: string, sessionId: string) =>
  Workflow.getSessionState(expenseWorkflow, sessionId).pipe(Effect.provide(SqliteSessionStore.layer({ filename: db })))

describe("Approval across processes", () => {
  it.scoped(
    "across processes: run --json ends with RunPaused (exit 0); " +
      "runs continue --approve in another ends with RunCompleted",
    () =>
      Effect.gen(function*() {
        const db = yield* tempDb()
        // exactly the documented command lines, through npm start
        const first = yield* exec("npm", ["--silent", "start", "--", "run", "approval", "--json", "--db", db], {
          env: { OPENAI_API_KEY: undefined }
        })
        expect(first.code, first.stderr).toBe(0)
        const paused = jsonEvents(first.stdout)
        const last = paused.at(-1)!
        expect(last._tag).toBe("RunPaused")
        const key = last._tag === "RunPaused" ? last.key : ""
        expect(
          paused.filter((e) => e._tag === "ToolCallCompleted").map((e) => e._tag === "ToolCallCompleted" && e.result)
        ).toEqual([
          "Recorded 'taxi to the airport': 35 EUR (total 35 EUR)."
        ])
        // the hint goes to stderr, so stdout stays JSON
        expect(first.stderr).toContain(`npm start -- runs continue ${last.runId} --pause '${key}' --approve --db ${db}`)

        const listed = yield* captured(Cli.run(["runs", "list", "--db", db]))
        expect(listed.stdout).toContain(`⏸ paused    run ${last.runId}`)
        expect(listed.stdout).toContain(`"tool":"record_expense"`)

        const second = yield* exec("npm", [
          "--silent",
          "start",
          "--",
          "runs",
          "continue",
          last.runId,
          "--pause",
          key,
          "--approve",
          "--json",
          "--db",
          db
        ], {
          env: { OPENAI_API_KEY: undefined }
        })
        expect(second.code, second.stderr).toBe(0)
        const done = jsonEvents(second.stdout)
        expect(done[0]).toMatchObject({ _tag: "RunResumed", runId: last.runId, reason: "continued" })
        expect(done.at(-1)).toMatchObject({ _tag: "RunCompleted", runId: last.runId })
        // the taxi was not recorded again: one tool call completes, the dinner's
        expect(done.filter((e) => e._tag === "ToolCallStarted")).toEqual([])
        expect(
          done.filter((e) => e._tag === "ToolCallCompleted").map((e) => e._tag === "ToolCallCompleted" && e.result)
        )
          .toEqual([
            "Recorded 'team dinner': 240 EUR (total 275 EUR)."
          ])
        expect((yield* stateIn(db, last.sessionId)).total).toBe(275)

        // the run is done: continuing it again is a clear error
        const again = yield* Effect.flip(
          captured(Cli.run(["runs", "continue", last.runId, "--pause", key, "--approve", "--json", "--db", db]))
        )
        expect(again).toBeInstanceOf(Cli.CommandError)
        expect((again as Cli.CommandError).message).toBe(
          `no paused run '${last.runId}' in ${db}: it has ended (completed)`
        )
      })
  )

  it.scoped("across processes: --reject --reason; the rejection reaches the model, the dinner is not recorded", () =>
    Effect.gen(function*() {
      const db = yield* tempDb()
      const first = yield* cli(["run", "approval", "--json", "--db", db])
      expect(first.code, first.stderr).toBe(0)
      const last = jsonEvents(first.stdout).at(-1)!
      expect(last._tag).toBe("RunPaused")
      const key = last._tag === "RunPaused" ? last.key : ""
      const second = yield* cli([
        "runs",
        "continue",
        last.runId,
        "--pause",
        key,
        "--reject",
        "--reason",
        "over budget",
        "--json",
        "--db",
        db
      ])
      expect(second.code, second.stderr).toBe(0)
      const done = jsonEvents(second.stdout)
      expect(done.find((e) => e._tag === "ToolCallCompleted")).toMatchObject({
        isError: true,
        result: "Rejected by a person: over budget"
      })
      const completed = done.at(-1)!
      expect(completed._tag).toBe("RunCompleted")
      expect(completed._tag === "RunCompleted" && completed.content).toContain("the manager rejected it (over budget)")
      expect(yield* stateIn(db, last.sessionId)).toEqual({
        expenses: [{ description: "taxi to the airport", amount: 35 }],
        total: 35
      })
    }))

  it.scoped("interactively (separate processes): run asks y/n on stdin; runs continue without --approve asks too", () =>
    Effect.gen(function*() {
      const db = yield* tempDb()
      const [answered, unanswered] = yield* Effect.all([
        cli(["run", "approval", "--db", db], "y\n"),
        cli(["run", "approval", "--db", db])
      ], { concurrency: 2 })
      expect(answered.code, answered.stderr).toBe(0)
      expect(answered.stdout).toContain("called by Expense Assistant? [y/n] y\n")
      expect(answered.stdout).toContain("└ ✓ run completed")
      expect(answered.stdout).toContain(`"total": 275`)
      // no stdin: the run stays paused; another process answers n (and a reason) on its stdin
      expect(unanswered.code, unanswered.stderr).toBe(0)
      const runId = /runs continue (\S+) --pause/.exec(unanswered.stdout)?.[1]
      expect(runId).toBeDefined()
      const continued = yield* cli(["runs", "continue", runId!, "--db", db], "n\nnot this month\n")
      expect(continued.code, continued.stderr).toBe(0)
      expect(continued.stdout).toContain("[y/n] n\nReason (optional): not this month\n")
      expect(continued.stdout).toContain("⚠ Rejected by a person: not this month")
      expect(continued.stdout).toContain("└ ✓ run completed")
    }))
})
