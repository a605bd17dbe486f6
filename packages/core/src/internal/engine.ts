import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as Schedule from "effect/Schedule"
import type { Step } from "../Step.js"
import type { StepInput } from "../StepInput.js"
import * as StepOutput from "../StepOutput.js"
import * as WorkflowEvent from "../WorkflowEvent.js"
import { errorText } from "./agent.js"

/**
 * Per-run bookkeeping shared by every node of the run.
 *
 * @internal
 */
export interface ExecContext {
  /** outputs of completed steps, by name (later ones win) */
  readonly outputs: Map<string, StepOutput.StepOutput>
  /** every completed step output, in completion order */
  readonly completed: Array<StepOutput.StepOutput>
  /**
   * whether the run's events are consumed; when not, steps skip the step
   * path and their own events (the run's hot path)
   */
  readonly events: boolean
}

/** @internal */
export const makeExecContext = (events: boolean): ExecContext => ({ outputs: new Map(), completed: [], events })

/** A readable message for a cause (its typed failure, else its defect). @internal */
export const causeMessage = (cause: Cause.Cause<unknown>): string => {
  if (Cause.isInterruptedOnly(cause)) return "interrupted"
  const failure = Cause.failureOption(cause)
  return errorText(failure._tag === "Some" ? failure.value : Cause.squash(cause))
}

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
export const runStep = <E, R>(step: Step<E, R>, input: StepInput, ctx: ExecContext): Effect.Effect<StepOutput.StepOutput, E, R> => {
  const emit = (payload: WorkflowEvent.Payload) => (ctx.events ? WorkflowEvent.emit(payload) : Effect.void)
  const run = step.retry === undefined
    ? step.execute(input, ctx)
    : Effect.retry(step.execute(input, ctx), step.retry as Schedule.Schedule<unknown, E>)
  const handled = Effect.matchCauseEffect(run, {
    onSuccess: (value) => {
      const output = record(ctx, toOutput(step.name, value))
      return Effect.as(
        emit({ _tag: "StepCompleted", stepName: step.name, kind: step.kind, content: output.content, success: output.success }),
        output
      )
    },
    onFailure: (cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
      const error = causeMessage(cause)
      return Effect.zipRight(
        emit({ _tag: "StepFailed", stepName: step.name, kind: step.kind, error }),
        step.onError === "skip"
          ? Effect.succeed(record(ctx, StepOutput.make({ stepName: step.name, content: error, success: false, error })))
          : Effect.failCause(cause)
      )
    }
  })
  if (!ctx.events) return handled
  return WorkflowEvent.withPathSegment(
    Effect.zipRight(emit({ _tag: "StepStarted", stepName: step.name, kind: step.kind }), handled),
    step.name
  )
}

/** @internal */
export const snapshotOutputs = (ctx: ExecContext): Record<string, StepOutput.StepOutput> =>
  Object.fromEntries(ctx.outputs)

/**
 * Runs steps one after the other; each gets the previous one's content. The
 * result is the last output (content passes through an empty sequence); a
 * `stop` output ends the sequence and is passed up.
 *
 * @internal
 */
export const runSequence = <E, R>(
  steps: ReadonlyArray<Step<E, R>>,
  input: StepInput,
  ctx: ExecContext
): Effect.Effect<StepOutput.StepOutput, E, R> =>
  Effect.gen(function*() {
    let previous = input.previousStepContent
    let last: StepOutput.StepOutput | undefined
    for (const step of steps) {
      last = yield* runStep(step, {
        input: input.input,
        previousStepContent: previous,
        previousStepOutputs: snapshotOutputs(ctx),
        additionalData: input.additionalData
      }, ctx)
      previous = last.content
      if (last.stop === true) break
    }
    return last ?? StepOutput.make({ content: input.previousStepContent })
  })
