/**
 * Scenario 3 — state from plain executor functions (agno's
 * `state_in_function`). A research team (two agents) studies the topic; the
 * "Content Planning Step" — a function, not an agent step — counts plans in
 * the state, asks a planner agent for a plan built from the topic and the
 * research, and stores it; the "Content Summary Step" summarises the stored
 * plans and marks the session as summarised. The state and the texts the
 * steps write are in `ContentPlanning.tools.ts`.
 *
 * @since 0.1.0
 */
import { Agent, Step, type StepInput, StepOutput, Team, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import { type ContentPlan, ContentPlans, planningPrompt, presentPlan, summarize } from "./ContentPlanning.tools.js"

export * from "./ContentPlanning.tools.js"

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
  instructions: `Plan a content schedule over 4 weeks for the provided topic and research content
Ensure that I have posts for 3 posts per week`
})

// -- executors ---------------------------------------------------------------

// counts the plan (the counter increments even if planning then fails, as in the original)
export const startPlan = (input: StepInput.StepInput) =>
  Effect.map(
    ContentPlans.modify((
      s
    ) => [{ id: s.plan_counter + 1, previous: s.content_plans.length }, { ...s, plan_counter: s.plan_counter + 1 }]),
    ({ id, previous }) => {
      const topic = StepOutput.contentText(input.input)
      const research = StepOutput.contentText(input.previousStepContent)
      return { id, topic, has_research: research.length > 0, prompt: planningPrompt(topic, id, research, previous) }
    }
  )

// stores the plan; the step's content presents it
export const storePlan = (plan: Omit<ContentPlan, "content">, content: string) =>
  ContentPlans.modify((s) => {
    const stored = { id: plan.id, topic: plan.topic, content, has_research: plan.has_research }
    const content_plans = [...s.content_plans, stored]
    return [presentPlan(stored, content_plans.length), { ...s, content_plans }]
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

export const contentSummaryStep = Step.make(
  "Content Summary Step",
  () =>
    ContentPlans.modify<string | StepOutput.StepOutput>((s) =>
      s.content_plans.length === 0
        ? [StepOutput.make({ content: "No content plans found in session state.", success: false }), s]
        : [summarize(s.content_plans), {
          ...s,
          session_summarized: true,
          total_plans_summarized: s.content_plans.length
        }]
    )
)

export const researchStep = Step.team("Research Step", researchTeam)

// -- workflow ----------------------------------------------------------------

// the state and its seed (the streaming variant has the same)
export const contentPlansSession = { state: ContentPlans, sessionState: { content_plans: [], plan_counter: 0 } }

export const contentWorkflow = Workflow.make({
  name: "Content Creation Workflow",
  description: "Automated content creation with custom execution options and session state",
  ...contentPlansSession,
  steps: [researchStep, contentPlanningStep, contentSummaryStep]
})
