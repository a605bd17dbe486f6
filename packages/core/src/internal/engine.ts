import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Schedule from "effect/Schedule"
import type { Step } from "../Step.js"
import type { StepInput } from "../StepInput.js"
import * as StepOutput from "../StepOutput.js"
import * as WorkflowEvent from "../WorkflowEvent.js"

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
}

/** @internal */
export const makeExecContext = (): ExecContext => ({ outputs: new Map(), completed: [] })

/** A readable message for a cause. @internal */
export const causeMessage = (cause: Cause.Cause<unknown>): string => {
  if (Cause.isInterruptedOnly(cause)) return "interrupted"
  const failure = Cause.failureOption(cause)
  const error = failure._tag === "Some" ? failure.value : Cause.squash(cause)
  if (error instanceof Error) return error.message
  if (typeof error === "string") return error
  try {
    return JSON.stringify(error)
  } catch {
    return String(error)
  }
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
export const runStep = <E, R>(step: Step<E, R>, input: StepInput, ctx: ExecContext): Effect.Effect<StepOutput.StepOutput, E, R> =>
  WorkflowEvent.withPathSegment(
    Effect.gen(function*() {
      yield* WorkflowEvent.emit({ _tag: "StepStarted", stepName: step.name, kind: step.kind })
      const run = step.execute(input, ctx)
      const exit = yield* Effect.exit(
        step.retry === undefined ? run : Effect.retry(run, step.retry as Schedule.Schedule<unknown, E>)
      )
      if (Exit.isSuccess(exit)) {
        const output = record(ctx, toOutput(step.name, exit.value))
        yield* WorkflowEvent.emit({
          _tag: "StepCompleted",
          stepName: step.name,
          kind: step.kind,
          content: output.content,
          success: output.success
        })
        return output
      }
      if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.failCause(exit.cause)
      const error = causeMessage(exit.cause)
      yield* WorkflowEvent.emit({ _tag: "StepFailed", stepName: step.name, kind: step.kind, error })
      if (step.onError === "skip") {
        return record(ctx, StepOutput.make({ stepName: step.name, content: error, success: false, error }))
      }
      return yield* Effect.failCause(exit.cause)
    }),
    step.name
  )

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
