import { assert, describe, expect, it } from "@effect/vitest"
import { Step, StepInput, StepOutput, Steps, Workflow } from "@sessionflow/core"
import { Chunk, Effect, Schedule, Stream } from "effect"
import { append, Boom, itemsWorkflow, memory } from "./utils.js"

describe("Step", () => {
  it.effect("each step gets the previous step's content, the run input and earlier outputs by name", () =>
    Effect.gen(function*() {
      const first = Step.make("first", (input) => Effect.succeed(`${input.input}!`))
      const second = Step.make(
        "second",
        (input) =>
          Effect.succeed({
            prev: input.previousStepContent,
            first: StepInput.getStepContent(input, "first"),
            run: input.input,
            extra: input.additionalData.k
          })
      )
      const out = yield* Workflow.run(Workflow.make({ name: "chain", steps: [first, second] }), "hi", {
        additionalData: { k: 1 }
      })
      expect(out.content).toEqual({ prev: "hi!", first: "hi!", run: "hi", extra: 1 })
    }).pipe(memory))

  it.effect(
    "previousStepOutputs are the outputs completed before the step started, even when read after its children ran",
    () =>
      Effect.gen(function*() {
        const child = Step.make("child", () => Effect.succeed("c"))
        const box = Step.container("box", (input, runner) =>
          Effect.map(
            runner.run(child, {
              input: input.input,
              previousStepContent: input.previousStepContent,
              previousStepOutputs: runner.outputs(),
              additionalData: input.additionalData
            }),
            // read after the child completed: still the outputs before this step
            () => Object.keys(input.previousStepOutputs)
          ))
        const last = Step.make(
          "last",
          (input) =>
            Effect.succeed(Object.entries(input.previousStepOutputs).map(([name, output]) => [name, output.content]))
        )
        const wf = Workflow.make({ name: "outputs", steps: [Step.make("a", () => Effect.succeed(1)), box, last] })
        const out = yield* Workflow.run(wf, "x")
        expect(out.stepOutputs.map((o) => o.stepName)).toEqual(["a", "child", "box", "last"])
        expect(out.stepOutputs[2]!.content).toEqual(["a"])
        expect(out.content).toEqual([["a", 1], ["child", "c"], ["box", ["a"]]])
      }).pipe(memory)
  )

  it.effect("a container may take its runner apart; built-in containers run inside it like any child", () =>
    Effect.gen(function*() {
      const inner = Steps.make("inner", [
        Step.make("one", () => Effect.succeed(1)),
        Step.make("two", () => Effect.succeed(2))
      ])
      const box = Step.container(
        "box",
        (input, { completed, sequence }) =>
          Effect.map(sequence([inner], input), (output) => ({
            last: output.content,
            seen: completed().map((o) => o.stepName)
          }))
      )
      const out = yield* Workflow.run(Workflow.make({ name: "apart", steps: [box] }), "x")
      expect(out.content).toEqual({ last: 2, seen: ["one", "two", "inner"] })
      expect(out.stepOutputs.map((o) => o.stepName)).toEqual(["one", "two", "inner", "box"])
    }).pipe(memory))

  it.effect("a stop output ends the workflow", () =>
    Effect.gen(function*() {
      const wf = itemsWorkflow([
        append("a"),
        Step.make("stop", () => Effect.succeed(StepOutput.stop("enough"))),
        append("never")
      ])
      const out = yield* Workflow.run(wf, "x")
      expect(out.content).toBe("enough")
      expect(out.state.items).toEqual(["a"])
    }).pipe(memory))

  it.effect("skipOnError records an unsuccessful output and goes on", () =>
    Effect.gen(function*() {
      const wf = itemsWorkflow([
        Step.skipOnError(Step.make("boom", () => Effect.fail(new Boom({ reason: "skipped" })))),
        append("after")
      ])
      const out = yield* Workflow.run(wf, "x", { sessionId: "skip" })
      expect(out.state.items).toEqual(["after"])
      const boom = out.stepOutputs.find((o) => o.stepName === "boom")!
      expect(boom.success).toBe(false)
      expect(boom.error).toContain("skipped")
    }).pipe(memory))

  it.effect("a retry schedule re-runs a failing step", () =>
    Effect.gen(function*() {
      let calls = 0
      const flaky = Step.make("flaky", () =>
        Effect.suspend(() => ++calls < 3 ? Effect.fail(new Boom({ reason: "flaky" })) : Effect.succeed("ok")), {
        retry: Schedule.recurs(5)
      })
      const out = yield* Workflow.run(Workflow.make({ name: "retry", steps: [flaky] }), "x")
      expect(out.content).toBe("ok")
      expect(calls).toBe(3)
    }).pipe(memory))

  it.effect("Step.promise turns a rejection into StepError", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({
        name: "p",
        steps: [Step.promise("reject", async () => {
          throw new Error("nope")
        })]
      })
      const error = yield* Effect.flip(Workflow.run(wf, "x"))
      assert(error._tag === "StepError")
      expect(error.message).toBe("Step 'reject' failed: nope")
    }).pipe(memory))

  it.effect("a streaming executor's deltas arrive before its step completes", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({
        name: "s",
        steps: [Step.stream("talk", () => Stream.make("Hel", "lo"))]
      })
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(Workflow.stream(wf, "x")))
      expect(events.map((e) => e._tag === "TextDelta" ? e.delta : e._tag)).toEqual([
        "RunStarted",
        "StepStarted",
        "Hel",
        "lo",
        "StepCompleted",
        "RunCompleted"
      ])
      const done = events.find((e) => e._tag === "RunCompleted")
      assert(done?._tag === "RunCompleted")
      expect(done.content).toBe("Hello")
    }).pipe(memory))
})
