/**
 * Scenario 3 — state from plain executor functions (agno's
 * `state_in_function`). A research team (two agents) studies the topic; the
 * "Content Planning Step" — a function, not an agent step — counts plans in
 * the state, asks a planner agent for a plan built from the topic and the
 * research, and stores it; the "Content Summary Step" summarises the stored
 * plans and marks the session as summarised.
 *
 * @since 0.1.0
 */
import { Agent, SessionState, Step, StepInput, StepOutput, Team, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

// -- state -------------------------------------------------------------------

export const ContentPlan = Schema.Struct({
  id: Schema.Number,
  topic: Schema.String,
  content: Schema.String,
  has_research: Schema.Boolean
})
export type ContentPlan = typeof ContentPlan.Type

export class ContentPlans extends SessionState.Tag("@sessionflow/examples/ContentPlans")<ContentPlans>()({
  content_plans: Schema.Array(ContentPlan),
  plan_counter: Schema.Number,
  session_summarized: Schema.optional(Schema.Boolean),
  total_plans_summarized: Schema.optional(Schema.Number)
}) {}

// -- agents ------------------------------------------------------------------

export const hackernewsAgent = Agent.make({
  name: "Hackernews Agent",
  description: "Extracts key insights and content from Hacker News discussions",
  instructions: "Extract key insights and content from Hackernews posts"
})

export const webAgent = Agent.make({
  name: "Web Agent",
  description: "Searches the web for the latest news and trends",
  instructions: "Search the web for the latest news and trends"
})

export const researchTeam = Team.make({
  name: "Research Team",
  members: [hackernewsAgent, webAgent],
  instructions: "Analyze content and create comprehensive social media strategy"
})

export const contentPlanner = Agent.make({
  name: "Content Planner",
  instructions: [
    "Plan a content schedule over 4 weeks for the provided topic and research content",
    "Ensure that I have posts for 3 posts per week"
  ]
})

// -- executors ---------------------------------------------------------------

// the request sent to the planner
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

// counts the plan (the counter increments even if planning then fails, as in the original)
export const startPlan = (input: StepInput.StepInput) =>
  Effect.map(
    ContentPlans.modify((s) => [{ id: s.plan_counter + 1, previous: s.content_plans.length }, { ...s, plan_counter: s.plan_counter + 1 }]),
    ({ id, previous }) => {
      const topic = StepOutput.contentText(input.input)
      const research = StepOutput.contentText(input.previousStepContent)
      return { id, topic, has_research: research.length > 0, prompt: planningPrompt(topic, id, research, previous) }
    }
  )

// stores the plan; the step's content presents it
export const storePlan = (plan: Omit<ContentPlan, "content">, content: string) =>
  ContentPlans.modify((s) => {
    const content_plans = [...s.content_plans, { id: plan.id, topic: plan.topic, content, has_research: plan.has_research }]
    const presented = [
      `## Strategic Content Plan #${plan.id}`,
      "",
      `**Planning Topic:** ${plan.topic}`,
      "",
      `**Research Integration:** ${plan.has_research ? "[PASS] Research-based" : "[FAIL] No research foundation"}`,
      `**Total Plans Created:** ${content_plans.length}`,
      "",
      "**Content Strategy:**",
      content,
      "",
      `**Session History:** ${content_plans.length} plans stored`,
      "",
      `**Plan ID:** #${plan.id}`
    ].join("\n")
    return [presented, { ...s, content_plans }]
  })

// a planner failure is an unsuccessful output: the run goes on
export const planningFailed = (error: unknown) =>
  StepOutput.make({
    content: `Custom content planning failed: ${error instanceof Error ? error.message : String(error)}`,
    success: false
  })

export const contentPlanningStep = Step.make("Content Planning Step", (input) =>
  Effect.gen(function*() {
    const plan = yield* startPlan(input)
    const result = yield* Agent.run(contentPlanner, plan.prompt)
    return yield* storePlan(plan, result.content)
  }).pipe(Effect.catchAll((error) => Effect.succeed(planningFailed(error)))))

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
      ...plans.flatMap((p) => ["", `### Plan #${p.id} - ${p.topic}`, `- Research Available: ${p.has_research ? "[PASS]" : "[FAIL]"}`, "- Status: Completed"])
    ].join("\n")
    return [summary, { ...s, session_summarized: true, total_plans_summarized: plans.length }]
  }))

export const researchStep = Step.team("Research Step", researchTeam)

// -- workflow ----------------------------------------------------------------

export const contentWorkflow = Workflow.make({
  name: "Content Creation Workflow",
  description: "Automated content creation with custom execution options and session state",
  state: ContentPlans,
  sessionState: { content_plans: [], plan_counter: 0 },
  steps: [researchStep, contentPlanningStep, contentSummaryStep]
})
