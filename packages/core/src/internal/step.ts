/**
 * The step node, its type-level rules and the runner every container uses.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import type * as Schedule from "effect/Schedule"
import type { StepInput } from "../StepInput.js"
import * as StepOutput from "../StepOutput.js"
import * as WorkflowEvent from "../WorkflowEvent.js"
import { causeMessage } from "./format.js"

/** @internal */
export const TypeId: unique symbol = Symbol.for("@sessionflow/core/Step")

/** @internal */
export type TypeId = typeof TypeId

declare const PreviousTypeId: unique symbol

/**
 * A marker in a step's output type: "the content this step received, passed
 * through unchanged" (a skipped `Condition`, a `skipOnError` step that
 * failed). Sequences replace it with the previous step's output type.
 *
 * @internal
 */
export interface Previous {
  readonly [PreviousTypeId]: typeof PreviousTypeId
}

/** @internal */
export type OnError = "fail" | "skip"

/** @internal */
export interface Variance<A, E, R, P, I> {
  readonly _A: (_: never) => A
  readonly _E: (_: never) => E
  readonly _R: (_: never) => R
  readonly _P: (_: P) => void
  readonly _I: (_: I) => void
}

/**
 * A node of a workflow: produces `A` (its content), may fail with `E`, needs
 * `R`, receives the previous content `P` and the run input `I`; `N` is its
 * name.
 *
 * @internal
 */
export interface Step<out A = unknown, out E = never, out R = never, in P = unknown, in I = unknown, out N extends string = string>
  extends Pipeable
{
  readonly [TypeId]: Variance<A, E, R, P, I>
  readonly name: N
  readonly kind: WorkflowEvent.StepKind
  readonly description: string | undefined
  readonly onError: OnError
  readonly retry: Schedule.Schedule<unknown, never> | undefined
  readonly execute: (input: StepInput<P, I>, ctx: ExecContext) => Effect.Effect<unknown, E, R>
}

/** @internal */
export type Any = Step<any, any, any, any, any, string>

/** @internal */
export type Output<S> = S extends Step<infer A, infer _E, infer _R, infer _P, infer _I, infer _N> ? A : never
/** @internal */
export type Error<S> = S extends Step<infer _A, infer E, infer _R, infer _P, infer _I, infer _N> ? E : never
/** @internal */
export type Context<S> = S extends Step<infer _A, infer _E, infer R, infer _P, infer _I, infer _N> ? R : never
/** @internal */
export type Name<S> = S extends Step<infer _A, infer _E, infer _R, infer _P, infer _I, infer N> ? N : never
/**
 * What a step (or every step of a union, at once) accepts as previous content.
 *
 * @internal
 */
export type Input<S> = [S] extends [Step<infer _A, infer _E, infer _R, infer P, infer _I, infer _N>] ? P : never
/** @internal */
export type RunInput<S> = [S] extends [Step<infer _A, infer _E, infer _R, infer _P, infer I, infer _N>] ? I : never

/**
 * What the first step of a sequence accepts (anything, for an empty one).
 *
 * @internal
 */
export type FirstInput<S extends ReadonlyArray<Any>> = S extends readonly [infer H, ...Array<Any>] ? Input<H> : unknown

/**
 * The run input every step of a sequence accepts.
 *
 * @internal
 */
export type RunInputOf<S extends ReadonlyArray<Any>> = S extends readonly [] ? unknown : RunInput<S[number]>

/** `A` with `Previous` replaced by `Prev`. @internal */
export type Resolve<A, Prev> = A extends Previous ? Prev : A

/**
 * The output of a sequence of steps that receives `Prev` (for an array whose
 * length is not known, any of its steps' outputs, or `Prev` when empty).
 *
 * @internal
 */
export type ChainOutput<S extends ReadonlyArray<Any>, Prev> = number extends S["length"]
  ? Resolve<Output<S[number]>, Prev> | Prev
  : S extends readonly [infer H, ...infer T extends ReadonlyArray<Any>] ? ChainOutput<T, Resolve<Output<H>, Prev>>
  : Prev

/**
 * The type each step of a sequence must have: a step that accepts what the
 * step before it produces (`Prev` for the first) and the run input `I`. (For
 * an array whose length is not known, only the run input is checked.)
 *
 * @internal
 */
export type Chain<S extends ReadonlyArray<Any>, Prev, I, Acc extends ReadonlyArray<Any> = []> = number extends
  S["length"] ? ReadonlyArray<Step<any, any, any, any, I, string>>
  : S extends readonly [infer H, ...infer T extends ReadonlyArray<Any>]
    ? Chain<T, Resolve<Output<H>, Prev>, I, [...Acc, Step<any, any, any, Prev, I, string>]>
  : readonly [...Acc]

// -----------------------------------------------------------------------------
// construction
// -----------------------------------------------------------------------------

const Proto = {
  pipe() {
    return pipeArguments(this, arguments)
  },
  toJSON(this: Any) {
    return { _id: "Step", name: this.name, kind: this.kind }
  }
}

/** @internal */
export interface NodeOptions {
  readonly description?: string | undefined
  readonly onError?: OnError | undefined
  readonly retry?: Schedule.Schedule<unknown, never> | undefined
}

/**
 * Builds a step node.
 *
 * @internal
 */
export const makeStep = <A, E, R, P, I, N extends string>(
  options: NodeOptions & {
    readonly name: N
    readonly kind: WorkflowEvent.StepKind
    readonly execute: (input: StepInput<P, I>, ctx: ExecContext) => Effect.Effect<unknown, E, R>
  }
): Step<A, E, R, P, I, N> => {
  const step = Object.create(Proto)
  step[TypeId] = TypeId
  step.name = options.name
  step.kind = options.kind
  step.description = options.description
  step.onError = options.onError ?? "fail"
  step.retry = options.retry
  step.execute = options.execute
  return step
}

