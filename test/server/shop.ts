/**
 * A workflow with every kind of container, for the tests of the step tree
 * route and of the page that draws it: an order (an object input of simple
 * fields) checked by a condition, routed, counted in a loop, announced by two
 * parallel branches and recorded by a nested workflow, each step changing the
 * state.
 */
import { Condition, Loop, Parallel, Router, SessionState, Step, type StepInput, Workflow } from "@sessionflow/core"
import { Effect, Schema } from "effect"

class Shop extends SessionState.Tag("test/server/Shop")<Shop>()({
  log: Schema.Array(Schema.String),
  total: Schema.Number
}) {}

const Order = Schema.Struct({ item: Schema.String, quantity: Schema.Number, express: Schema.Boolean })

type OrderIn = typeof Order.Type

const log = (name: string) => Shop.update((s) => ({ ...s, log: [...s.log, name] }))

/** A step that logs its name and passes its input on. */
const logged = (name: string) =>
  Step.make(
    name,
    ({ previousStepContent }: StepInput.StepInput<unknown, OrderIn>) => Effect.as(log(name), previousStepContent)
  )

const record = Workflow.make({
  name: "record",
  state: Shop,
  sessionState: { log: [], total: 0 },
  steps: [Step.make("write", ({ previousStepContent }) => Effect.as(log("write"), previousStepContent))]
})

export const shop = Workflow.make({
  name: "shop",
  description: "Takes an order",
  input: Order,
  state: Shop,
  sessionState: { log: [], total: 0 },
  steps: [
    Step.make(
      "price",
      ({ input }: { readonly input: OrderIn }) =>
        Effect.as(Shop.update((s) => ({ ...s, total: s.total + input.quantity * 3 })), input)
    ),
    Condition.make({
      name: "bulk?",
      evaluator: ({ input }) => Effect.succeed(input.quantity >= 10),
      steps: [logged("bulk discount")],
      elseSteps: [logged("single price")]
    }),
    Router.make({
      name: "ship",
      choices: [logged("courier"), logged("post")],
      selector: ({ input }) => (input.express ? "courier" : "post")
    }),
    Loop.make({ name: "pack", steps: [logged("box")], maxIterations: 2 }),
    Parallel.make("notify", [logged("email"), logged("sms")]),
    Step.workflow("book", record)
  ]
})
