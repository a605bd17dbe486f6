/**
 * Type-level tests of typed step data: `tsc -b` (part of `npm test`) fails if
 * a `@ts-expect-error` below stops being an error or an `expectTypeOf` stops
 * holding. The runtime assertions check the values behind the types.
 */
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
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
  type WorkflowError
} from "@sessionflow/core"
import { Context, Effect, Layer, Schema } from "effect"

class Cart extends SessionState.Tag("types/Cart")<Cart>()({ items: Schema.Array(Schema.String) }) {}
class Other extends SessionState.Tag("types/Other")<Other>()({ items: Schema.Array(Schema.String) }) {}
class Settings extends SessionState.Tag("types/Settings")<Settings>()({
  theme: Schema.optionalWith(Schema.String, { default: () => "light" })
}) {}
class Boom extends Schema.TaggedError<Boom>()("Boom", {}) {}
class Db extends Context.Tag("types/Db")<Db, { readonly n: number }>() {}

const Order = Schema.Struct({ item: Schema.String, quantity: Schema.Number })
type Order = typeof Order.Type

const toLength = Step.make(
  "length",
  (input: StepInput.StepInput<string>) => Effect.succeed(input.previousStepContent.length)
)
const needsNumber = Step.make(
  "double",
  (input: StepInput.StepInput<number>) => Effect.succeed(input.previousStepContent * 2)
)
const needsString = Step.make(
  "shout",
  (input: StepInput.StepInput<string>) => Effect.succeed(input.previousStepContent.toUpperCase())
)
const yieldsString = Step.make("text", () => Effect.succeed("hello"))

// -- a step's output type is part of its type -----------------------------------
expectTypeOf(toLength).toEqualTypeOf<Step.Step<number, never, never, string, unknown, "length">>()
expectTypeOf<Step.Output<typeof toLength>>().toEqualTypeOf<number>()
// a StepOutput's content type is the step's output type
const controlled = Step.make("controlled", () => Effect.succeed(StepOutput.stop({ done: true })))
expectTypeOf<Step.Output<typeof controlled>>().toEqualTypeOf<{ done: boolean }>()

// -- tuples: each step must accept what the one before produces ----------------
const tupled = Workflow.make({ name: "tuple", input: Schema.String, steps: [toLength, needsNumber] })
expectTypeOf<Workflow.Output<typeof tupled>>().toEqualTypeOf<number>()
// @ts-expect-error a step that needs a number after a step that yields a string
Workflow.make({ name: "mismatch", steps: [yieldsString, needsNumber] })
// @ts-expect-error the first step receives the run input: a string step cannot take a number input
Workflow.make({ name: "bad-first", input: Schema.Number, steps: [needsString] })

// -- the builder types each inline step from the one before ---------------------
const built = Workflow.make({ name: "built", input: Schema.String }).pipe(
  Workflow.andThen("parse", ({ input, previousStepContent }) => {
    expectTypeOf(input).toEqualTypeOf<string>()
    expectTypeOf(previousStepContent).toEqualTypeOf<string>()
    return Effect.succeed<Order>({ item: input, quantity: 2 })
  }),
  Workflow.andThen("total", ({ previousStepContent: order }) => Effect.succeed(order.quantity * 10)),
  Workflow.andThen(needsNumber)
)
expectTypeOf<Workflow.Output<typeof built>>().toEqualTypeOf<number>()
Workflow.make({ name: "built-bad" }).pipe(
  Workflow.andThen("text", () => Effect.succeed("x")),
  // @ts-expect-error needsNumber cannot follow a string
  Workflow.andThen(needsNumber)
)

// -- Workflow.run returns the last step's type as content; input is the Schema's encoded type
export const runContent: Effect.Effect<
  Workflow.RunOutput<number, SessionState.State>,
  Workflow.RunError,
  SessionStore.SessionStore
> = Workflow.run(built, "apples")
// @ts-expect-error the run input must be the input Schema's encoded type
Workflow.run(built, 42)

// -- containers compute their output types ---------------------------------------
const seq = Steps("seq")
function Steps(name: string) {
  return Workflow.make({ name, steps: [yieldsString, toLength] })
}
expectTypeOf<Workflow.Output<typeof seq>>().toEqualTypeOf<number>()

