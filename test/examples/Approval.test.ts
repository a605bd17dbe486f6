/**
 * The approval scenario: an expense above the limit pauses the run until a
 * person answers — on the terminal (y/n), or in another process with
 * `runs continue <runId> --approve|--reject`.
 */
import { describe, expect, it } from "@effect/vitest"
import { SessionStore, Step, Workflow } from "@sessionflow/core"
import { Approval, Cli } from "@sessionflow/examples"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Clock, Effect, Layer, TestClock } from "effect"
import { captured, events, tempDb } from "./utils.js"

const { expenseWorkflow, input, offlineModel } = Approval

describe("Approval (expenses above the limit wait for a person)", () => {
  it("the scripted model finds the expenses a message names", () => {
    expect(Approval.expensesIn(input)).toEqual([
      { amount: 35, description: "taxi to the airport" },
      { amount: 240, description: "team dinner" }
    ])
    expect(Approval.expensesIn("€12.50 for coffee; 80 euros on a hotel night.")).toEqual([
      { amount: 12.5, description: "coffee" },
      { amount: 80, description: "hotel night" }
    ])
  })

  it.effect("the dinner pauses the run; approved, both are recorded; rejected, the model says why", () =>
    Effect.gen(function*() {
      const paused = yield* events(expenseWorkflow, input, { sessionId: "s1" })
      const last = paused.at(-1)!
      expect(last).toMatchObject({
        _tag: "RunPaused",
        payload: {
          agent: "Expense Assistant",
          tool: "record_expense",
          arguments: { description: "team dinner", amount: 240 }
        }
      })
      const approved = yield* Workflow.continue(expenseWorkflow, last.runId, { approved: true })
      expect(approved.state).toEqual({
        expenses: [{ description: "taxi to the airport", amount: 35 }, { description: "team dinner", amount: 240 }],
        total: 275
      })
      expect(approved.content).toBe(
        "✓ taxi to the airport: 35 EUR recorded.\n✓ team dinner: 240 EUR recorded.\nYour expenses now total 275 EUR."
      )

      const again = (yield* events(expenseWorkflow, input, { sessionId: "s2" })).at(-1)!
      const rejected = yield* Workflow.continue(expenseWorkflow, again.runId, {
        approved: false,
        reason: "over budget"
      })
      expect(rejected.state.total).toBe(35)
      expect(rejected.content).toContain(
        "✗ team dinner: 240 EUR was not recorded — the manager rejected it (over budget)."
      )
    }).pipe(Effect.provide(Layer.mergeAll(offlineModel, Approval.ExpenseToolsLive, SessionStore.layerMemory))))

  it.effect(
    "nobody answers within two days: the run wakes by itself and the dinner is rejected as not approved in time",
    () =>
      Effect.gen(function*() {
        const start = yield* Clock.currentTimeMillis
        const paused = yield* Effect.flip(Workflow.run(expenseWorkflow, input, { sessionId: "late" }))
        expect(paused).toMatchObject({ _tag: "RunPaused", timeoutAt: start + 2 * 86_400_000 })
        // before its time, nothing is due
        yield* TestClock.adjust("47 hours")
        expect(yield* Workflow.recover(expenseWorkflow)).toEqual([])
        yield* TestClock.adjust("1 hour")
        const [woken] = yield* Workflow.recover(expenseWorkflow)
        expect(woken?.outcome._tag).toBe("Success")
        const output = woken?.outcome._tag === "Success" ? woken.outcome.value : undefined
        expect(output).toMatchObject({
          state: { expenses: [{ description: "taxi to the airport", amount: 35 }], total: 35 }
        })
        expect(output !== undefined && output !== "abandoned" ? output.content : "").toContain(
          "✗ team dinner: 240 EUR was not recorded — the manager rejected it (not approved in time)."
        )
        expect(yield* Workflow.pausedRuns(expenseWorkflow)).toEqual([])
      }).pipe(Effect.provide(Layer.mergeAll(offlineModel, Approval.ExpenseToolsLive, SessionStore.layerMemory)))
  )

  it.scoped("interactively (in process): the question is asked on the terminal, y continues the run", () =>
    Effect.gen(function*() {
      const db = yield* tempDb()
      const { stdout } = yield* captured(Approval.main({ db, model: offlineModel }), "pretty", ["maybe", "y"])
      expect(stdout).toContain(
        `Approve record_expense({"amount":240,"description":"team dinner"}), called by Expense Assistant? [y/n] maybe`
      )
      expect(stdout).toContain("Please answer y or n.")
      expect(stdout).toContain("[y/n] y\n┌ ▶ run continued from step 1 of Expense Approval Workflow")
      expect(stdout).toContain("└ ✓ run completed")
      expect(stdout).toContain(`◆ Workflow session state: {`)
      // no answer (the input ended): the run stays paused, and the way to continue it is printed
      const unanswered = yield* captured(Approval.main({ db, model: offlineModel }))
      expect(unanswered.stdout).toMatch(
        /Continue it later with:\n {2}npm start -- runs continue \S+ --pause '[^']+' --approve --db /
      )
      expect(unanswered.stdout).not.toContain("run completed")
    }))

  it.effect("runs continue: mistakes are usage errors", () =>
    Effect.gen(function*() {
      const error = (argv: ReadonlyArray<string>) =>
        Effect.map(Effect.flip(captured(Cli.run(argv))), (e) => (e as Cli.UsageError).message)
      expect(yield* error(["runs", "continue"])).toContain("which run?")
      expect(yield* error(["runs", "continue", "r1", "--approve", "--reject", "--db", "x.db"])).toContain(
        "one of --approve, --reject"
      )
      expect(yield* error(["runs", "continue", "r1", "--json", "--db", "x.db"])).toContain("give the answer")
      expect(yield* error(["runs", "continue", "r1", "--approve", "--json", "--db", "x.db"])).toContain(
        "name the pause answered (--pause <key>"
      )
      expect(yield* error(["runs", "continue", "r1", "--approve"])).toContain("--db <file> or --url <url> is required")
      expect(yield* error(["runs", "continue", "r1", "--response", "{nope", "--db", "x.db"])).toContain("not JSON")
      expect(yield* error(["runs", "continue", "r1", "--reason", "x", "--db", "x.db"])).toContain("--reason goes with")
      expect(yield* error(["runs", "continue", "a\u0000b", "--approve", "--db", "x.db"])).toBe(
        `runs continue: "a\\u0000b" is not a run id (1 to 256 characters, no control characters)`
      )
    }))

  it.scoped("runs continue of a run that failed says so, with its recorded error, and runs nothing", () =>
    Effect.gen(function*() {
      const db = yield* tempDb()
      const failing = Workflow.make({
        name: "approval-failing",
        steps: [Step.make("fail", () => Effect.fail(new Error("no approver")))]
      })
      yield* Effect.flip(
        Workflow.run(failing, "go", { sessionId: "f1", runId: "f-1" }).pipe(
          Effect.provide(SqliteSessionStore.layer({ filename: db }))
        )
      )
      const refused = yield* Effect.flip(captured(Cli.run(["runs", "continue", "f-1", "--approve", "--db", db])))
      expect(refused).toBeInstanceOf(Cli.CommandError)
      expect((refused as Cli.CommandError).message).toMatch(
        new RegExp(`^no paused run 'f-1' in .*: it has ended \\(error: .*no approver\\)$`)
      )
    }))
})