/** A copy of a step with some of its fields changed. @internal */
export const update = <A, E, R, P, I, N extends string, A2 = A, E2 = E, N2 extends string = N>(
  self: Step<A, E, R, P, I, N>,
  changes: NodeOptions & { readonly name?: N2 }
): Step<A2, E2, R, P, I, N2> =>
  makeStep<A2, E2, R, P, I, N2>({
    name: (changes.name ?? self.name) as N2,
    kind: self.kind,
    description: changes.description ?? self.description,
    onError: changes.onError ?? self.onError,
    retry: changes.retry ?? self.retry,
    // the error type changes only where the engine's policy does (skipOnError)
    execute: self.execute as unknown as (input: StepInput<P, I>, ctx: ExecContext) => Effect.Effect<unknown, E2, R>
  })

// -----------------------------------------------------------------------------
// running
// -----------------------------------------------------------------------------

/**
 * Per-run bookkeeping shared by the nodes of a run.
 *
 * @internal
 */
export interface ExecContext {
  /** outputs of completed steps of the current workflow, by name (later ones win) */
  readonly outputs: Map<string, StepOutput.StepOutput>
  /** every completed step output of the run, in completion order */
  readonly completed: Array<StepOutput.StepOutput>
  /**
   * whether the run's events are consumed; when not, steps skip the step
   * path and their own events (the run's hot path)
   */
  readonly events: boolean
}

/** @internal */
export const makeExecContext = (events: boolean): ExecContext => ({ outputs: new Map(), completed: [], events })

/** The context of a nested workflow: its own outputs by name, the run's completed list. @internal */
export const nestedExecContext = (ctx: ExecContext): ExecContext => ({
  outputs: new Map(),
  completed: ctx.completed,
  events: ctx.events
})

const toOutput = (name: string, value: unknown): StepOutput.StepOutput =>
  StepOutput.isStepOutput(value)
    ? (value.stepName === name ? value : { ...value, stepName: name })
    : StepOutput.make({ stepName: name, content: value })

const record = (ctx: ExecContext, output: StepOutput.StepOutput): StepOutput.StepOutput => {
  ctx.outputs.set(output.stepName, output)
  ctx.completed.push(output)
  return output
}

/**
 * Runs one node: emits its started/completed/failed events at its path,
 * applies its retry schedule and error policy, records its output.
 *
 * @internal
 */
export const runStep = <S extends Any>(
  step: S,
  input: StepInput,
  ctx: ExecContext
): Effect.Effect<StepOutput.StepOutput<Output<S>>, Error<S>, Context<S>> => {
  const node = step as Step<Output<S>, Error<S>, Context<S>>
  const emit = (payload: WorkflowEvent.Payload) => (ctx.events ? WorkflowEvent.emit(payload) : Effect.void)
  const run = node.retry === undefined
    ? node.execute(input, ctx)
    : Effect.retry(node.execute(input, ctx), node.retry as Schedule.Schedule<unknown, Error<S>>)
  const handled = Effect.matchCauseEffect(run, {
    onSuccess: (value) => {
      const output = record(ctx, toOutput(node.name, value))
      return Effect.as(
        emit({ _tag: "StepCompleted", stepName: node.name, kind: node.kind, content: output.content, success: output.success }),
        output as StepOutput.StepOutput<Output<S>>
      )
    },
    onFailure: (cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
      const error = causeMessage(cause)
      return Effect.zipRight(
        emit({ _tag: "StepFailed", stepName: node.name, kind: node.kind, error }),
        node.onError === "skip"
          ? Effect.succeed(
            // a skipped step passes the content it received through
            record(
              ctx,
              StepOutput.make({ stepName: node.name, content: input.previousStepContent, success: false, error })
            ) as StepOutput.StepOutput<Output<S>>
          )
          : Effect.failCause(cause)
      )
    }
  })
  if (!ctx.events) return handled
  return WorkflowEvent.withPathSegment(
    Effect.zipRight(emit({ _tag: "StepStarted", stepName: node.name, kind: node.kind }), handled),
    node.name
  )
}

/** The outputs of the current workflow's completed steps, by name. @internal */
export const snapshotOutputs = (ctx: ExecContext): Record<string, StepOutput.StepOutput> =>
  Object.fromEntries(ctx.outputs)

/**
 * Runs steps one after the other; each gets the previous one's content. The
 * result is the last output (an empty sequence passes its input's content
 * through); a `stop` output ends the sequence and is passed up. The steps'
 * input types are checked where the sequence is built (see {@link Chain}).
 *
 * @internal
 */
export const runSequence = <S extends ReadonlyArray<Any>, Prev = Previous>(
  steps: S,
  input: StepInput,
  ctx: ExecContext
): Effect.Effect<StepOutput.StepOutput<ChainOutput<S, Prev>>, Error<S[number]>, Context<S[number]>> =>
  Effect.gen(function*() {
    let previous: unknown = input.previousStepContent
    let last: StepOutput.StepOutput | undefined
    for (const step of steps as ReadonlyArray<Step<unknown, Error<S[number]>, Context<S[number]>>>) {
      last = yield* runStep(step, {
        input: input.input,
        previousStepContent: previous,
        previousStepOutputs: snapshotOutputs(ctx),
        additionalData: input.additionalData
      }, ctx)
      previous = last.content
      if (last.stop === true) break
    }
    return (last ?? StepOutput.make({ content: input.previousStepContent })) as StepOutput.StepOutput<
      ChainOutput<S, Prev>
    >
  })
