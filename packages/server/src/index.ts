/**
 * @since 0.1.0
 */
export * as WorkflowApi from "./WorkflowApi.js"

/**
 * @since 0.1.0
 */
export * as WorkflowServer from "./WorkflowServer.js"
