/**
 * Where a run executes: in this process (the default), or elsewhere — on the
 * cluster runner that owns the session (`@sessionflow/cluster`). It is a
 * service swapped by a Layer, like the store: `Workflow.run`, `stream`,
 * `continue`, `continueStream` and `cancel` (and so the HTTP server) ask it
 * where to go, and the workflow code does not change.
 *
 * ```ts
 * // one process (what happens without any Placement layer)
 * Workflow.run(orders, "2 apples").pipe(Effect.provide(Placement.layerLocal))
 * // on a cluster: the runner owning the session runs it
 * Workflow.run(orders, "2 apples").pipe(Effect.provide(ClusterPlacement.layer))
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import type * as Workflow from "./Workflow.js"
import type * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * A placement that sends runs elsewhere. Each operation takes what the
 * `Workflow` function of the same name takes and fails with what it would
 * fail with in this process (the workflow's own errors and `RunError`), or
 * with `WorkflowError.PlacementError` when the run could not be delivered or
 * its error could not be carried back. Its services (a cluster client, the
 * store) are captured when it is built.
 *
 * @since 0.1.0
 * @category models
 */
export interface Remote {
  readonly run: (
    self: Workflow.Any,
    input: unknown,
    options: Workflow.RunOptions<unknown> | undefined
  ) => Effect.Effect<Workflow.RunOutput<unknown, unknown>, unknown>
  readonly stream: (
    self: Workflow.Any,
    input: unknown,
    options: Workflow.RunOptions<unknown> | undefined
  ) => Stream.Stream<WorkflowEvent.WorkflowEvent, unknown>
  readonly continue: (
    self: Workflow.Any,
    runId: string,
    response: unknown,
    options: Workflow.ContinueOptions | undefined
  ) => Effect.Effect<Workflow.RunOutput<unknown, unknown>, unknown>
  readonly continueStream: (
    self: Workflow.Any,
    runId: string,
    response: unknown,
    options: Workflow.ContinueOptions | undefined
  ) => Stream.Stream<WorkflowEvent.WorkflowEvent, unknown>
  readonly cancel: (
    self: Workflow.Any,
    runId: string,
    options: Workflow.SessionOptions | undefined
  ) => Effect.Effect<void, unknown>
}

/**
 * @since 0.1.0
 * @category models
 */
export type Service =
  | { readonly _tag: "Local" }
  | ({ readonly _tag: "Remote" } & Remote)

/**
 * Runs in this process: what `Workflow.run` does without a Placement layer.
 *
 * @since 0.1.0
 * @category constructors
 */
export const local: Service = { _tag: "Local" }

/**
 * A placement sending runs to `remote`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const remote = (remote: Remote): Service => ({ _tag: "Remote", ...remote })

/**
 * The placement of runs; {@link local} unless a layer provides another.
 *
 * @since 0.1.0
 * @category tags
 */
export class Placement extends Context.Reference<Placement>()("@sessionflow/core/Placement", {
  defaultValue: (): Service => local
}) {}

/**
 * Runs execute in this process (the default; a runner of a cluster provides
 * it around the runs it executes, so that they do not go out again).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerLocal: Layer.Layer<Placement> = Layer.succeed(Placement, local)
