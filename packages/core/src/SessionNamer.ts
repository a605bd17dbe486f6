/**
 * Names sessions for `Workflow.setSessionName(wf, id, { autogenerate: true })`.
 * When no `SessionNamer` is provided, the name is the workflow's description
 * (or name) and the session's creation time. Agents provide a model-backed
 * namer (`Agent.layerSessionNamer`) that asks for a short title.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

/**
 * What a namer is told about the session.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly workflowName: string
  readonly description: string | undefined
  readonly sessionId: string
  /** the session's first run input and output, when there is a run */
  readonly firstInput: unknown
  readonly firstOutput: unknown
  readonly createdAt: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly name: (request: Request) => Effect.Effect<string, unknown>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class SessionNamer extends Context.Tag("@sessionflow/core/SessionNamer")<SessionNamer, Service>() {}

/**
 * The name used without a namer, or when the namer fails: the description
 * (else the workflow name) and the creation time, e.g.
 * `Automated article creation - 2026-11-29 13:45`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fallbackName = (request: Request): string =>
  `${request.description ?? request.workflowName} - ${new Date(request.createdAt).toISOString().slice(0, 16).replace("T", " ")}`
