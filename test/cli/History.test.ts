import { describe, expect, it } from "@effect/vitest"
import { Agent, Replay, SessionStore, Step, TestModel, Workflow } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, Layer, TestClock } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { inProcess, sampleDb } from "./utils.js"

const greeter = Agent.make({ name: "Greeter", instructions: "Greet." })
const greeting = Workflow.make({
  name: "greeting",
  steps: [
    Step.agent("greet", greeter),
    Step.make("shout", ({ previousStepContent }) => Effect.succeed(String(previousStepContent).toUpperCase()))
  ]
})

describe("sessionflow prune and export-runs (in process)", () => {
  it.scoped("prune --keep-last removes a workflow's older run records; --json says how many", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      const pruned = yield* inProcess(["prune", "--db", filename, "--workflow", "shopping", "--keep-last", "1"])
      expect(pruned.code, pruned.stderr).toBe(0)
      expect(pruned.stdout).toBe("Removed 2 run records and 0 stored events of workflow 'shopping'.\n")
      const runs = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.runs("alice-1", {})).pipe(
        Effect.provide(SqliteSessionStore.layer({ filename, readonly: true }))
      )
      expect(runs.map((run) => run.runId)).toEqual(["alice-1-run-3"])
      const again = yield* inProcess([
        "prune",
        "--db",
        filename,
        "--workflow",
        "shopping",
        "--keep-last",
        "0",
        "--session",
        "big",
        "--json"
      ])
      expect(JSON.parse(again.stdout)).toEqual({ workflowName: "shopping", runs: 1, events: 0, abandoned: 0 })
    }))

  it.scoped("prune without a rule, or with a duration it cannot read, is a usage error that removes nothing", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      const none = yield* inProcess(["prune", "--db", filename, "--workflow", "shopping"])
      expect(none.code).toBe(2)
      expect(none.stderr).toContain("give olderThan, keepLast or both")
      const bad = yield* inProcess(["prune", "--db", filename, "--workflow", "shopping", "--older-than", "soonish"])
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain(`--older-than takes a duration such as "30 days"`)
      const show = yield* inProcess(["sessions", "show", "--db", filename, "alice-1"])
      expect(show.stdout).toContain("Runs (3):")
    }))

  it.scoped("export-runs writes the recorded runs to a file that replays against the workflow", () =>
    Effect.gen(function*() {
      const { dir, filename } = yield* sampleDb()
      yield* Effect.gen(function*() {
        yield* Workflow.run(greeting, "hi", { sessionId: "g", events: "stored" }).pipe(Replay.record)
        // the listing orders runs by their start
        yield* TestClock.adjust("1 second")
        yield* Workflow.run(greeting, "hello", { sessionId: "g", events: "stored" }).pipe(Replay.record)
      }).pipe(
        Effect.provide(
          Layer.mergeAll(
            SqliteSessionStore.layer({ filename }),
            TestModel.layer([TestModel.text("Hi!"), TestModel.text("Hello!")])
          )
        )
      )
      const out = path.join(dir, "greeting.runs.json")
      const exported = yield* inProcess(["export-runs", "--db", filename, "--workflow", "greeting", "--out", out])
      expect(exported.code, exported.stderr).toBe(0)
      expect(exported.stderr).toBe(`Wrote 2 recorded runs of workflow 'greeting' to ${out}.\n`)
      const file = Replay.decodeFile(JSON.parse(fs.readFileSync(out, "utf8")))
      expect(file.runs.map((run) => run.input)).toEqual(["hi", "hello"])
      const replayed = yield* Replay.replayAll(greeting, file.runs)
      expect(replayed.map((run) => run.modelCalls)).toEqual([1, 1])
      // on stdout without --out
      const printed = yield* inProcess([
        "export-runs",
        "--db",
        filename,
        "--workflow",
        "greeting",
        "--session",
        "g",
        "--limit",
        "1"
      ])
      expect(Replay.decodeFile(JSON.parse(printed.stdout)).runs.map((run) => run.input)).toEqual(["hello"])
    }))
})
