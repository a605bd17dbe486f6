/**
 * The content plans' state and the texts the content workflow's executors
 * write (scenario 3): the planner's request, a stored plan as the planning
 * step presents it, and the session summary.
 *
 * @since 0.1.0
 */
import { SessionState } from "@sessionflow/core"
import * as Schema from "effect/Schema"

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

// a stored plan as the planning step presents it, `stored` being how many plans the session holds
export const presentPlan = (plan: ContentPlan, stored: number): string =>
  [
    `## Strategic Content Plan #${plan.id}`,
    "",
    `**Planning Topic:** ${plan.topic}`,
    "",
    `**Research Integration:** ${plan.has_research ? "[PASS] Research-based" : "[FAIL] No research foundation"}`,
    `**Total Plans Created:** ${stored}`,
    "",
    "**Content Strategy:**",
    plan.content,
    "",
    `**Session History:** ${stored} plans stored`,
    "",
    `**Plan ID:** #${plan.id}`
  ].join("\n")

// the summary of a session's plans
export const summarize = (plans: ReadonlyArray<ContentPlan>): string => {
  const withResearch = plans.filter((p) => p.has_research).length
  return [
    "## Content Planning Session Summary",
    "",
    `**Total Plans Created:** ${plans.length}`,
    "**Session Statistics:**",
    `- Plans with research: ${withResearch}`,
    `- Plans without research: ${plans.length - withResearch}`,
    "",
    "**Plan Overview:**",
    ...plans.flatMap((
      p
    ) => [
      "",
      `### Plan #${p.id} - ${p.topic}`,
      `- Research Available: ${p.has_research ? "[PASS]" : "[FAIL]"}`,
      "- Status: Completed"
    ])
  ].join("\n")
}
