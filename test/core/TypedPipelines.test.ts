import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, expect, expectTypeOf, it } from "@effect/vitest"
import {
  Agent,
  Condition,
  Loop,
  Parallel,
  Router,
  SessionState,
  SessionStore,
  Step,
  type StepInput,
  StepOutput,
  TestModel,
  Workflow,
  WorkflowError
} from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Chunk, Effect, Exit, Layer, Option, Schema, Stream } from "effect"

class Cart extends SessionState.Tag("typed/Cart")<Cart>()({ items: Schema.Array(Schema.String) }) {}
class Boom extends Schema.TaggedError<Boom>()("Boom", { reason: Schema.String }) {
  override get message() {
    return `boom: ${this.reason}`
  }
}

const Order = Schema.Struct({ item: Schema.NonEmptyString, quantity: Schema.Int })

const memory = Effect.provide(SessionStore.layerMemory)

const collect = <W extends Workflow.Any>(
  wf: W,
  input: Workflow.Input<W>,
  options?: Workflow.RunOptions<Workflow.StateEncoded<W>>
) => Workflow.stream(wf, input, options).pipe(Stream.runCollect, Effect.map(Chunk.toReadonlyArray))

const cartWorkflow = (name: string) =>
  Workflow.make({ name, input: Schema.String, state: Cart, sessionState: { items: [] } })

const addItem = (name: string) =>
  Step.make(
    name,
    (input: StepInput.StepInput<string>) =>
      Cart.modify((s) => [s.items.length + 1, { items: [...s.items, input.previousStepContent] }])
  )

