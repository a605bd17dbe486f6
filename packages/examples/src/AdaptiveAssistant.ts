/**
 * Scenario 5A — a router on state (agno's `state_in_router`, first
 * workflow): a selector that reads and updates the state routes each query to
 * the onboarding, technical, friendly or general agent; a plain step then
 * rotates the preference.
 *
 * @since 0.1.0
 */
import { Agent, Router, RunContext, SessionState, Step, Workflow, WorkflowEvent } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Output from "./Output.js"

export const ADAPTIVE_USER = "user-456" // the assistant's user, whose id is also the session id

// -- state -------------------------------------------------------------------

export class Preferences extends SessionState.Tag("@sessionflow/examples/Preferences")<Preferences>()({
  agent_preference: Schema.String,
  interaction_count: Schema.Number
}) {}

// -- agents ------------------------------------------------------------------

const assistant = (name: string, instructions: string) => Agent.make({ name, instructions })

export const onboardingAgent = assistant(
  "Onboarding Agent",
  "Welcome new users and ask about their preferences. Determine if they prefer technical or friendly assistance."
)
export const technicalAgent = assistant(
  "Technical Expert",
  "You are a technical expert. Provide detailed, technical answers with code examples and best practices."
)
export const friendlyAgent = assistant(
  "Friendly Assistant",
  "You are a friendly, casual assistant. Use simple language and make the conversation engaging."
)
export const generalAgent = assistant(
  "General Assistant",
  "You are a balanced assistant. Provide helpful answers that are neither too technical nor too casual."
)

// -- steps: the routes (and the step each one runs), the selector, the update --

const routes = {
  onboarding: "Onboard User",
  technical: "Technical Response",
  friendly: "Friendly Response",
  general: "General Response"
} as const

// the route for a state: the preferred style, else onboarding on the first interaction, else general
export const chooseRoute = (state: typeof Preferences.schema.Type): keyof typeof routes =>
  state.agent_preference === "technical" || state.agent_preference === "friendly"
    ? state.agent_preference
    : state.interaction_count === 0
    ? "onboarding"
    : "general"

// the selector: counts the interaction, prints its reasoning, returns the chosen step's name
export const routeByPreference = Effect.gen(function*() {
  const run = yield* RunContext.RunContext
  const before = yield* Preferences.modify((s) => [s, { ...s, interaction_count: s.interaction_count + 1 }])
  const route = chooseRoute(before)
  yield* WorkflowEvent.log(
    `[router] user ${run.userId ?? "(none)"}, session ${run.sessionId}: preference '${before.agent_preference}', ` +
      `interaction #${before.interaction_count + 1} → ${route}`
  )
  return route
})

// the preference "Update Preferences" sets for an interaction count
export const preferenceFor = (interactionCount: number): "technical" | "friendly" | "general" =>
  interactionCount % 3 === 1 ? "technical" : interactionCount % 3 === 2 ? "friendly" : "general"

export const updatePreferences = Step.make("Update Preferences", () =>
  Preferences.modify((s) => {
    const preference = preferenceFor(s.interaction_count)
    return [`Preference set to: ${preference}`, { ...s, agent_preference: preference }]
  }), { description: "Update user preferences based on interaction" })

// -- workflow ----------------------------------------------------------------

export const adaptiveWorkflow = Workflow.make({
  name: "Adaptive Assistant Workflow",
  state: Preferences,
  sessionState: { agent_preference: "general", interaction_count: 0 },
  steps: [
    Router.make({
      name: "Route to Appropriate Agent",
      description: "Route to the appropriate agent based on user preferences",
      choices: [
        Step.agent(routes.onboarding, onboardingAgent, { description: "Onboard new user and set preferences" }),
        Step.agent(routes.technical, technicalAgent, { description: "Provide technical assistance" }),
        Step.agent(routes.friendly, friendlyAgent, { description: "Provide friendly assistance" }),
        Step.agent(routes.general, generalAgent, { description: "Provide general assistance" })
      ],
      selector: () => Effect.map(routeByPreference, (route) => routes[route])
    }),
    updatePreferences
  ]
})

// -- main: four queries on the user's session ----------------------------------

export const adaptiveQueries = [
  "Hello! I'm new here.",
  "How do I implement a binary search tree in Python?",
  "What's the best pizza topping?",
  "Explain quantum computing"
] as const

export const adaptiveRuns = Effect.gen(function*() {
  yield* Output.say(`\nA. The adaptive assistant (session and user ${ADAPTIVE_USER})`)
  const user = { sessionId: ADAPTIVE_USER, userId: ADAPTIVE_USER }
  for (const [i, query] of adaptiveQueries.entries()) {
    yield* Output.heading(`Interaction ${i + 1}: ${query}`)
    yield* Workflow.stream(adaptiveWorkflow, query, user).pipe(Output.print)
    yield* Output.state(
      "Workflow session state",
      yield* Workflow.getSessionState(adaptiveWorkflow, ADAPTIVE_USER, user)
    )
  }
})
