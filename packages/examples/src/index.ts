/**
 * @since 0.1.0
 */
export * as AdaptiveAssistant from "./AdaptiveAssistant.js"

/**
 * @since 0.1.0
 */
export * as Approval from "./Approval.js"

/**
 * @since 0.1.0
 */
export * as Cli from "./Cli.js"

/**
 * @since 0.1.0
 */
export * as ContentPlanning from "./ContentPlanning.js"

/**
 * @since 0.1.0
 */
export * as CustomExecutors from "./CustomExecutors.js"

/**
 * @since 0.1.0
 */
export * as GreetingCondition from "./GreetingCondition.js"

/**
 * @since 0.1.0
 */
export * as JobTracker from "./JobTracker.js"

/**
 * @since 0.1.0
 */
export * as Offline from "./Offline.js"

/**
 * @since 0.1.0
 */
export * as Output from "./Output.js"

/**
 * @since 0.1.0
 */
export * as ProjectTeam from "./ProjectTeam.js"

/**
 * @since 0.1.0
 */
export * as Routers from "./Routers.js"

/**
 * @since 0.1.0
 */
export * as Scenario from "./Scenario.js"

/**
 * @since 0.1.0
 */
export * as SessionNaming from "./SessionNaming.js"

/**
 * @since 0.1.0
 */
export * as ShoppingList from "./ShoppingList.js"

/**
 * @since 0.1.0
 */
export * as StreamingContentPlanning from "./StreamingContentPlanning.js"

/**
 * @since 0.1.0
 */
export * as TaskRouter from "./TaskRouter.js"

/**
 * @since 0.1.0
 */
export * as Tracing from "./Tracing.js"