describe("typed pipelines", () => {
  describe("data between steps", () => {
    it.effect("the first step receives the run input; each next step the one before's content", () =>
      Effect.gen(function*() {
        const seen: Array<unknown> = []
        const wf = Workflow.make({ name: "chain", input: Schema.String }).pipe(
          Workflow.andThen("first", ({ input, previousStepContent }) => {
            seen.push(previousStepContent)
            return Effect.succeed(`${input}!`)
          }),
          Workflow.andThen("second", ({ previousStepContent }) => {
            seen.push(previousStepContent)
            return Effect.succeed(previousStepContent.length)
          })
        )
        const run = yield* Workflow.run(wf, "hey")
        expect(seen).toEqual(["hey", "hey!"])
        expect(run.content).toBe(4)
        expect(run.stepOutputs.map((o) => [o.stepName, o.content])).toEqual([["first", "hey!"], ["second", 4]])
      }).pipe(memory))

    it.effect("the input Schema decodes the run input for every step (transformations included)", () =>
      Effect.gen(function*() {
        const wf = Workflow.make({ name: "orders", input: Schema.parseJson(Order), steps: [] }).pipe(
          Workflow.andThen("total", ({ input }) => Effect.succeed(input.quantity * 2)),
          Workflow.andThen(
            "describe",
            ({ input, previousStepContent }) => Effect.succeed(`${previousStepContent} × ${input.item}`)
          )
        )
        const run = yield* Workflow.run(wf, `{"item":"tea","quantity":3}`, { sessionId: "orders" })
        expect(run.content).toBe("6 × tea")
        // the run history keeps the input as given
        const [record] = yield* Workflow.getRunHistory(wf, "orders")
        expect(record!.input).toBe(`{"item":"tea","quantity":3}`)
      }).pipe(memory))

    it.effect("a bad input is an InputDecodeError before anything runs: no state change, a failed run record", () =>
      Effect.gen(function*() {
        let ran = false
        const wf = Workflow.make({ name: "orders", input: Order, state: Cart, sessionState: { items: [] } }).pipe(
          Workflow.andThen("record", ({ input }) => {
            ran = true
            return Cart.update((s) => ({ items: [...s.items, input.item] }))
          })
        )
        yield* Workflow.run(wf, { item: "tea", quantity: 1 }, { sessionId: "o" })
        const error = yield* Effect.flip(Workflow.run(wf, { item: "", quantity: 1.5 }, { sessionId: "o" }))
        assert(error._tag === "InputDecodeError")
        expect(error.workflowName).toBe("orders")
        expect(error.message).toContain("The input of workflow 'orders' does not fit its input schema")
        expect(error.description).toContain("quantity")
        ran = false
        const fresh = yield* Effect.flip(Workflow.run(wf, { item: "", quantity: 1 }, { sessionId: "new-session" }))
        expect(fresh._tag).toBe("InputDecodeError")
        expect(ran).toBe(false)
        expect((yield* Workflow.getSessionState(wf, "o")).items).toEqual(["tea"])
        // the failed run is recorded on the existing session; a new session is not created for it
        const history = yield* Workflow.getRunHistory(wf, "o")
        expect(history.map((r) => r.status)).toEqual(["completed", "error"])
        expect(history[1]!.error).toMatch(/^InputDecodeError: The input of workflow 'orders'/)
        const missing = yield* Effect.flip(Workflow.getSessionState(wf, "new-session"))
        expect(missing._tag).toBe("SessionNotFound")
      }).pipe(memory))

    it.effect("a condition that does not run its branch passes its input through", () =>
      Effect.gen(function*() {
        const gate = (open: boolean) =>
          Condition.make({
            name: "gate",
            evaluator: () => Effect.succeed(open),
            steps: [
              Step.make("measure", (i: StepInput.StepInput<string>) => Effect.succeed(i.previousStepContent.length))
            ]
          })
        const wf = (open: boolean) => Workflow.make({ name: "gated", input: Schema.String, steps: [gate(open)] })
        expect((yield* Workflow.run(wf(true), "abc")).content).toBe(3)
        expect((yield* Workflow.run(wf(false), "abc")).content).toBe("abc")
      }).pipe(memory))

    it.effect("a skipOnError step that fails passes its input through and records the error", () =>
      Effect.gen(function*() {
        const wf = Workflow.make({ name: "skip", input: Schema.String }).pipe(
          Workflow.andThen(
            Step.skipOnError(
              Step.make("parse", (i: StepInput.StepInput<string>) =>
                i.previousStepContent.startsWith("#")
                  ? Effect.succeed(Number(i.previousStepContent.slice(1)))
                  : Effect.fail(new Boom({ reason: "no hash" })))
            )
          ),
          Workflow.andThen("show", ({ previousStepContent }) => Effect.succeed(`got ${previousStepContent}`))
        )
        expect((yield* Workflow.run(wf, "#7")).content).toBe("got 7")
        const skipped = yield* Workflow.run(wf, "plain")
        expect(skipped.content).toBe("got plain")
        const parse = skipped.stepOutputs.find((o) => o.stepName === "parse")!
        expect([parse.success, parse.content, parse.error]).toEqual([false, "plain", "Boom: boom: no hash"])
      }).pipe(memory))

    it.effect("a parallel block's content is a record by branch name; duplicate branch names are refused", () =>
      Effect.gen(function*() {
        const wf = Workflow.make({ name: "par", input: Schema.Number }).pipe(
          Workflow.andThen(Step.make("fan", (i: StepInput.StepInput<number>) => Effect.succeed(i.previousStepContent))),
          Workflow.andThen(Parallel.make("p", [
            Step.make("double", (i: StepInput.StepInput<number>) => Effect.succeed(i.previousStepContent * 2)),
            Step.make("label", (i: StepInput.StepInput<number>) => Effect.succeed(`n=${i.previousStepContent}`))
          ]))
        )
        const run = yield* Workflow.run(wf, 4)
        expect(run.content).toEqual({ double: 8, label: "n=4" })
        const twin = Step.make("twin", () => Effect.void)
        expect(() => Parallel.make("twins", [twin, twin])).toThrow("Parallel 'twins': two branches are named 'twin'")
      }).pipe(memory))
  })

  describe("workflows as steps", () => {
    const inner = cartWorkflow("inner").pipe(
      Workflow.andThen(addItem("add")),
      Workflow.andThen(
        "count",
        ({ previousStepOutputs, previousStepContent }) =>
          Effect.succeed({ count: previousStepContent, seen: Object.keys(previousStepOutputs) })
      )
    )
    const outer = cartWorkflow("outer").pipe(
      Workflow.andThen(
        Step.make("prepare", (i: StepInput.StepInput<unknown>) => Effect.succeed(String(i.input).toUpperCase()))
      ),
      Workflow.andThen(Step.workflow("nested", inner)),
      Workflow.andThen(
        "after",
        ({ previousStepContent, previousStepOutputs }) =>
          Effect.succeed(`${previousStepContent.count} item(s); before: ${Object.keys(previousStepOutputs).join(",")}`)
      )
    )

    const nestedRuns = Effect.gen(function*() {
      const first = yield* Workflow.run(outer, "milk", { sessionId: "n" })
      expect(first.content).toBe("1 item(s); before: prepare,nested")
      expect(first.state.items).toEqual(["MILK"])
      // the inner steps see only the inner workflow's earlier outputs
      expect(first.stepOutputs.map((o) => o.stepName)).toEqual(["prepare", "add", "count", "nested", "after"])
      expect(first.stepOutputs.find((o) => o.stepName === "count")!.content).toEqual({ count: 1, seen: ["add"] })
      const events = yield* collect(outer, "eggs", { sessionId: "n" })
      const started = events.flatMap((e) => e._tag === "StepStarted" ? [e.path.join(" > ")] : [])
      expect(started).toEqual(["prepare", "nested", "nested > add", "nested > count", "after"])
      const changed = events.find((e) => e._tag === "StateChanged")!
      expect(changed.path).toEqual(["nested", "add"])
      expect((yield* Workflow.getSessionState(outer, "n")).items).toEqual(["MILK", "EGGS"])
      expect(events.find((e) => e._tag === "StepStarted" && e.stepName === "nested")).toMatchObject({
        kind: "workflow"
      })
    })

    it.effect("share the outer state, nest their events, keep their own step outputs (memory)", () =>
      nestedRuns.pipe(memory))

    it.scoped("share the outer state, nest their events, keep their own step outputs (SQLite file)", () =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "sessionflow-nested-" })
        const store = SqliteSessionStore.layer({ filename: `${dir}/nested.db` })
        yield* nestedRuns.pipe(Effect.provide(store))
        // a new store on the same file reads what the nested steps committed
        const state = yield* Workflow.getSessionState(outer, "n").pipe(
          Effect.provide(SqliteSessionStore.layer({ filename: `${dir}/nested.db` }))
        )
        expect(state.items).toEqual(["MILK", "EGGS"])
      }).pipe(Effect.provide(NodeFileSystem.layer)))

    it.effect("a nested workflow's typed error fails the outer run, which commits nothing", () =>
      Effect.gen(function*() {
        const failing = cartWorkflow("failing").pipe(
          Workflow.andThen(addItem("add")),
          Workflow.andThen("fail", () => Effect.fail(new Boom({ reason: "inner" })))
        )
        const wf = cartWorkflow("outer-fail").pipe(Workflow.andThen(Step.workflow("nested", failing)))
        yield* Workflow.run(cartWorkflow("outer-fail"), "seed", { sessionId: "f" })
        const error = yield* Effect.flip(Workflow.run(wf, "tea", { sessionId: "f" }))
        expect(error).toBeInstanceOf(Boom)
        expect((yield* Workflow.getSessionState(wf, "f")).items).toEqual([])
        const [, failed] = yield* Workflow.getRunHistory(wf, "f")
        expect([failed!.status, failed!.error]).toEqual(["error", "Boom: boom: inner"])
        // the events keep the error's tag too
        const events = yield* Workflow.stream(wf, "jam", { sessionId: "f" }).pipe(
          Stream.either,
          Stream.runCollect,
          Effect.map((chunk) => Chunk.toReadonlyArray(chunk).flatMap((e) => e._tag === "Right" ? [e.right] : []))
        )
        expect(events.flatMap((e) => e._tag === "StepFailed" ? [`${e.stepName}: ${e.error}`] : [])).toEqual([
          "fail: Boom: boom: inner",
          "nested: Boom: boom: inner"
        ])
        expect(events.find((e) => e._tag === "RunFailed")).toMatchObject({ error: "Boom: boom: inner" })
      }).pipe(memory))

    it.effect("a nested workflow's input Schema decodes the previous content; a bad one is an InputDecodeError", () =>
      Effect.gen(function*() {
        const counted = Workflow.make({ name: "counted", input: Schema.NumberFromString }).pipe(
          Workflow.andThen("inc", ({ input }) => Effect.succeed(input + 1))
        )
        const wf = Workflow.make({ name: "outer", input: Schema.String, steps: [Step.workflow("count", counted)] })
        expect((yield* Workflow.run(wf, "41")).content).toBe(42)
        const error = yield* Effect.flip(Workflow.run(wf, "forty-one"))
        assert(error._tag === "InputDecodeError")
        expect(error.workflowName).toBe("counted")
      }).pipe(memory))
  })

  describe("session functions default to the workflow's sessionId", () => {
    it.effect("every session function uses it; with neither, SessionIdRequired", () =>
      Effect.gen(function*() {
        const fixed = Workflow.make({
          name: "fixed",
          sessionId: "the-session",
          input: Schema.String,
          state: Cart,
          sessionState: { items: [] }
        }).pipe(
          Workflow.andThen(addItem("add"))
        )
        yield* Workflow.run(fixed, "tea")
        expect((yield* Workflow.getSessionState(fixed)).items).toEqual(["tea"])
        expect((yield* Workflow.updateSessionState(fixed, undefined, (s) => ({ items: [...s.items, "jam"] }))).items)
          .toEqual(["tea", "jam"])
        expect(yield* Workflow.setSessionName(fixed, undefined, "breakfast")).toBe("breakfast")
        expect(yield* Workflow.getSessionName(fixed)).toEqual(Option.some("breakfast"))
        expect((yield* Workflow.getSession(fixed)).sessionId).toBe("the-session")
        expect((yield* Workflow.getRunHistory(fixed)).length).toBe(1)
        expect((yield* Workflow.getChatHistory(fixed)).map((t) => t.input)).toEqual(["tea"])
        yield* Workflow.deleteSession(fixed)
        expect((yield* Effect.flip(Workflow.getSessionState(fixed)))._tag).toBe("SessionNotFound")

        const floating = cartWorkflow("floating")
        const errors = yield* Effect.all([
          Effect.flip(Workflow.getSessionState(floating)),
          Effect.flip(Workflow.updateSessionState(floating, undefined, (s) => s)),
          Effect.flip(Workflow.setSessionName(floating, undefined, "x")),
          Effect.flip(Workflow.getSessionName(floating)),
          Effect.flip(Workflow.getSession(floating)),
          Effect.flip(Workflow.deleteSession(floating)),
          Effect.flip(Workflow.getRunHistory(floating)),
          Effect.flip(Workflow.getChatHistory(floating))
        ])
        for (const error of errors) {
          assert(error._tag === "SessionIdRequired")
          expect(error.workflowName).toBe("floating")
        }
        expect(errors.map((e) => e._tag === "SessionIdRequired" ? e.method : "")).toEqual([
          "getSessionState",
          "updateSessionState",
          "setSessionName",
          "getSessionName",
          "getSession",
          "deleteSession",
          "getRunHistory",
          "getChatHistory"
        ])
        expect(errors[0]!.message).toBe(
          "Workflow.getSessionState: no session id was given and workflow 'floating' has no sessionId"
        )
      }).pipe(memory))
  })

  describe("routers", () => {
    it.effect("the selector gets the router's choices and can pick by name among them", () =>
      Effect.gen(function*() {
        const offered: Array<Array<string>> = []
        const router = Router.make({
          name: "route",
          choices: [Step.make("small", () => Effect.succeed("S")), Step.make("large", () => Effect.succeed("L"))],
          selector: (input, choices) => {
            offered.push(choices.map((c) => c.name))
            return Effect.succeed(String(input.input).length > 3 ? choices[1] : "small")
          }
        })
        const wf = Workflow.make({ name: "routed", steps: [router] })
        expect((yield* Workflow.run(wf, "ok")).content).toBe("S")
        expect((yield* Workflow.run(wf, "longer")).content).toBe("L")
        expect(offered).toEqual([["small", "large"], ["small", "large"]])
      }).pipe(memory))
  })

  describe("history for conversations", () => {
    const echo = Workflow.make({ name: "echo", input: Schema.String }).pipe(
      Workflow.andThen(
        "reply",
        ({ input }) =>
          input === "fail" ? Effect.fail(new Boom({ reason: "asked to" })) : Effect.succeed(`echo: ${input}`)
      )
    )

    it.effect("getChatHistory returns the completed runs in order; lastRuns counts after leaving failed runs out", () =>
      Effect.gen(function*() {
        for (const input of ["one", "two", "fail", "three"]) {
          yield* Effect.exit(Workflow.run(echo, input, { sessionId: "chat" }))
        }
        const all = yield* Workflow.getChatHistory(echo, { sessionId: "chat" })
        expect(all.map((t) => [t.input, t.output])).toEqual([["one", "echo: one"], ["two", "echo: two"], [
          "three",
          "echo: three"
        ]])
        const last2 = yield* Workflow.getChatHistory(echo, { sessionId: "chat", lastRuns: 2 })
        expect(last2.map((t) => t.input)).toEqual(["two", "three"])
        expect(yield* Workflow.getChatHistory(echo, { sessionId: "chat", lastRuns: 0 })).toEqual([])
        const failed = yield* Workflow.getRunHistory(echo, "chat", { status: "error" })
        expect(failed.map((r) => r.error)).toEqual(["Boom: boom: asked to"])
      }).pipe(memory))

    it.effect("an agent with history gets the session's earlier runs as messages", () =>
      Effect.gen(function*() {
        const assistant = Agent.make({ name: "Assistant", instructions: "Be brief.", history: { lastRuns: 2 } })
        const forgetful = Agent.make({ name: "Forgetful", instructions: "Be brief." })
        const chat = (agent: typeof assistant | typeof forgetful) =>
          Workflow.make({ name: `chat-${agent.name}`, input: Schema.String, steps: [Step.agent("answer", agent)] })
        for (const input of ["My name is Ada.", "I like tea.", "What is my name?"]) {
          yield* Workflow.run(chat(assistant), input, { sessionId: "ada" })
        }
        yield* Workflow.run(chat(forgetful), "hello", { sessionId: "other" })
        yield* Workflow.run(chat(forgetful), "again", { sessionId: "other" })
        const prompts = (yield* TestModel.prompts).map(TestModel.render)
        expect(prompts[0]).toBe("system: Be brief.\nuser: My name is Ada.")
        expect(prompts[1]).toBe("system: Be brief.\nuser: My name is Ada.\nassistant: Hello Ada.\nuser: I like tea.")
        // the last two completed runs only
        expect(prompts[2]).toBe(
          "system: Be brief.\nuser: My name is Ada.\nassistant: Hello " +
            "Ada.\nuser: I like tea.\nassistant: Noted.\nuser: What is my name?"
        )
        expect(prompts[4]).toBe("system: Be brief.\nuser: again")
        // outside a workflow run there is no history
        yield* Agent.run(assistant, "standalone")
        expect((yield* TestModel.prompts).map(TestModel.render)[5]).toBe("system: Be brief.\nuser: standalone")
      }).pipe(
        Effect.provide(Layer.merge(
          SessionStore.layerMemory,
          TestModel.layer([
            TestModel.text("Hello Ada."),
            TestModel.text("Noted."),
            TestModel.text("Ada."),
            TestModel.text("Hi."),
            TestModel.text("Hi again."),
            TestModel.text("Standalone.")
          ])
        ))
      ))

    it.effect("history.lastRuns keeps only the most recent exchanges", () =>
      Effect.gen(function*() {
        const assistant = Agent.make({ name: "Short memory", history: { lastRuns: 1 } })
        const wf = Workflow.make({ name: "short", input: Schema.String, steps: [Step.agent("answer", assistant)] })
        for (const input of ["a", "b", "c"]) yield* Workflow.run(wf, input, { sessionId: "s" })
        expect((yield* TestModel.prompts).map(TestModel.render)[2]).toBe("user: b\nassistant: B\nuser: c")
        expect(() => Agent.make({ name: "bad", history: { lastRuns: -1 } })).toThrow(
          "Agent 'bad': history.lastRuns must be a non-negative integer, got -1"
        )
      }).pipe(
        Effect.provide(Layer.merge(
          SessionStore.layerMemory,
          TestModel.layer([TestModel.text("A"), TestModel.text("B"), TestModel.text("C")])
        ))
      ))
  })

  describe("loops", () => {
    const counter = Step.make("inc", (i: StepInput.StepInput<number>) => Effect.succeed(i.previousStepContent + 1))

    it.effect("a loop whose end condition never held says it is exhausted, in its output and its last event", () =>
      Effect.gen(function*() {
        const loop = Loop.make({
          name: "count",
          steps: [counter],
          maxIterations: 3,
          endCondition: (outputs) => Effect.succeed(outputs[0]!.content === 100)
        })
        const wf = Workflow.make({ name: "loop", input: Schema.Number, steps: [loop] })
        const events = yield* collect(wf, 0)
        const iterations = events.flatMap((e) =>
          e._tag === "LoopIterationCompleted" ? [[e.iteration, e.done, e.exhausted]] : []
        )
        expect(iterations).toEqual([[1, false, false], [2, false, false], [3, true, true]])
        const run = yield* Workflow.run(wf, 0)
        expect(run.content).toBe(3)
        const output = run.stepOutputs.find((o) => o.stepName === "count")!
        expect([output.exhausted, output.success]).toEqual([true, true])
        // an end condition that held: not exhausted
        const ends = Workflow.make({
          name: "ends",
          input: Schema.Number,
          steps: [
            Loop.make({ name: "count", steps: [counter], endCondition: (o) => Effect.succeed(o[0]!.content === 2) })
          ]
        })
        const ended = yield* Workflow.run(ends, 0)
        expect(ended.content).toBe(2)
        expect(ended.stepOutputs.find((o) => o.stepName === "count")!.exhausted).toBeUndefined()
        // no end condition: a fixed count of iterations (3 by default), never exhausted
        const fixed = Workflow.make({
          name: "fixed",
          input: Schema.Number,
          steps: [Loop.make({ name: "count", steps: [counter] })]
        })
        const fixedRun = yield* Workflow.run(fixed, 0)
        expect(fixedRun.content).toBe(Loop.defaultMaxIterations)
        expect(fixedRun.stepOutputs.find((o) => o.stepName === "count")!.exhausted).toBeUndefined()
      }).pipe(memory))

    it.effect("onExhausted: \"fail\" turns exhaustion into a typed LoopExhausted error, committing nothing", () =>
      Effect.gen(function*() {
        const wf = cartWorkflow("strict-loop").pipe(
          Workflow.andThen(Loop.make({
            name: "fill",
            steps: [Step.make("add", () => Cart.update((s) => ({ items: [...s.items, "x"] })))],
            maxIterations: 2,
            endCondition: () => Effect.map(Cart.get, (s) => s.items.length > 5),
            onExhausted: "fail"
          }))
        )
        const exit = yield* Effect.exit(Workflow.run(wf, "go", { sessionId: "l" }))
        assert(Exit.isFailure(exit))
        const error = yield* Effect.flip(Workflow.run(wf, "go", { sessionId: "l" }))
        assert(error instanceof WorkflowError.LoopExhausted)
        expect(error.message).toBe("Loop 'fill' reached its maximum of 2 iterations before its end condition held")
        // the failed runs are recorded; the state is still the seed
        expect((yield* Workflow.getSessionState(wf, "l")).items).toEqual([])
        expect((yield* Workflow.getRunHistory(wf, "l")).map((r) => r.error)).toEqual([
          "LoopExhausted: Loop 'fill' reached its maximum of 2 iterations before its end condition held",
          "LoopExhausted: Loop 'fill' reached its maximum of 2 iterations before its end condition held"
        ])
        expect(() => Loop.make({ name: "zero", steps: [counter], maxIterations: 0 })).toThrow(
          "Loop 'zero': maxIterations must be a positive integer, got 0"
        )
      }).pipe(memory))
  })

  describe("custom containers", () => {
    // a container of our own: runs its step until the output is even (at most 5 times)
    const untilEven = <E, R, I>(name: string, step: Step.Step<number, E, R, number, I>) =>
      Step.container(name, (input: StepInput.StepInput<number, I>, runner) =>
        Effect.gen(function*() {
          let previous = input.previousStepContent
          for (let i = 0; i < 5; i++) {
            const output = yield* runner.run(step, {
              ...input,
              previousStepContent: previous,
              previousStepOutputs: runner.outputs()
            })
            previous = output.content
            if (output.content % 2 === 0) break
          }
          return StepOutput.make({ content: previous, success: previous % 2 === 0 })
        }))

    it.effect("Step.container runs children with their events and recorded outputs, typed by what it returns", () =>
      Effect.gen(function*() {
        const add3 = Step.make("add3", (i: StepInput.StepInput<number>) => Effect.succeed(i.previousStepContent + 3))
        const container = untilEven("until-even", add3)
        expectTypeOf(container).toEqualTypeOf<Step.Step<number, never, never, number, unknown, string>>()
        const wf = Workflow.make({ name: "custom", input: Schema.Number, steps: [container] })
        const events = yield* collect(wf, 1)
        expect(events.filter((e) => e._tag === "StepStarted").map((e) => e.path.join(" > "))).toEqual([
          "until-even",
          "until-even > add3"
        ])
        const run = yield* Workflow.run(wf, 2)
        expect(run.content).toBe(8)
        expect(run.stepOutputs.map((o) => [o.stepName, o.content])).toEqual([["add3", 5], ["add3", 8], [
          "until-even",
          8
        ]])
        expect(events.find((e) => e._tag === "StepStarted" && e.stepName === "until-even")).toMatchObject({
          kind: "container"
        })
      }).pipe(memory))

    it.effect("Step.container's errors and requirements come from the Effect it returns", () =>
      Effect.gen(function*() {
        const failing = Step.container("checked", (input: StepInput.StepInput<string>) =>
          input.previousStepContent === ""
            ? Effect.fail(new Boom({ reason: "empty" }))
            : Effect.succeed(input.previousStepContent))
        const wf = Workflow.make({ name: "checked", input: Schema.String, steps: [failing] })
        const error = yield* Effect.flip(Workflow.run(wf, ""))
        expect(error).toBeInstanceOf(Boom)
      }).pipe(memory))
  })
})