// Condition: its branch's output, or the content it received when skipped
const condition = Condition.make({ name: "c", evaluator: () => Effect.succeed(true), steps: [toLength] })
const afterCondition = Workflow.make({ name: "cond", steps: [yieldsString, condition] })
expectTypeOf<Workflow.Output<typeof afterCondition>>().toEqualTypeOf<number | string>()
const withElse = Condition.make({
  name: "c2",
  evaluator: () => Effect.succeed(true),
  steps: [toLength],
  elseSteps: [Step.make("flag", () => Effect.succeed(false))]
})
const afterElse = Workflow.make({ name: "else", steps: [yieldsString, withElse] })
expectTypeOf<Workflow.Output<typeof afterElse>>().toEqualTypeOf<number | boolean>()
// @ts-expect-error a condition whose steps need a string cannot follow a number
Workflow.make({ name: "cond-bad", steps: [Step.make("n", () => Effect.succeed(1)), condition] })

// Router: the union of its choices' outputs; the selector gets the choices, typed
const router = Router.make({
  name: "r",
  choices: [yieldsString, Step.make("n", () => Effect.succeed(1))],
  selector: (_input, choices) => {
    expectTypeOf(choices[0].name).toEqualTypeOf<"text">()
    expectTypeOf(choices[1].name).toEqualTypeOf<"n">()
    return Effect.succeed(choices[1])
  }
})
expectTypeOf<Step.Output<typeof router>>().toEqualTypeOf<string | number>()
// @ts-expect-error a selector returns one of the router's choices (or a name), not another step
Router.make({ name: "r2", choices: [yieldsString], selector: () => Effect.succeed(needsNumber) })
// a selector may return the choice as a plain value: no error and no requirement added
const plainRouter = Router.make({
  name: "r3",
  choices: [yieldsString, Step.make("n", () => Effect.succeed(1))],
  selector: () => "n"
})
expectTypeOf<Step.Output<typeof plainRouter>>().toEqualTypeOf<string | number>()
expectTypeOf<Step.Error<typeof plainRouter>>().toEqualTypeOf<WorkflowError.RouterChoiceError>()
expectTypeOf<Step.Context<typeof plainRouter>>().toEqualTypeOf<never>()
// an Effect selector keeps its error and requirements
class Picker extends Context.Tag("Picker")<Picker, { readonly pick: string }>() {}
const effectRouter = Router.make({
  name: "r4",
  choices: [yieldsString],
  selector: () => Effect.flatMap(Picker, (p) => p.pick === "" ? Effect.fail("empty" as const) : Effect.succeed(p.pick))
})
expectTypeOf<Step.Error<typeof effectRouter>>().toEqualTypeOf<"empty" | WorkflowError.RouterChoiceError>()
expectTypeOf<Step.Context<typeof effectRouter>>().toEqualTypeOf<Picker>()
// @ts-expect-error a plain selection is still one of the router's choices
Router.make({ name: "r5", choices: [yieldsString], selector: () => needsNumber })

// Parallel: a record by branch name
const parallel = Parallel.make("p", [yieldsString, Step.make("n", () => Effect.succeed(1))])
expectTypeOf<Step.Output<typeof parallel>>().toEqualTypeOf<{ readonly text: string; readonly n: number }>()

// Loop: its body's last output; the body must accept its own output
const loop = Loop.make({
  name: "l",
  steps: [Step.make("inc", (i: StepInput.StepInput<number>) => Effect.succeed(i.previousStepContent + 1))]
})
const afterLoop = Workflow.make({ name: "loop", input: Schema.Number, steps: [loop] })
expectTypeOf<Workflow.Output<typeof afterLoop>>().toEqualTypeOf<number>()
// a body that turns a number into a string cannot run again on its own output
Loop.make({
  name: "l2",
  // @ts-expect-error
  steps: [Step.make("s", (i: StepInput.StepInput<number>) => Effect.succeed(String(i.previousStepContent)))]
})

// -- agents: the output Schema's type, else string -------------------------------
const writer = Agent.make({ name: "writer" })
const extractor = Agent.make({ name: "extractor", outputSchema: Order })
expectTypeOf<Step.Output<ReturnType<typeof Step.agent<"w", string, never, never>>>>().toEqualTypeOf<string>()
const agents = Workflow.make({ name: "agents", steps: [Step.agent("write", writer), Step.agent("extract", extractor)] })
expectTypeOf<Workflow.Output<typeof agents>>().toEqualTypeOf<Order>()

// -- skipOnError removes the step's error from the workflow's E -----------------
const failing = Step.make(
  "failing",
  (i: StepInput.StepInput<string>) => i.previousStepContent === "" ? Effect.fail(new Boom()) : Effect.succeed(1)
)
const skipping = Workflow.make({ name: "skip", input: Schema.String, steps: [Step.skipOnError(failing)] })
expectTypeOf<Workflow.Error<typeof skipping>>().toEqualTypeOf<never>()
expectTypeOf<Workflow.Output<typeof skipping>>().toEqualTypeOf<number | string>()
const notSkipping = Workflow.make({ name: "no-skip", input: Schema.String, steps: [failing] })
expectTypeOf<Workflow.Error<typeof notSkipping>>().toEqualTypeOf<Boom>()

