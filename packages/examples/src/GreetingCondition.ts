/**
 * Scenario 4 — a condition on the session state greets new users once
 * (agno's `state_in_condition`).
 *
 * "Check If New User" reads `has_been_greeted`; when false it runs "Greet User"
 * (an agent) and "Mark as Greeted" (a function that sets the flag and counts
 * greetings); "Handle Query" (an agent) always answers. The session is the
 * user's (`user-123`), so the greeting happens on the first run only — also
 * across processes.
 *
 * @since 0.1.0
 */
import { Agent, Condition, RunContext, SessionState, Step, TestModel, Workflow, WorkflowEvent } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

/**
 * @since 0.1.0
 * @category state
 */
export class Greeting extends SessionState.Tag("@sessionflow/examples/Greeting")<Greeting>()({
  has_been_greeted: Schema.Boolean,
  greeting_count: Schema.Number
}) {}

/**
 * The user, whose id is also the session id.
 *
 * @since 0.1.0
 * @category constants
 */
export const USER_ID = "user-123"

/**
 * The two messages.
 *
 * @since 0.1.0
 * @category inputs
 */
export const inputs = ["Hi, can you help me with something?", "Tell me a joke"] as const

/**
 * @since 0.1.0
 * @category agents
 */
export const greeter = Agent.make({
  name: "Greeter",
  instructions: "Greet the user warmly and introduce yourself."
})

/**
 * @since 0.1.0
 * @category agents
 */
export const contextualAssistant = Agent.make({
  name: "Contextual Assistant",
  instructions: "Continue the conversation with context. You already know the user."
})

/**
 * The evaluator's check, printing what it sees: the user and session (from
 * the run context, never from the state) and the flag.
 *
 * @since 0.1.0
 * @category steps
 */
export const isNewUser: Effect.Effect<boolean, never, Greeting | RunContext.RunContext> = Effect.gen(function*() {
  const run = yield* RunContext.RunContext
  const state = yield* Greeting.get
  yield* WorkflowEvent.log(
    `[condition] user ${run.userId ?? "(none)"}, session ${run.sessionId}, has been greeted: ${state.has_been_greeted}`
  )
  return !state.has_been_greeted
})

/**
 * "Mark as Greeted".
 *
 * @since 0.1.0
 * @category steps
 */
export const markAsGreeted = Step.make(
  "Mark as Greeted",
  () =>
    Greeting.modify((s) => {
      const next = { has_been_greeted: true, greeting_count: s.greeting_count + 1 }
      return [`User has been greeted. Total greetings: ${next.greeting_count}`, next]
    }),
  { description: "Mark user as greeted in session" }
)

/**
 * @since 0.1.0
 * @category workflows
 */
export const greetingWorkflow = Workflow.make({
  name: "Conditional Greeting Workflow",
  state: Greeting,
  sessionState: { has_been_greeted: false, greeting_count: 0 },
  steps: [
    Condition.make({
      name: "Check If New User",
      description: "Check if this is a new user who needs greeting",
      evaluator: () => isNewUser,
      steps: [
        Step.agent("Greet User", greeter, { description: "Greet the new user" }),
        markAsGreeted
      ]
    }),
    Step.agent("Handle Query", contextualAssistant, {
      description: "Handle the user's query with or without greeting",
      // the query itself, not the previous step's output
      message: (input) => input.input
    })
  ]
})

// -----------------------------------------------------------------------------
// the offline model
// -----------------------------------------------------------------------------

const jokes = [
  "Why do programmers prefer dark mode? Because light attracts bugs.",
  "I told my computer I needed a break, and it said: no problem, I'll go to sleep."
]

const answer = (message: string): string => {
  const text = message.toLowerCase()
  if (text.includes("joke")) return `Here's one for you: ${jokes[text.length % jokes.length]}`
  if (/\bhelp\b/.test(text)) return "Of course! Tell me what you're working on and we'll sort it out together."
  if (/\b(thanks|thank you)\b/.test(text)) return "You're welcome — happy to help any time."
  return `Good question. Here's my short take on "${message.trim()}": start small, check the result, then iterate.`
}

/**
 * The scripted model: the greeter welcomes, the assistant answers the query
 * (a joke when asked for one).
 *
 * @since 0.1.0
 * @category offline
 */
export const offlineModel = TestModel.layer((request) =>
  request.agent === "Greeter"
    ? TestModel.text("Hello and welcome! I'm your assistant — nice to meet you. I'm here whenever you need a hand.")
    : TestModel.text(answer(request.lastUserMessage ?? ""))
)

// -----------------------------------------------------------------------------
// main
// -----------------------------------------------------------------------------

/**
 * Runs the two messages on the user's session, printing the state after each.
 *
 * @since 0.1.0
 * @category main
 */
export const main = (options: Scenario.Options = {}): Effect.Effect<void, unknown> =>
  Effect.gen(function*() {
    const db = options.db ?? Scenario.defaultDb("condition")
    const model = yield* Scenario.chooseModel(offlineModel, options)
    yield* Effect.gen(function*() {
      const existing = yield* Effect.option(Workflow.getSessionState(greetingWorkflow, USER_ID, { userId: USER_ID }))
      if (Option.isSome(existing) && existing.value.has_been_greeted) {
        yield* Output.note(`${USER_ID} was already greeted in an earlier run (state from ${db}): no greeting this time.`)
      }
      for (const [i, input] of inputs.entries()) {
        yield* Output.heading(
          i === 0 ? "First Run - New User (the condition greets)" : "Second Run - Same Session (greeting skipped)"
        )
        yield* Scenario.runShown(greetingWorkflow, input, { sessionId: USER_ID, userId: USER_ID })
        yield* Output.state(
          "Workflow session state",
          yield* Workflow.getSessionState(greetingWorkflow, USER_ID, { userId: USER_ID })
        )
      }
    }).pipe(Effect.provide(Layer.merge(model, Scenario.storeLayer(options, db))))
  }).pipe(Output.withConsole)

/**
 * @since 0.1.0
 * @category scenario
 */
export const scenario: Scenario.Scenario = {
  name: "condition",
  aliases: ["greeting", "greeting-condition", "greet"],
  cookbook: "state_in_condition",
  description: "A condition on the state greets a new user once; later runs skip the greeting",
  main
}
