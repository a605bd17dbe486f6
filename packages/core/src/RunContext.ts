/**
 * The identity of the run a step, tool or condition executes in. Identity
 * lives here, never in the session state.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { ChatTurn } from "./SessionStore.js"
import type { SessionStoreError } from "./WorkflowError.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly runId: string
  readonly sessionId: string
  readonly userId: string | undefined
  readonly workflowName: string
  /** The run's input (decoded with the workflow's `input` Schema, when it has one). */
  readonly input: unknown
  /**
   * The session's conversation before this run: its completed runs' inputs
   * and outputs, oldest first (`lastRuns`: only the most recent ones).
   */
  readonly chatHistory: (
    options?: { readonly lastRuns?: number | undefined }
  ) => Effect.Effect<ReadonlyArray<ChatTurn>, SessionStoreError>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class RunContext extends Context.Tag("@sessionflow/core/RunContext")<RunContext, Service>() {}

/**
 * @since 0.1.0
 * @category accessors
 */
export const sessionId: Effect.Effect<string, never, RunContext> = Effect.map(RunContext, (c) => c.sessionId)

/**
 * @since 0.1.0
 * @category accessors
 */
export const runId: Effect.Effect<string, never, RunContext> = Effect.map(RunContext, (c) => c.runId)

/**
 * @since 0.1.0
 * @category accessors
 */
export const userId: Effect.Effect<string | undefined, never, RunContext> = Effect.map(RunContext, (c) => c.userId)
