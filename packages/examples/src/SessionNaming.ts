/**
 * Scenario 7 — naming a session after its first run (agno's
 * `rename_session`): a research → writing sequence runs once, then
 * `Workflow.setSessionName(wf, id, { autogenerate: true })` asks the model
 * (through `SessionNamer.layerLanguageModel`) for a short title, which is
 * stored with the session and read back.
 *
 * @since 0.1.0
 */
import { Agent, SessionNamer, Step, Steps, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"
import { offlineModel } from "./SessionNaming.offline.js"

export { offlineModel, subjectOf } from "./SessionNaming.offline.js"

// -- agents ------------------------------------------------------------------

export const researcher = Agent.make({
  name: "Research Agent",
  instructions: "Research the given topic and provide key facts and insights."
})

export const writer = Agent.make({
  name: "Writing Agent",
  instructions: "Write a comprehensive article based on the research provided. Make it engaging and well-structured."
})

// -- workflow ----------------------------------------------------------------

export const articleWorkflow = Workflow.make({
  name: "Article Workflow",
  description: "Automated article creation from research to writing",
  steps: [
    Steps.make("article_creation", [
      Step.agent("research", researcher, { description: "Research the topic and gather information" }),
      Step.agent("writing", writer, { description: "Write an article based on the research" })
    ], { description: "Complete article creation workflow from research to writing" })
  ]
})

// -- main: one run, then the session is named ----------------------------------

export const input = "Write an article about the benefits of renewable energy"

export const scenario = Scenario.make({
  name: "session-naming",
  cookbook: "rename_session",
  aliases: ["naming", "rename", "rename-session", "name"],
  description: "One research → writing run, then the session is named by the model and stored",
  workflows: [articleWorkflow],
  offlineModel,
  layer: Layer.empty
}, ({ dbOption }) =>
  Effect.gen(function*() {
    const sessionId = Scenario.newSessionId("article")
    yield* Output.heading("Article creation")
    yield* Workflow.stream(articleWorkflow, input, { sessionId }).pipe(Output.print)
    yield* Workflow.setSessionName(articleWorkflow, sessionId, { autogenerate: true }).pipe(
      Effect.provide(SessionNamer.layerLanguageModel())
    )
    const name = yield* Workflow.getSessionName(articleWorkflow, sessionId)
    yield* Output.say()
    yield* Output.say(`New session name: ${Option.getOrElse(name, () => "(none)")}`)
    yield* Output.note(`The name is stored with session ${sessionId}; read it back from another process with:`)
    yield* Output.note(`  npm start -- sessions show ${dbOption} ${sessionId}`)
  }))

export const main = scenario.main
