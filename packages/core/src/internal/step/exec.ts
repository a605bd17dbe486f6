/**
 * Running steps: the bookkeeping of a run (`ExecContext`, the `Runner` the
 * engine gives every node), one node with its events, retry schedule and
 * error policy, and sequences, on a hot path of plain steps that is nothing
 * but their Effects.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import type * as Schedule from "effect/Schedule"
import * as RunContext from "../../RunContext.js"
import type { StepInput } from "../../StepInput.js"
import * as StepOutput from "../../StepOutput.js"
import * as WorkflowEvent from "../../WorkflowEvent.js"
import * as formatting from "../format.js"
import * as tracing from "../tracing.js"
import type { Any, ChainOutput, Context, Error, Output, Previous, Runner, Step } from "./node.js"
import { makeQuestions, pauseOf, type Questions } from "./questions.js"

/**
 * Per-run bookkeeping shared by the nodes of a run; it is the {@link Runner}
 * the engine gives every node (its own fields stay internal).
 *
 * @internal
 */
export class ExecContext implements Runner {
  /** outputs of completed steps of the current workflow, by name (later ones win) */
  readonly byName = new Map<string, StepOutput.StepOutput>()
  /**
   * the outputs recorded in `byName`, in the order they were recorded: what
   * `byName` held at an earlier point is a prefix of it (see {@link outputsAt})
   */
  readonly recorded: Array<StepOutput.StepOutput> = []
  constructor(
    /**
     * whether the run's events are consumed; when not, steps skip the step
     * path and their own events (the run's hot path)
     */
    readonly events: boolean,
    /** the questions asked (and answered) in the current top-level step */
    readonly questions: Questions,
    /** every completed step output of the run, in completion order */
    readonly done: Array<StepOutput.StepOutput> = [],
    /** whether the run is traced: each step is then a span (see `tracing.ts`) */
    readonly traced: boolean = false
  ) {}
  // fields, not methods: a container may take them apart (`const { run } = runner`)
  readonly run: Runner["run"] = (step, input) => runStep(step, input, this)
  // the steps were checked against `Chain` where `sequence` was called
  readonly sequence = ((steps, input) => runSequence(steps, input, this)) as Runner["sequence"]
  readonly outputs: Runner["outputs"] = () => Object.fromEntries(this.byName)
  readonly completed: Runner["completed"] = () => this.done
}

/** @internal */
export const makeExecContext = (
  events: boolean,
  questions: Questions = makeQuestions(0, {}),
  traced = false
): ExecContext => new ExecContext(events, questions, [], traced)

/**
 * The context of a nested workflow run by `runner`: its own outputs by name,
 * the run's completed list (a runner the engine did not make has none to
 * share).
 *
 * @internal
 */
export const nestedExecContext = (runner: Runner): ExecContext =>
  runner instanceof ExecContext
    ? new ExecContext(runner.events, runner.questions, runner.done, runner.traced)
    : new ExecContext(false, makeQuestions(0, {}))

/** A step's value as its output (built here without `StepOutput.make`'s option handling: this is per step). */
const toOutput = (name: string, value: unknown): StepOutput.StepOutput =>
  StepOutput.isStepOutput(value)
    ? (value.stepName === name ? value : { ...value, stepName: name })
    : { [StepOutput.TypeId]: StepOutput.TypeId, stepName: name, content: value, success: true }

/** Records a completed output: under its name in the current workflow's outputs, and in the run's completed list. */
const record = (ctx: ExecContext, output: StepOutput.StepOutput): StepOutput.StepOutput => {
  ctx.byName.set(output.stepName, output)
  ctx.recorded.push(output)
  ctx.done.push(output)
  return output
}

/**
 * Whether running `step` is its Effect and the recording of its output, and
 * nothing else: nobody listens (no events, no step path), no retry schedule,
 * a failure fails the step (no error policy to apply), and no span.
 */
const isPlain = (step: Any, ctx: ExecContext): boolean =>
  !ctx.events && step.onError === "fail" && step.retry === undefined && !ctx.traced

/**
 * Runs one node: emits its started/completed/failed events at its path,
 * applies its retry schedule and error policy, records its output.
 *
 * @internal
 */
