/**
 * Scenario 5 — routers on state (agno's `state_in_router`): two workflows,
 * the adaptive assistant (`AdaptiveAssistant.ts`) and the keyword task
 * router (`TaskRouter.ts`), run one after the other.
 *
 * @since 0.1.0
 */
import { TestModel } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as AdaptiveAssistant from "./AdaptiveAssistant.js"
import * as AdaptiveAssistantOffline from "./AdaptiveAssistant.offline.js"
import * as Scenario from "./Scenario.js"
import * as TaskRouter from "./TaskRouter.js"
import * as TaskRouterOffline from "./TaskRouter.offline.js"

export * from "./AdaptiveAssistant.js"
export * from "./TaskRouter.js"

// one scripted model for both workflows: the task agents, else the assistants
export const offlineModel = TestModel.layer((request) =>
  TaskRouterOffline.respond(request) ?? AdaptiveAssistantOffline.respond(request)
)

export const scenario = Scenario.make({
  name: "routers",
  cookbook: "state_in_router",
  aliases: ["router", "routing", "adaptive", "tasks"],
  description: "Routers on state: an adaptive assistant by preference, and a keyword task router with tools",
  workflows: [AdaptiveAssistant.adaptiveWorkflow, TaskRouter.taskWorkflow],
  offlineModel,
  layer: TaskRouter.TaskToolsLive
}, () => Effect.zipRight(AdaptiveAssistant.adaptiveRuns, TaskRouter.taskRuns))

export const main = scenario.main
