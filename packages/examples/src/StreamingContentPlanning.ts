/**
 * Scenario 3, streaming variant (agno's `state_in_function`): the same
 * content workflow, but its planning step is a `Step.stream` executor that
 * forwards the planner's text deltas as the step's own `TextDelta` events
 * while they arrive, then emits its output.
 *
 * @since 0.1.0
 */
import { Agent, Step, StepOutput, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import {
  contentPlanner,
  type ContentPlans,
  contentPlansSession,
  contentSummaryStep,
  planningFailed,
  researchStep,
  startPlan,
  storePlan
} from "./ContentPlanning.js"

export const streamingContentPlanningStep = Step.stream(
  "Content Planning Step",
  (input) =>
    Stream.unwrap(Effect.map(startPlan(input), (plan) =>
      Agent.stream(contentPlanner, plan.prompt).pipe(
        Stream.mapEffect((event): Effect.Effect<ReadonlyArray<string | StepOutput.StepOutput>, never, ContentPlans> => {
          switch (event._tag) {
            case "TextDelta":
              return Effect.succeed([event.delta])
            case "Completed":
              return Effect.map(storePlan(plan, event.result.content), (content) => [StepOutput.make({ content })])
            default:
              return Effect.succeed([])
          }
        }),
        Stream.flattenIterables,
        Stream.catchAll((error) => Stream.succeed(planningFailed(error)))
      )))
)

export const streamingContentWorkflow = Workflow.make({
  name: "Streaming Content Creation Workflow",
  description: "Automated content creation with streaming custom execution functions and session state",
  ...contentPlansSession,
  steps: [researchStep, streamingContentPlanningStep, contentSummaryStep]
})
