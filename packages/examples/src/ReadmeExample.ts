import { Condition, SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { Effect, Schema } from "effect"

// A typed session state: a Context tag carrying its Schema.
class Greeting extends SessionState.Tag("Greeting")<Greeting>()({
  greeted: Schema.Boolean,
  count: Schema.Number
}) {}

const greet = Step.make(
  "greet",
  () => Greeting.modify((s) => [`Hello! (greeting #${s.count + 1})`, { greeted: true, count: s.count + 1 }])
)

const answer = Step.make("answer", (input) => Effect.succeed(`You said: ${input.input}`))

export const greeter = Workflow.make({
  name: "greeter",
  state: Greeting,
  sessionState: { greeted: false, count: 0 },
  steps: [
    Condition.make({
      name: "new user?",
      evaluator: () => Greeting.get.pipe(Effect.map((s) => !s.greeted)),
      steps: [greet]
    }),
    answer
  ]
})

export const program = Effect.gen(function*() {
  yield* Workflow.run(greeter, "hi", { sessionId: "user-1" })
  yield* Workflow.run(greeter, "hi again", { sessionId: "user-1" })
  return yield* Workflow.getSessionState(greeter, "user-1") // { greeted: true, count: 1 }
}).pipe(Effect.provide(SessionStore.layerMemory))
