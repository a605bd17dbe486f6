import { Router, SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { Effect, Schema } from "effect"

class Desk extends SessionState.Tag("Desk")<Desk>()({ tickets: Schema.Array(Schema.String) }) {}

const answer = Step.make("answer", (input) => Effect.succeed(`Answered: ${input.input}`))
const escalate = Step.make(
  "escalate",
  (input) =>
    Desk.modify((
      s
    ) => [`Ticket #${s.tickets.length + 1}: ${input.input}`, { tickets: [...s.tickets, `${input.input}`] }])
)

export const desk = Workflow.make({
  name: "desk",
  state: Desk,
  sessionState: { tickets: [] },
  steps: [
    Router.make({
      name: "triage",
      choices: [answer, escalate],
      // This selector is an Effect, so it may read the state. It returns a step, a step's name,
      // or several steps to run in order.
      selector: (input) =>
        Effect.map(
          Desk.get,
          (s) => `${input.input}`.startsWith("urgent") && s.tickets.length === 0 ? [answer, escalate] : "answer"
        )
    })
  ]
})

export const routerProgram = Effect.gen(function*() {
  const first = yield* Workflow.run(desk, "urgent: the site is down", { sessionId: "desk-1" })
  const second = yield* Workflow.run(desk, "urgent: still down", { sessionId: "desk-1" })
  return [first.content, second.content] // ["Ticket #1: urgent: the site is down", "Answered: urgent: still down"]
}).pipe(Effect.provide(SessionStore.layerMemory))
