/**
 * Scenario 7 — naming a session after its first run (agno's
 * `rename_session`): a research → writing sequence runs once, then
 * `Workflow.setSessionName(wf, id, { autogenerate: true })` asks the model
 * (through `SessionNamer.layerLanguageModel`) for a short title, which is stored with
 * the session and read back.
 *
 * @since 0.1.0
 */
import { Agent, SessionNamer, Step, Steps, TestModel, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Offline from "./Offline.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

/**
 * The one request.
 *
 * @since 0.1.0
 * @category inputs
 */
export const input = "Write an article about the benefits of renewable energy"

/**
 * @since 0.1.0
 * @category agents
 */
export const researcher = Agent.make({
  name: "Research Agent",
  instructions: "Research the given topic and provide key facts and insights."
})

/**
 * @since 0.1.0
 * @category agents
 */
export const writer = Agent.make({
  name: "Writing Agent",
  instructions: "Write a comprehensive article based on the research provided. Make it engaging and well-structured."
})

/**
 * @since 0.1.0
 * @category workflows
 */
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

// -----------------------------------------------------------------------------
// the offline model
// -----------------------------------------------------------------------------

/**
 * The subject of a request ("Write an article about X" → "X").
 *
 * @since 0.1.0
 * @category offline
 */
export const subjectOf = (request: string): string =>
  Offline.topicOf(
    request.replace(/^\s*(?:please\s+)?(?:write|draft|create|give me)\s+(?:an?\s+|the\s+)?(?:short\s+)?(?:article|post|piece|essay|blog post)\s+(?:about|on)\s+/i, "")
  )

const titleFrom = (namerPrompt: string): string => {
  const first = /First input:\n(.*)/.exec(namerPrompt)?.[1] ?? namerPrompt
  return Offline.titleCase(subjectOf(first)).split(" ").slice(0, 6).join(" ")
}

const research = (subject: string) =>
  [
    `Key facts on ${subject}:`,
    "- Solar and wind are now the cheapest new electricity in most markets.",
    "- Renewables cut greenhouse gases and local air pollution.",
    "- The sector employs millions, with jobs spread across regions.",
    "- Home-grown energy reduces exposure to fuel-price shocks."
  ].join("\n")

const article = (subject: string) =>
  [
    `# ${Offline.titleCase(subject)}`,
    "",
    "Energy is changing faster than at any time in a century, and renewables are leading the shift.",
    "",
    "**Cheaper power.** New solar and wind farms now undercut fossil plants on cost in most markets, and their fuel is free.",
    "",
    "**Cleaner air and climate.** Every megawatt-hour from the sun or wind displaces emissions that harm both lungs and the climate.",
    "",
    "**Jobs and resilience.** Building and maintaining renewables creates local work, and home-grown energy shields economies from price shocks.",
    "",
    "The conclusion is simple: renewables are no longer only the right choice — they are the smart one."
  ].join("\n")

/**
 * The scripted model: facts from the researcher, an article from the writer,
 * and a title (from the first input) for the session namer.
 *
 * @since 0.1.0
 * @category offline
 */
export const offlineModel = TestModel.layer((request) => {
  switch (request.agent) {
    case "Research Agent":
      return TestModel.text(research(subjectOf(request.lastUserMessage ?? "")))
    case "Writing Agent":
      return TestModel.text(article(subjectOf(Offline.userRequest(request))))
    default:
      // the session namer (no agent): a short title
      return TestModel.text(titleFrom(request.lastUserMessage ?? ""))
  }
})

// -----------------------------------------------------------------------------
// main
// -----------------------------------------------------------------------------

/**
 * Runs the workflow once on a new session, names the session automatically,
 * and prints the stored name.
 *
 * @since 0.1.0
 * @category main
 */
export const main = (options: Scenario.Options = {}): Effect.Effect<void, unknown> =>
  Effect.gen(function*() {
    const db = options.db ?? Scenario.defaultDb("session-naming")
    const model = yield* Scenario.chooseModel(offlineModel, options)
    const sessionId = `article-${crypto.randomUUID().slice(0, 8)}`
    yield* Effect.gen(function*() {
      yield* Output.heading("Article creation")
      yield* Scenario.runShown(articleWorkflow, input, { sessionId })
      yield* Workflow.setSessionName(articleWorkflow, sessionId, { autogenerate: true })
      const name = yield* Workflow.getSessionName(articleWorkflow, sessionId)
      yield* Output.say()
      yield* Output.say(`New session name: ${Option.getOrElse(name, () => "(none)")}`)
    }).pipe(
      Effect.provide(Layer.mergeAll(SessionNamer.layerLanguageModel(), Scenario.storeLayer(options, db)).pipe(Layer.provideMerge(model)))
    )
    yield* Output.note(`The name is stored with session ${sessionId}; read it back from another process with:`)
    yield* Output.note(`  npm start -- sessions show --db ${db} ${sessionId}`)
  }).pipe(Output.withConsole)

/**
 * @since 0.1.0
 * @category scenario
 */
export const scenario: Scenario.Scenario = {
  name: "session-naming",
  aliases: ["naming", "rename", "rename-session", "name"],
  cookbook: "rename_session",
  description: "One research → writing run, then the session is named by the model and stored",
  main
}