// -- loops that exhaust: a typed error only when asked for -----------------------
const body = [Step.make("tick", () => Effect.void)] as const
const quiet = Loop.make({ name: "q", steps: body, endCondition: () => Effect.succeed(false) })
expectTypeOf<Step.Error<typeof quiet>>().toEqualTypeOf<never>()
const strict = Loop.make({ name: "s", steps: body, endCondition: () => Effect.succeed(false), onExhausted: "fail" })
expectTypeOf<Step.Error<typeof strict>>().toEqualTypeOf<WorkflowError.LoopExhausted>()

// -- nested workflows -------------------------------------------------------------
const inner = Workflow.make({ name: "inner", state: Cart, sessionState: { items: [] }, input: Schema.String }).pipe(
  Workflow.andThen("add", ({ input }) => Cart.update((s) => ({ items: [...s.items, input] }))),
  Workflow.andThen("count", () => Effect.map(Cart.get, (s) => s.items.length))
)
const outer = Workflow.make({ name: "outer", state: Cart, sessionState: { items: [] }, input: Schema.String }).pipe(
  Workflow.andThen(Step.workflow("nested", inner))
)
expectTypeOf<Workflow.Output<typeof outer>>().toEqualTypeOf<number>()
expectTypeOf<Workflow.Error<typeof outer>>().toEqualTypeOf<WorkflowError.InputDecodeError>()
expectTypeOf<Workflow.Context<typeof outer>>().toEqualTypeOf<never>()
// an inner workflow whose typed state differs from the outer one leaves its state tag required
const otherOuter = Workflow.make({ name: "other", state: Other, sessionState: { items: [] }, input: Schema.String })
  .pipe(
    Workflow.andThen(Step.workflow("nested", inner))
  )
expectTypeOf<Workflow.Context<typeof otherOuter>>().toEqualTypeOf<Cart>()
// @ts-expect-error so running it without that tag does not compile
export const otherRun: Effect.Effect<unknown, unknown, SessionStore.SessionStore> = Workflow.run(otherOuter, "x")
// the nested workflow's input is a string: it cannot follow a number
Workflow.make({
  name: "nested-bad",
  state: Cart,
  sessionState: { items: [] },
  // @ts-expect-error
  steps: [Step.make("n", () => Effect.succeed(1)), Step.workflow("nested", inner)]
})

// -- requirements and errors still flow up exactly -------------------------------
const withDb = Workflow.make({ name: "db", state: Cart, sessionState: { items: [] } }).pipe(
  Workflow.andThen("read", () => Effect.flatMap(Db, (db) => Effect.map(Cart.get, (s) => s.items.length + db.n))),
  Workflow.andThen("check", ({ previousStepContent: n }) => n > 0 ? Effect.succeed(n) : Effect.fail(new Boom()))
)
expectTypeOf<Workflow.Context<typeof withDb>>().toEqualTypeOf<Db>()
expectTypeOf<Workflow.Error<typeof withDb>>().toEqualTypeOf<Boom>()

// -- no seed, no compile ------------------------------------------------------------
// @ts-expect-error Cart cannot decode {}: a seed is required
Workflow.make({ name: "no-seed", state: Cart, steps: [] })
// a state whose Schema decodes {} needs none
export const settings = Workflow.make({ name: "settings", state: Settings, steps: [] })

// -- session functions fall back to the workflow's sessionId ---------------------
export const fallback: Effect.Effect<
  { readonly items: ReadonlyArray<string> },
  Workflow.SessionError | WorkflowError.StateDecodeError,
  SessionStore.SessionStore
> = Workflow.getSessionState(outer)

describe("typed pipelines (values behind the types)", () => {
  it.effect("the builder's typed steps compute the typed result", () =>
    Effect.gen(function*() {
      const run = yield* Workflow.run(built, "apples")
      expect(run.content).toBe(40)
      const skipped = yield* Workflow.run(skipping, "")
      expect(skipped.content).toBe("")
      const nested = yield* Workflow.run(outer, "milk", { sessionId: "types-nested" })
      expect(nested.content).toBe(1)
      expect(nested.state.items).toEqual(["milk"])
      expect((yield* Workflow.run(agents, "write")).content).toEqual({ item: "tea", quantity: 3 })
    }).pipe(
      Effect.provide(Layer.merge(
        SessionStore.layerMemory,
        TestModel.layer([TestModel.text("Tea, three."), TestModel.object({ item: "tea", quantity: 3 })])
      ))
    ))
})
