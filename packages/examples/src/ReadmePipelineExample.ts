import { Agent, SessionState, SessionStore, Step, TestModel, Workflow } from "@sessionflow/core"
import { Effect, Layer, Schema } from "effect"

const Order = Schema.Struct({ item: Schema.String, quantity: Schema.Int })

// A typed session state: a Context tag carrying its Schema.
class Orders extends SessionState.Tag("Orders")<Orders>()({ orders: Schema.Array(Order) }) {}

// An agent with structured output: its step yields an `Order`, not text.
const extractor = Agent.make({ name: "Extractor", instructions: "Extract the order.", outputSchema: Order })

// Each step receives the previous step's output, typed; a mismatch does not compile.
export const orders = Workflow.make({
  name: "orders",
  input: Schema.String, // the run input, decoded at the start of every run
  state: Orders,
  sessionState: { orders: [] }
}).pipe(
  Workflow.andThen(Step.agent("extract", extractor)), // string -> Order
  Workflow.andThen("save", ({ previousStepContent: order }) =>
    // order: { item: string; quantity: number }
    Orders.modify((s) => [s.orders.length + 1, { orders: [...s.orders, order] }])),
  Workflow.andThen("confirm", ({ input, previousStepContent: count }) =>
    // input: string, count: number
    Effect.succeed(`Order #${count} saved: "${input}"`))
)

export const pipelineProgram = Effect.gen(function*() {
  const run = yield* Workflow.run(orders, "Two coffees, please", { sessionId: "shop" })
  return run.content // string: 'Order #1 saved: "Two coffees, please"'
}).pipe(Effect.provide(Layer.merge(
  SessionStore.layerMemory,
  TestModel.layer([TestModel.object({ item: "coffee", quantity: 2 })]) // a scripted model
)))