const runStep = <S extends Any>(
  step: S,
  input: StepInput,
  ctx: ExecContext
): Effect.Effect<StepOutput.StepOutput<Output<S>>, Error<S>, Context<S>> => {
  const node = step as Step<Output<S>, Error<S>, Context<S>>
  // (a step function that throws instead of returning an Effect fails its step like any other defect)
  const execute = Effect.suspend(() => node.execute(input, ctx))
  if (isPlain(node, ctx)) {
    return Effect.map(
      execute,
      (value) => record(ctx, toOutput(node.name, value)) as StepOutput.StepOutput<Output<S>>
    )
  }
  const run = node.retry === undefined
    ? execute
    : Effect.retry(execute, node.retry as Schedule.Schedule<unknown, Error<S>>)
  const emit = (payload: WorkflowEvent.Payload) => (ctx.events ? WorkflowEvent.emit(payload) : Effect.void)
  const handled = Effect.matchCauseEffect(run, {
    onSuccess: (value) => {
      const output = record(ctx, toOutput(node.name, value))
      return Effect.as(
        emit({
          _tag: "StepCompleted",
          stepName: node.name,
          kind: node.kind,
          content: output.content,
          success: output.success
        }),
        output as StepOutput.StepOutput<Output<S>>
      )
    },
    onFailure: (cause) => {
      // an interruption or a pause is not the step's failure: no event, no error policy
      if (Cause.isInterruptedOnly(cause) || pauseOf(cause) !== undefined) return Effect.failCause(cause)
      const error = formatting.causeMessage(cause)
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
  const evented = ctx.events
    ? WorkflowEvent.withPathSegment(
      Effect.zipRight(emit({ _tag: "StepStarted", stepName: node.name, kind: node.kind }), handled),
      node.name
    )
    : handled
  return ctx.traced ? stepSpan(evented, node) : evented
}

/** A step in its span, at its path (see `tracing.ts`), with how it ended. */
const stepSpan = <A, E, R>(self: Effect.Effect<StepOutput.StepOutput<A>, E, R>, node: Any) =>
  Effect.flatMap(
    Effect.zip(FiberRef.get(tracing.stepPath), Effect.serviceOption(RunContext.RunContext)),
    ([outer, run]) => {
      const path = [...outer, node.name]
      return tracing.traced(
        Effect.locally(
          Effect.onExit(self, (exit) =>
            Effect.annotateCurrentSpan(
              tracing.attr.stepOutcome,
              Exit.isSuccess(exit)
                ? (exit.value.success ? "completed" : "skipped")
                : pauseOf(exit.cause) !== undefined
                ? "paused"
                : Cause.isInterruptedOnly(exit.cause)
                ? "cancelled"
                : "failed"
            )),
          tracing.stepPath,
          path
        ),
        "Workflow.step",
        {
          ...(Option.isSome(run) ? tracing.runAttributes(run.value) : {}),
          [tracing.attr.step]: node.name,
          [tracing.attr.stepKind]: node.kind,
          [tracing.attr.stepPath]: JSON.stringify(path)
        }
      )
    }
  )

/**
 * The outputs of the current workflow by name as they were when `count`
 * outputs had been recorded (later ones win, in the order `outputs` has them).
 *
 * @internal
 */
export const outputsAt = (ctx: ExecContext, count: number): Record<string, StepOutput.StepOutput> =>
  count === ctx.recorded.length
    ? Object.fromEntries(ctx.byName)
    : Object.fromEntries(ctx.recorded.slice(0, count).map((output) => [output.stepName, output]))

/**
 * The input of the next step of a sequence. Its `previousStepOutputs` are
 * the outputs recorded so far, made into a record only when the step reads
 * them (most steps never do).
 *
 * @internal
 */
export const nextInput = (
  ctx: ExecContext,
  input: unknown,
  previousStepContent: unknown,
  additionalData: Readonly<Record<string, unknown>>
): StepInput => {
  const count = ctx.recorded.length
  let outputs: Readonly<Record<string, StepOutput.StepOutput>> | undefined
  return {
    input,
    previousStepContent,
    get previousStepOutputs() {
      return outputs ??= outputsAt(ctx, count)
    },
    set previousStepOutputs(value) {
      outputs = value
    },
    additionalData
  }
}

/**
 * Runs steps one after the other; each gets the previous one's content. The
 * result is the last output (an empty sequence passes its input's content
 * through); a `stop` output ends the sequence and is passed up. The steps'
 * input types are checked where the sequence is built (see `Chain` in node.ts).
 *
 * @internal
 */
export const runSequence = <S extends ReadonlyArray<Any>, Prev = Previous>(
  steps: S,
  input: StepInput,
  ctx: ExecContext
): Effect.Effect<StepOutput.StepOutput<ChainOutput<S, Prev>>, Error<S[number]>, Context<S[number]>> =>
  Effect.suspend(() =>
    runFrom(
      steps as ReadonlyArray<Step<unknown, Error<S[number]>, Context<S[number]>>>,
      0,
      input.previousStepContent,
      (_, previous) => nextInput(ctx, input.input, previous, input.additionalData),
      ctx,
      undefined
    )
  ) as Effect.Effect<StepOutput.StepOutput<ChainOutput<S, Prev>>, Error<S[number]>, Context<S[number]>>

/**
 * Runs `steps` from `index` on, each on the previous one's content, until
 * one says `stop`; `between(next, content)` runs after each step that is not
 * the last one (a workflow journals there). The result is the last output,
 * or the content passed through when no step runs.
 *
 * @internal
 */
export const runFrom = <E, R>(
  steps: ReadonlyArray<Step<unknown, E, R>>,
  index: number,
  previous: unknown,
  inputOf: (index: number, previous: unknown) => StepInput,
  ctx: ExecContext,
  between: ((next: number, previous: unknown) => Effect.Effect<void, E, R> | undefined) | undefined
): Effect.Effect<StepOutput.StepOutput, E, R> => {
  if (index >= steps.length) return Effect.succeed(StepOutput.make({ content: previous }))
  const loop = (i: number, content: unknown): Effect.Effect<StepOutput.StepOutput, E, R> => {
    const node = steps[i]!
    // the hot path of runStep (see there), recording in the same continuation
    return isPlain(node, ctx)
      ? Effect.flatMap(
        node.execute(inputOf(i, content), ctx),
        (value) => after(i, record(ctx, toOutput(node.name, value)))
      )
      : Effect.flatMap(runStep(node, inputOf(i, content), ctx), (output) => after(i, output))
  }
  // what follows step `i`: the end, or the journal and the next step
  const after = (i: number, output: StepOutput.StepOutput): Effect.Effect<StepOutput.StepOutput, E, R> => {
    if (output.stop === true || i + 1 >= steps.length) return Effect.succeed(output)
    const journal = between?.(i + 1, output.content)
    return journal === undefined
      ? loop(i + 1, output.content)
      : Effect.flatMap(journal, () => loop(i + 1, output.content))
  }
  return loop(index, previous)
}
