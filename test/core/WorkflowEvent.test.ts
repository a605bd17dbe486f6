import { assert, describe, expect, it } from "@effect/vitest"
import { Condition, Loop, Parallel, Router, Step, Workflow, WorkflowEvent } from "@sessionflow/core"
import { Chunk, Effect, Logger, Schema, Stream } from "effect"
import { append, Boom, Items, itemsWorkflow, memory } from "./utils.js"

describe("WorkflowEvent", () => {
  it.effect("a run streams one ordered, numbered event per thing that happened, with step paths", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({
        name: "items",
        state: Items,
        sessionState: { items: [] },
        steps: [
          Condition.make({ name: "cond", evaluator: () => Effect.succeed(true), steps: [append("a")] }),
          Router.make({ name: "route", choices: [append("b")], selector: () => Effect.succeed("b") }),
          Loop.make({ name: "loop", steps: [Step.make("noop", () => Effect.succeed("n"))], maxIterations: 1 }),
          Parallel.make("par", [Step.make("p1", () => Effect.succeed(1))])
        ]
      })
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(Workflow.stream(wf, "go", { sessionId: "ev" })))
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
      expect(events.every((e) => e.sessionId === "ev" && e.runId === events[0]!.runId)).toBe(true)
      expect(events.map((e) => `${e._tag}:${e.path.join("/")}`)).toEqual([
        "RunStarted:",
        "StepStarted:cond",
        "ConditionEvaluated:cond",
        "StepStarted:cond/a",
        "StateChanged:cond/a",
        "StepCompleted:cond/a",
        "StepCompleted:cond",
        "StepStarted:route",
        "RouterSelected:route",
        "StepStarted:route/b",
        "StateChanged:route/b",
        "StepCompleted:route/b",
        "StepCompleted:route",
        "StepStarted:loop",
        "LoopIterationStarted:loop",
        "StepStarted:loop/noop",
        "StepCompleted:loop/noop",
        "LoopIterationCompleted:loop",
        "StepCompleted:loop",
        "StepStarted:par",
        "ParallelStarted:par",
        "StepStarted:par/p1",
        "StepCompleted:par/p1",
        "ParallelCompleted:par",
        "StepCompleted:par",
        "RunCompleted:"
      ])
      const changes = events.filter((e) => e._tag === "StateChanged").map((e) => e.changes)
      expect(changes).toEqual([[{ op: "append", path: ["items"], items: ["a"] }], [{
        op: "append",
        path: ["items"],
        items: ["b"]
      }]])
      const routed = events.find((e) => e._tag === "RouterSelected")
      assert(routed?._tag === "RouterSelected")
      expect(routed.selected).toEqual(["b"])
      for (const event of events) Schema.decodeUnknownSync(WorkflowEvent.WorkflowEvent)(event)
    }).pipe(memory))

  it.effect("a step function that throws instead of returning an Effect is a StepFailed of its step", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({
        name: "throws",
        steps: [
          Step.make("prepare", () => Effect.succeed("ready")),
          Step.make("run", (): Effect.Effect<string> => {
            throw new Error("kaboom")
          })
        ]
      })
      const seen: Array<WorkflowEvent.WorkflowEvent> = []
      const exit = yield* Workflow.stream(wf, "x").pipe(
        Stream.runForEach((e) => Effect.sync(() => seen.push(e))),
        Effect.exit
      )
      expect(exit._tag).toBe("Failure")
      expect(seen.map((e) => `${e._tag}:${e.path.join("/")}`)).toEqual([
        "RunStarted:",
        "StepStarted:prepare",
        "StepCompleted:prepare",
        "StepStarted:run",
        "StepFailed:run",
        "RunFailed:"
      ])
      const failed = seen.find((e) => e._tag === "StepFailed")
      assert(failed?._tag === "StepFailed")
      expect(failed.stepName).toBe("run")
      expect(failed.error).toContain("kaboom")
    }).pipe(memory))

  it.effect("a failing run streams StepFailed and RunFailed, then fails with the step's typed error", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({
        name: "f",
        steps: [Step.make("boom", () => Effect.fail(new Boom({ reason: "bad" })))]
      })
      const seen: Array<string> = []
      const error = yield* Workflow.stream(wf, "x").pipe(
        Stream.runForEach((e) => Effect.sync(() => seen.push(e._tag))),
        Effect.flip
      )
      expect(error).toBeInstanceOf(Boom)
      expect(seen).toEqual(["RunStarted", "StepStarted", "StepFailed", "RunFailed"])
    }).pipe(memory))

  it.effect("WorkflowEvent.log puts a line into the event stream at the step's path, in order", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({
        name: "log",
        steps: [
          Condition.make({
            name: "check",
            evaluator: () => Effect.as(WorkflowEvent.log("looking at the state"), true),
            steps: [Step.make("work", () => Effect.as(WorkflowEvent.log("working"), "done"))]
          })
        ]
      })
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(Workflow.stream(wf, "x")))
      expect(events.map((e) => e._tag === "Log" ? `${e.path.join("/")}: ${e.message}` : e._tag)).toEqual([
        "RunStarted",
        "StepStarted",
        "check: looking at the state",
        "ConditionEvaluated",
        "StepStarted",
        "check/work: working",
        "StepCompleted",
        "StepCompleted",
        "RunCompleted"
      ])
      // without a listener the line goes to the logger and the run is unaffected
      const logged: Array<unknown> = []
      const logger = Logger.make(({ message }) => void logged.push(message))
      const out = yield* Workflow.run(wf, "x").pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      expect(out.content).toBe("done")
      expect(logged.flat()).toEqual(["looking at the state", "working"])
    }).pipe(memory))

  it.effect("stopping the stream early cancels the run: no state change, a cancelled record", () =>
    Effect.gen(function*() {
      const wf = itemsWorkflow([append("a"), Step.make("forever", () => Effect.never)])
      yield* Workflow.stream(wf, "x", { sessionId: "early" }).pipe(
        Stream.takeUntil((e) => e._tag === "StepStarted" && e.stepName === "forever"),
        Stream.runDrain
      )
      expect((yield* Workflow.getSessionState(wf, "early")).items).toEqual([])
      expect((yield* Workflow.getRunHistory(wf, "early")).map((r) => r.status)).toEqual(["cancelled"])
    }).pipe(memory))

  describe("format", () => {
    const at = (...path: Array<string>) => ({ runId: "r", sessionId: "s", seq: 0, path, timestamp: 0 })

    it("renders each event as transcript lines, indented two spaces per step level", () => {
      const lines = (event: WorkflowEvent.WorkflowEvent, options?: WorkflowEvent.FormatOptions) =>
        WorkflowEvent.format(event, options).split("\n")
      expect(lines({ _tag: "RunStarted", ...at(), workflowName: "wf", userId: "u", input: "hello" })).toEqual([
        "┌ wf (session s, user u)",
        "│ » hello"
      ])
      expect(lines({ _tag: "StepStarted", ...at("a"), stepName: "a", kind: "agent" })).toEqual(["  ▶ a (agent)"])
      expect(lines({ _tag: "StepStarted", ...at("a", "b"), stepName: "b", kind: "step" })).toEqual([
        "    ▶ b (step)  a › b"
      ])
      const completed = {
        _tag: "StepCompleted",
        ...at("a"),
        stepName: "a",
        kind: "agent",
        content: "one\ntwo",
        success: true
      } as const
      expect(lines(completed, { elapsed: 12 })).toEqual(["    ↳ one", "      two", "  ✓ a 12ms"])
      expect(lines(completed, { streamed: true })).toEqual(["  ✓ a"])
      expect(lines({ ...completed, kind: "condition" })).toEqual(["  ✓ a"])
      expect(lines({ ...completed, content: { n: 1 }, success: false })).toEqual([
        "    ↳ {\"n\":1}",
        "  ✗ a (unsuccessful)"
      ])
      expect(lines({ _tag: "StepFailed", ...at("a"), stepName: "a", kind: "step", error: "Boom: no" })).toEqual([
        "  ✗ a failed: Boom: no"
      ])
      expect(lines({ _tag: "ConditionEvaluated", ...at("c"), stepName: "c", result: false, branch: "none" })).toEqual([
        "    ? c → false (skipped)"
      ])
      expect(lines({ _tag: "RouterSelected", ...at("r"), stepName: "r", selected: ["x", "y"] })).toEqual([
        "    ↪ r → x, y"
      ])
      expect(
        lines({ _tag: "LoopIterationCompleted", ...at("l"), stepName: "l", iteration: 3, done: true, exhausted: true })
      )
        .toEqual(["    ↻ l iteration 3 done (loop ends: maxIterations reached before its end condition)"])
      expect(lines({ _tag: "ParallelStarted", ...at("p"), stepName: "p", branches: ["b1", "b2"] })).toEqual([
        "    ⇉ p: b1, b2"
      ])
      expect(lines({
        _tag: "StateChanged",
        ...at("s"),
        changes: [{ op: "append", path: ["items"], items: ["milk"] }, { op: "delete", path: ["gone"], previous: 1 }]
      })).toEqual(["    Δ items += [\"milk\"]", "    Δ gone deleted"])
      expect(lines({ _tag: "Log", ...at("s"), message: "hello" })).toEqual(["    hello"])
      const call = { ...at("s"), toolCallId: "c1", toolName: "add_item" }
      expect(lines({ _tag: "ToolCallStarted", ...call, arguments: { item: "milk", n: 2 } })).toEqual([
        "    🔧 add_item(item=\"milk\", n=2)"
      ])
      const done = { _tag: "ToolCallCompleted", ...call, result: "Added 'milk'.", isError: false } as const
      expect(lines(done)).toEqual(["      → Added 'milk'."])
      expect(lines(done, { streamed: true })).toEqual(["      → (the reply above)"])
      expect(lines({ ...done, result: "no such item", isError: true }, { streamed: true })).toEqual([
        "      ⚠ no such item"
      ])
      expect(lines({ _tag: "RunCompleted", ...at(), content: "x" }, { elapsed: 1500 })).toEqual([
        "└ ✓ run completed in 1.5s"
      ])
      expect(lines({ _tag: "RunFailed", ...at(), error: "Boom: no" })).toEqual(["└ ✗ run failed: Boom: no"])
      // a text delta continues a line: its text, as it is
      expect(WorkflowEvent.format({ _tag: "TextDelta", ...at("s"), delta: "Hel" })).toBe("Hel")
    })

    it("lets the caller colour the parts by their role", () => {
      const paint = (role: WorkflowEvent.Role, text: string) => `<${role}>${text}</${role}>`
      expect(WorkflowEvent.format({ _tag: "StepStarted", ...at("a"), stepName: "a", kind: "agent" }, { paint })).toBe(
        "  <step>▶</step> <strong>a</strong> <dim>(agent)</dim>"
      )
      expect(
        WorkflowEvent.format({ _tag: "StepFailed", ...at("a"), stepName: "a", kind: "step", error: "x" }, { paint })
      ).toBe(
        "  <failure>✗</failure> a <failure>failed: x</failure>"
      )
    })

    it("formatValue keeps strings and short JSON on one line, and breaks long JSON over lines", () => {
      expect(WorkflowEvent.formatValue("as it is")).toBe("as it is")
      expect(WorkflowEvent.formatValue({ list: ["a", "b"] })).toBe(`{"list":["a","b"]}`)
      expect(WorkflowEvent.formatValue({ list: ["a", "b"], name: "x" }, 20)).toBe(
        [`{`, `  "list": ["a","b"],`, `  "name": "x"`, `}`].join("\n")
      )
    })
  })
})
