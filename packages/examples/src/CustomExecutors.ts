/**
 * Scenario 3 — state from plain executor functions, and a streaming executor
 * (agno's `state_in_function`).
 *
 * A research team (two agents) studies the topic; the "Content Planning Step"
 * — a function, not an agent step — counts plans in the state, asks a planner
 * agent for a plan built from the topic and the research, and stores it; the
 * "Content Summary Step" summarises the stored plans and marks the session as
 * summarised. The streaming variant's planning step is a `Step.stream`
 * executor that forwards the planner's text deltas as they arrive, then
 * emits its output.
 *
 * @since 0.1.0
 */
import { Agent, SessionState, Step, StepInput, StepOutput, Team, TestModel, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Offline from "./Offline.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

/**
 * @since 0.1.0
 * @category state
 */
export const ContentPlan = Schema.Struct({
  id: Schema.Number,
  topic: Schema.String,
  content: Schema.String,
  has_research: Schema.Boolean
})

/**
 * @since 0.1.0
 * @category state
 */
export type ContentPlan = typeof ContentPlan.Type

/**
 * @since 0.1.0
 * @category state
 */
export class ContentPlans extends SessionState.Tag("@sessionflow/examples/ContentPlans")<ContentPlans>()({
  content_plans: Schema.Array(ContentPlan),
  plan_counter: Schema.Number,
  session_summarized: Schema.optional(Schema.Boolean),
  total_plans_summarized: Schema.optional(Schema.Number)
}) {}

/**
 * The session table of this scenario (as in the agno cookbook).
 *
 * @since 0.1.0
 * @category constants
 */
export const TABLE = "workflow_session"

/**
 * The two topics.
 *
 * @since 0.1.0
 * @category inputs
 */
export const inputs = ["AI trends in 2024", "Machine Learning automation tools"] as const

// -----------------------------------------------------------------------------
// agents
// -----------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category agents
 */
export const hackernewsAgent = Agent.make({
  name: "Hackernews Agent",
  description: "Extracts key insights and content from Hacker News discussions",
  instructions: "Extract key insights and content from Hackernews posts"
})

/**
 * @since 0.1.0
 * @category agents
 */
export const webAgent = Agent.make({
  name: "Web Agent",
  description: "Searches the web for the latest news and trends",
  instructions: "Search the web for the latest news and trends"
})

/**
 * @since 0.1.0
 * @category agents
 */
export const researchTeam = Team.make({
  name: "Research Team",
  members: [hackernewsAgent, webAgent],
  instructions: "Analyze content and create comprehensive social media strategy"
})

const plannerInstructions = [
  "Plan a content schedule over 4 weeks for the provided topic and research content",
  "Ensure that I have posts for 3 posts per week"
]

/**
 * @since 0.1.0
 * @category agents
 */
export const contentPlanner = Agent.make({ name: "Content Planner", instructions: plannerInstructions })

// -----------------------------------------------------------------------------
// executors
// -----------------------------------------------------------------------------

/**
 * The request sent to the planner.
 *
 * @since 0.1.0
 * @category executors
 */
export const planningPrompt = (topic: string, planId: number, research: string, previousPlans: number): string =>
  [
    "CONTENT PLANNING REQUEST",
    "",
    `Core Topic: ${topic}`,
    `Plan ID: #${planId}`,
    "",
    `Research Results: ${research.length > 0 ? research.slice(0, 500) : "No research results"}`,
    "",
    `Previous Plans Count: ${previousPlans}`,
    "",
    "Requirements:",
    "1. Build a complete content strategy on the research",
    "2. Use the research findings",
    "3. Name content formats and channels",
    "4. Recommend a timeline and priorities",
    "5. Include engagement and distribution strategies",
    "",
    "Write a detailed, actionable content plan."
  ].join("\n")

const researchOf = (input: StepInput.StepInput): string => StepOutput.contentText(input.previousStepContent)
const topicOf = (input: StepInput.StepInput): string => StepOutput.contentText(input.input)

/** Counts the plan (the counter increments even if planning then fails, as in the original). */
const startPlan = ContentPlans.modify((s) => {
  const next = { ...s, plan_counter: s.plan_counter + 1 }
  return [{ planId: next.plan_counter, previousPlans: s.content_plans.length }, next]
})

const storePlan = (plan: ContentPlan) =>
  ContentPlans.modify((s) => {
    const content_plans = [...s.content_plans, plan]
    return [content_plans.length, { ...s, content_plans }]
  })

const enhanced = (plan: ContentPlan, total: number): string =>
  [
    `## Strategic Content Plan #${plan.id}`,
    "",
    `**Planning Topic:** ${plan.topic}`,
    "",
    `**Research Integration:** ${plan.has_research ? "[PASS] Research-based" : "[FAIL] No research foundation"}`,
    `**Total Plans Created:** ${total}`,
    "",
    "**Content Strategy:**",
    plan.content,
    "",
    `**Session History:** ${total} plans stored`,
    "",
    `**Plan ID:** #${plan.id}`
  ].join("\n")

const planningFailed = (error: unknown) =>
  StepOutput.make({
    content: `Custom content planning failed: ${error instanceof Error ? error.message : String(error)}`,
    success: false
  })

/**
 * "Content Planning Step": counts the plan, asks the planner, stores the plan.
 * A planner failure becomes an unsuccessful output (the run goes on).
 *
 * @since 0.1.0
 * @category executors
 */
export const contentPlanningStep = Step.make(
  "Content Planning Step",
  (input) =>
  Effect.gen(function*() {
    const { planId, previousPlans } = yield* startPlan
    const topic = topicOf(input)
    const research = researchOf(input)
    const result = yield* Agent.run(contentPlanner, planningPrompt(topic, planId, research, previousPlans))
    const plan = { id: planId, topic, content: result.content, has_research: research.length > 0 }
    const total = yield* storePlan(plan)
    return enhanced(plan, total)
    }).pipe(Effect.catchAll((error) => Effect.succeed(planningFailed(error))))
)

/**
 * The streaming "Content Planning Step": the same work, but the planner's text
 * deltas are forwarded as the step's own `TextDelta` events while they
 * arrive; the step's output comes last.
 *
 * @since 0.1.0
 * @category executors
 */
export const streamingContentPlanningStep = Step.stream(
  "Content Planning Step",
  (input) =>
  Stream.unwrap(Effect.gen(function*() {
    const { planId, previousPlans } = yield* startPlan
    const topic = topicOf(input)
    const research = researchOf(input)
    return Agent.stream(contentPlanner, planningPrompt(topic, planId, research, previousPlans)).pipe(
      Stream.mapEffect((event): Effect.Effect<ReadonlyArray<string | StepOutput.StepOutput>, never, ContentPlans> => {
        switch (event._tag) {
          case "TextDelta":
            return Effect.succeed([event.delta])
          case "Completed": {
            const plan = { id: planId, topic, content: event.result.content, has_research: research.length > 0 }
            return Effect.map(storePlan(plan), (total) => [StepOutput.make({ content: enhanced(plan, total) })])
          }
          default:
            return Effect.succeed([])
        }
      }),
      Stream.flattenIterables,
      Stream.catchAll((error) => Stream.succeed(planningFailed(error)))
    )
  }))
)

/**
 * "Content Summary Step": summarises the stored plans and marks the session.
 *
 * @since 0.1.0
 * @category executors
 */
export const contentSummaryStep = Step.make("Content Summary Step", () =>
  ContentPlans.modify<string | StepOutput.StepOutput>((s) => {
    const plans = s.content_plans
    if (plans.length === 0) {
      return [StepOutput.make({ content: "No content plans found in session state.", success: false }), s]
    }
    const withResearch = plans.filter((p) => p.has_research).length
    const summary = [
      "## Content Planning Session Summary",
      "",
      `**Total Plans Created:** ${plans.length}`,
      "**Session Statistics:**",
      `- Plans with research: ${withResearch}`,
      `- Plans without research: ${plans.length - withResearch}`,
      "",
      "**Plan Overview:**",
      ...plans.flatMap((p) => [
        "",
        `### Plan #${p.id} - ${p.topic}`,
        `- Research Available: ${p.has_research ? "[PASS]" : "[FAIL]"}`,
        "- Status: Completed"
      ])
    ].join("\n")
    return [summary, { ...s, session_summarized: true, total_plans_summarized: plans.length }]
  }))

const researchStep = Step.team("Research Step", researchTeam)

/**
 * @since 0.1.0
 * @category workflows
 */
export const contentWorkflow = Workflow.make({
  name: "Content Creation Workflow",
  description: "Automated content creation with custom execution options and session state",
  state: ContentPlans,
  sessionState: { content_plans: [], plan_counter: 0 },
  steps: [researchStep, contentPlanningStep, contentSummaryStep]
})

/**
 * @since 0.1.0
 * @category workflows
 */
export const streamingContentWorkflow = Workflow.make({
  name: "Streaming Content Creation Workflow",
  description: "Automated content creation with streaming custom execution functions and session state",
  state: ContentPlans,
  sessionState: { content_plans: [], plan_counter: 0 },
  steps: [researchStep, streamingContentPlanningStep, contentSummaryStep]
})

// -----------------------------------------------------------------------------
// the offline model
// -----------------------------------------------------------------------------

const topicFrom = (text: string): string =>
  /Core Topic:\s*(.+)/.exec(text)?.[1]?.trim() ?? Offline.topicOf(text.split("\n")[0] ?? text)

const memberReply = (agent: string, task: string): string => {
  const topic = Offline.topicOf(task.replace(/^(research|find|look up|search)( for| into)?\s*/i, ""))
  return agent === "Hackernews Agent"
    ? [
      `Hacker News on "${topic}":`,
      "- Top threads favour hands-on write-ups over announcements.",
      "- Commenters ask for benchmarks, costs and failure stories.",
      "- Open-source tooling gets the most sustained discussion."
    ].join("\n")
    : [
      `Latest coverage of "${topic}":`,
      "- Analysts highlight fast adoption in mid-size companies.",
      "- Tutorials and case studies are the most shared formats.",
      "- Regulation and cost control are recurring themes."
    ].join("\n")
}

const leaderTurn = (request: TestModel.Request): TestModel.Reply => {
  const topic = Offline.topicOf(Offline.userRequest(request))
  if (request.turn === 0) {
    return TestModel.toolCalls(
      ["delegate_task_to_member", { member_name: "Hackernews Agent", task: `Research ${topic}` }],
      ["delegate_task_to_member", { member_name: "Web Agent", task: `Research ${topic}` }]
    )
  }
  const findings = Offline.pastCalls(request).map((c) => StepOutput.contentText(c.result))
  return TestModel.text(
    [
      `Research brief: ${topic}`,
      ...findings,
      "Strategy: lead with practical, evidence-backed posts; answer the community's open questions."
    ].join("\n\n")
  )
}

const plannerReply = (prompt: string): string => {
  const topic = topicFrom(prompt)
  const plan = /Plan ID:\s*#(\d+)/.exec(prompt)?.[1] ?? "?"
  return [
    `4-week content plan #${plan} for "${topic}" (3 posts a week):`,
    `Week 1 — Foundations: an explainer thread, a "what changed" carousel, a short video on ${topic}.`,
    "Week 2 — Evidence: a case study, a benchmark roundup, a practitioner Q&A.",
    "Week 3 — How-to: a step-by-step tutorial, a tools comparison, a live session.",
    "Week 4 — Community: a myths-vs-facts post, a reader poll, a recap newsletter.",
    "Channels: LinkedIn and X for reach, the blog for depth; repost the best performers."
  ].join("\n")
}

/**
 * The scripted model: the team leader delegates to both researchers, then
 * writes a brief; the researchers and the planner answer from the topic.
 *
 * @since 0.1.0
 * @category offline
 */
export const offlineModel = TestModel.layer((request) => {
  switch (request.agent) {
    case "Hackernews Agent":
    case "Web Agent":
      return TestModel.text(memberReply(request.agent, request.lastUserMessage ?? ""))
    case "Content Planner":
      return TestModel.text(plannerReply(request.lastUserMessage ?? ""))
    default:
      return leaderTurn(request)
  }
})

// -----------------------------------------------------------------------------
// main
// -----------------------------------------------------------------------------

const runTwice = (
  workflow: typeof contentWorkflow | typeof streamingContentWorkflow,
  label: string
) =>
  Effect.gen(function*() {
    const sessionId = `${label}-${crypto.randomUUID().slice(0, 8)}`
    if (label === "streaming") {
      yield* Output.say()
      yield* Output.note(
        "Now the streaming variant: its planning step is a Step.stream executor that forwards the planner's text deltas itself."
      )
    }
    for (const [i, input] of inputs.entries()) {
      yield* Output.heading(`${i === 0 ? "First" : "Second"} ${label === "streaming" ? "Streaming " : ""}Workflow Run${i === 0 ? "" : " (Same Session)"}`)
      yield* Scenario.runShown(workflow, input, { sessionId })
      yield* Output.state(
        i === 0 ? "Session state after the first run" : "Final session state",
        yield* Workflow.getSessionState(workflow, sessionId)
      )
    }
    return sessionId
  })

/**
 * Runs both workflows twice each (one session per workflow), printing the
 * state after each run.
 *
 * @since 0.1.0
 * @category main
 */
export const main = (options: Scenario.Options = {}): Effect.Effect<void, unknown> =>
  Effect.gen(function*() {
    const db = options.db ?? Scenario.defaultDb("custom-executors")
    const model = yield* Scenario.chooseModel(offlineModel, options)
    const [plain, streaming] = yield* Effect.all([
      runTwice(contentWorkflow, "content"),
      runTwice(streamingContentWorkflow, "streaming")
    ]).pipe(Effect.provide(Layer.merge(model, Scenario.storeLayer(options, db, TABLE))))
    yield* Output.say()
    yield* Output.note(`Sessions ${plain} and ${streaming} are in table ${options.table ?? TABLE} of ${db}:`)
    yield* Output.note(`  npm start -- sessions list --db ${db} --table ${options.table ?? TABLE}`)
  }).pipe(Output.withConsole)

/**
 * @since 0.1.0
 * @category scenario
 */
export const scenario: Scenario.Scenario = {
  name: "custom-executors",
  aliases: ["executors", "functions", "function", "streaming"],
  cookbook: "state_in_function",
  description: "Function steps count and store content plans; a streaming executor forwards the planner's text",
  main
}
