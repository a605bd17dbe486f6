import { describe, expect, it } from "@effect/vitest"
import { WorkflowEvent } from "@sessionflow/core"
import { Effect, Schema } from "effect"
import { cli, tempDb } from "./utils.js"

const decodeEvent = Schema.decodeUnknownSync(WorkflowEvent.WorkflowEvent)

describe("sessionflow CLI (a separate process)", () => {
  it.scoped("--json prints one WorkflowEvent per stdout line (a separate process)", () =>
    Effect.gen(function*() {
      const db = yield* tempDb()
      const result = yield* cli(["run", "condition", "--json", "--db", db])
      expect(result.code, result.stderr).toBe(0)
      expect(result.stderr.split("\n")[0]).toBe("Offline mode: no OPENAI_API_KEY set, using a scripted model.")
      const lines = result.stdout.trim().split("\n")
      const evs = lines.map((line) => decodeEvent(JSON.parse(line)))
      expect(evs.filter((e) => e._tag === "RunStarted")).toHaveLength(2)
      expect(evs.filter((e) => e._tag === "RunCompleted")).toHaveLength(2)
      expect(evs.some((e) => e._tag === "TextDelta")).toBe(true)
      expect(evs.some((e) => e._tag === "StateChanged")).toBe(true)
      expect(evs.filter((e) => e._tag === "ConditionEvaluated").map((e) => e._tag === "ConditionEvaluated" && e.result))
        .toEqual([true, false])
      // the evaluator's line is a Log event in the stream, so stdout stays machine-readable
      expect(evs.filter((e) => e._tag === "Log").map((e) => e._tag === "Log" && e.message)).toEqual([
        "[condition] user user-123, session user-123, has been greeted: false",
        "[condition] user user-123, session user-123, has been greeted: true"
      ])
    }))

  it.scoped(
    "--trace console writes each run's span tree on stderr, stdout keeps its JSON lines (a separate process)",
    () =>
      Effect.gen(function*() {
        const db = yield* tempDb()
        const result = yield* cli(["run", "condition", "--json", "--trace", "console", "--db", db])
        expect(result.code, result.stderr).toBe(0)
        for (const line of result.stdout.trim().split("\n")) decodeEvent(JSON.parse(line))
        const runs = result.stderr.split("\n").filter((line) => line.startsWith("Workflow.run "))
        expect(runs).toHaveLength(2)
        for (const run of runs) {
          expect(run).toMatch(/workflow\.name=.* session\.id=user-123 run\.id=\S+ .*run\.outcome=completed/)
        }
        expect(result.stderr).toMatch(
          new RegExp(
            String.raw`\n {2}Workflow\.step [\d.]+ms {2}step\.name=Check If New User ` +
              String.raw`step\.kind=condition .*step\.outcome=completed\n`
          )
        )
      })
  )

  it.effect(
    "an unknown scenario exits with code 1 and one line: the message and where the usage is (a separate process)",
    () =>
      Effect.gen(function*() {
        const result = yield* cli(["run", "nope"])
        expect(result.code).toBe(1)
        expect(result.stdout).toBe("")
        expect(result.stderr).toMatch(
          new RegExp(
            String.raw`^error: unknown scenario 'nope'\. Known scenarios: shopping-list, job-tracker, ` +
              String.raw`.*approval \(see: npm start -- run --help\)\n$`
          )
        )
      })
  )
})
