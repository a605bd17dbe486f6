/**
 * The spans of runs, steps, model and tool calls. They are made only when the
 * fiber traces (a tracer other than Effect's built-in one is installed, e.g.
 * `@effect/opentelemetry`'s, and tracing is not disabled): without one a span
 * would be built and dropped on every step, and a run is the hot path.
 *
 * @internal
 */
import * as EffectContext from "effect/Context"
import * as DefaultServices from "effect/DefaultServices"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Tracer from "effect/Tracer"

const nativeTracer = EffectContext.get(DefaultServices.liveServices, Tracer.Tracer)

/** Whether the fiber traces. @internal */
export const isTracing = (fiber: Fiber.RuntimeFiber<unknown, unknown>): boolean =>
  fiber.currentTracer !== nativeTracer && fiber.getFiberRef(FiberRef.currentTracerEnabled)

/** Span attributes. @internal */
export type Attributes = Readonly<Record<string, unknown>>

/**
 * `self` in a span named `name` with `attributes`, when the fiber traces;
 * `after` adds attributes from the result. Else `self` as it is.
 *
 * @internal
 */
export const span = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  name: string,
  attributes: () => Attributes,
  after?: (a: A) => Attributes
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => isTracing(fiber) ? traced(self, name, attributes(), after) : self)

/** `self` in a span (for a caller that knows the fiber traces). @internal */
export const traced = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  name: string,
  attributes: Attributes,
  after?: (a: A) => Attributes
): Effect.Effect<A, E, R> =>
  Effect.withSpan(after === undefined ? self : Effect.tap(self, (a) => Effect.annotateCurrentSpan(after(a))), name, {
    attributes,
    captureStackTrace: false
  })

/** The path of the step being traced (outermost first), kept only while tracing. @internal */
export const stepPath: FiberRef.FiberRef<ReadonlyArray<string>> = FiberRef.unsafeMake<ReadonlyArray<string>>([])

/** The attribute names. @internal */
export const attr = {
  workflow: "sessionflow.workflow.name",
  session: "sessionflow.session.id",
  run: "sessionflow.run.id",
  user: "sessionflow.user.id",
  durability: "sessionflow.run.durability",
  runOutcome: "sessionflow.run.outcome",
  step: "sessionflow.step.name",
  stepKind: "sessionflow.step.kind",
  stepPath: "sessionflow.step.path",
  stepOutcome: "sessionflow.step.outcome",
  agent: "sessionflow.agent.name",
  model: "gen_ai.response.model",
  tool: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolError: "sessionflow.tool.is_error"
} as const

/** The attributes that say which run a span belongs to. @internal */
export const runAttributes = (run: {
  readonly workflowName: string
  readonly sessionId: string
  readonly runId: string
  readonly userId: string | undefined
}): Attributes => ({
  [attr.workflow]: run.workflowName,
  [attr.session]: run.sessionId,
  [attr.run]: run.runId,
  ...(run.userId === undefined ? {} : { [attr.user]: run.userId })
})
