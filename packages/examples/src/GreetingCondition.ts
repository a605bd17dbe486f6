/**
 * Scenario 4 — a condition on the session state greets new users once
 * (agno's `state_in_condition`). "Check If New User" reads
 * `has_been_greeted`; when false it runs "Greet User" (an agent) and "Mark as
 * Greeted" (a function that sets the flag and counts greetings); "Handle
 * Query" (an agent) always answers. The session is the user's (`user-123`),
 * so the greeting happens on the first run only — also across processes.
 *
 * @since 0.1.0
 */
import { Agent, Condition, RunContext, SessionState, Step, Workflow, WorkflowEvent } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { offlineModel } from "./GreetingCondition.offline.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

export { offlineModel } from "./GreetingCondition.offline.js"

// the user, whose id is also the session id
export const USER_ID = "user-123"

// -- state -------------------------------------------------------------------

export class Greeting extends SessionState.Tag("@sessionflow/examples/Greeting")<Greeting>()({
  has_been_greeted: Schema.Boolean,
  greeting_count: Schema.Number
}) {}

// -- agents ------------------------------------------------------------------

export const greeter = Agent.make({ name: "Greeter", instructions: "Greet the user warmly and introduce yourself." })

export const contextualAssistant = Agent.make({
  name: "Contextual Assistant",
  instructions: "Continue the conversation with context. You already know the user."
})

// -- steps -------------------------------------------------------------------

// the evaluator prints what it sees: the user and session (from the run context, never from the state) and the flag
export const isNewUser: Effect.Effect<boolean, never, Greeting | RunContext.RunContext> = Effect.gen(function*() {
  const run = yield* RunContext.RunContext
  const state = yield* Greeting.get
  yield* WorkflowEvent.log(
    `[condition] user ${run.userId ?? "(none)"}, session ${run.sessionId}, has been greeted: ${state.has_been_greeted}`
  )
  return !state.has_been_greeted
})

export const markAsGreeted = Step.make(
  "Mark as Greeted",
  () =>
    Greeting.modify((s) => {
      const next = { has_been_greeted: true, greeting_count: s.greeting_count + 1 }
      return [`User has been greeted. Total greetings: ${next.greeting_count}`, next]
    }),
  { description: "Mark user as greeted in session" }
)

// greets (and marks) a new user; a known one goes straight to the query
export const checkIfNewUser = Condition.make({
  name: "Check If New User",
  description: "Check if this is a new user who needs greeting",
  evaluator: () => isNewUser,
  steps: [Step.agent("Greet User", greeter, { description: "Greet the new user" }), markAsGreeted]
})

export const handleQuery = Step.agent("Handle Query", contextualAssistant, {
  description: "Handle the user's query with or without greeting",
  // the query itself, not the previous step's output
  message: (input) => input.input
})

// -- workflow ----------------------------------------------------------------

export const greetingWorkflow = Workflow.make({
  name: "Conditional Greeting Workflow",
  state: Greeting,
  sessionState: { has_been_greeted: false, greeting_count: 0 },
  steps: [checkIfNewUser, handleQuery]
})

// -- main: two messages on the user's session -----------------------------------

export const inputs = ["Hi, can you help me with something?", "Tell me a joke"] as const

const headings = ["First Run - New User (the condition greets)", "Second Run - Same Session (greeting skipped)"]

export const scenario = Scenario.make({
  name: "condition",
  cookbook: "state_in_condition",
  aliases: ["greeting", "greeting-condition", "greet"],
  description: "A condition on the state greets a new user once; later runs skip the greeting",
  workflows: [greetingWorkflow],
  offlineModel,
  layer: Layer.empty
}, ({ db }) =>
  Effect.gen(function*() {
    const user = { sessionId: USER_ID, userId: USER_ID }
    const existing = yield* Effect.option(Workflow.getSessionState(greetingWorkflow, USER_ID, user))
    if (Option.isSome(existing) && existing.value.has_been_greeted) {
      yield* Output.note(`${USER_ID} was already greeted in an earlier run (state from ${db}): no greeting this time.`)
    }
    for (const [i, input] of inputs.entries()) {
      yield* Output.heading(headings[i]!)
      yield* Workflow.stream(greetingWorkflow, input, user).pipe(Output.print)
      yield* Output.state("Workflow session state", yield* Workflow.getSessionState(greetingWorkflow, USER_ID, user))
    }
  }))

export const main = scenario.main
