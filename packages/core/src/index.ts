/**
 * @since 0.1.0
 */
export * as Agent from "./Agent.js"

/**
 * @since 0.1.0
 */
export * as Condition from "./Condition.js"

/**
 * @since 0.1.0
 */
export * as DurableRuns from "./DurableRuns.js"

/**
 * @since 0.1.0
 */
export * as Loop from "./Loop.js"

/**
 * @since 0.1.0
 */
export * as Parallel from "./Parallel.js"

/**
 * Replay tests: re-execute recorded runs against the current workflow code
 * with the models' recorded replies.
 *
 * @since 0.1.0
 */
export * as Replay from "./Replay.js"

/**
 * @since 0.1.0
 */
export * as Placement from "./Placement.js"

/**
 * @since 0.1.0
 */
export * as Router from "./Router.js"

/**
 * @since 0.1.0
 */
export * as RunContext from "./RunContext.js"

/**
 * The run lifecycle, declared once: states, transitions, who may make each,
 * and the one conditional write of the store that makes it.
 *
 * @since 0.1.0
 */
export * as RunLifecycle from "./RunLifecycle.js"

/**
 * Workflows run on cron schedules, once per tick across processes.
 *
 * @since 0.1.0
 */
export * as Schedules from "./Schedules.js"

/**
 * @since 0.1.0
 */
export * as SessionNamer from "./SessionNamer.js"

/**
 * @since 0.1.0
 */
export * as SessionState from "./SessionState.js"

/**
 * @since 0.1.0
 */
export * as SessionStore from "./SessionStore.js"

/**
 * @since 0.1.0
 */
export * as Step from "./Step.js"

/**
 * @since 0.1.0
 */
export * as StepInput from "./StepInput.js"

/**
 * @since 0.1.0
 */
export * as StepOutput from "./StepOutput.js"

/**
 * @since 0.1.0
 */
export * as Steps from "./Steps.js"

/**
 * @since 0.1.0
 */
export * as Team from "./Team.js"

/**
 * @since 0.1.0
 */
export * as TestModel from "./TestModel.js"

/**
 * @since 0.1.0
 */
export * as Workflow from "./Workflow.js"

/**
 * @since 0.1.0
 */
export * as WorkflowError from "./WorkflowError.js"

/**
 * @since 0.1.0
 */
export * as WorkflowEvent from "./WorkflowEvent.js"
