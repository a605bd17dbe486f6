/**
 * The step node, its type-level rules and the runner every container uses.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import type * as Schedule from "effect/Schedule"
import type { StepInput } from "../StepInput.js"
import * as StepOutput from "../StepOutput.js"
import * as WorkflowEvent from "../WorkflowEvent.js"
import * as events from "./events.js"
import * as formatting from "./format.js"

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
  /** runs the node once on `input`; a container runs its children with `runner` */
  readonly execute: (input: StepInput<P, I>, runner: Runner) => Effect.Effect<unknown, E, R>
}

/** @internal */
export type Any = Step<any, any, any, any, any, string>

/**
 * Runs the children of a container: each child gets its events, retry
 * schedule and error policy, and its output is recorded in the run.
 *
 * @internal
 */
export interface Runner {
  readonly run: <S extends Any>(
    step: S,
    input: StepInput<Input<S>, RunInput<S>>
  ) => Effect.Effect<StepOutput.StepOutput<Output<S>>, Error<S>, Context<S>>
  readonly sequence: <const S extends ReadonlyArray<Any>, P, I>(
    steps: S & Chain<S, P, I>,
    input: StepInput<P, I>
  ) => Effect.Effect<StepOutput.StepOutput<ChainOutput<S, P>>, Error<S[number]>, Context<S[number]>>
  readonly outputs: () => Readonly<Record<string, StepOutput.StepOutput>>
  readonly completed: () => ReadonlyArray<StepOutput.StepOutput>
}

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
    readonly execute: (input: StepInput<P, I>, runner: Runner) => Effect.Effect<unknown, E, R>
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
    execute: self.execute as unknown as (input: StepInput<P, I>, runner: Runner) => Effect.Effect<unknown, E2, R>
  })

// -----------------------------------------------------------------------------
// running
// -----------------------------------------------------------------------------

/**
 * An answer to a question that paused a run, given to `Workflow.continue`:
 * the response (encoded) and the asking code's checkpoint.
 *
 * @internal
 */
export interface Answer {
  readonly response: unknown
  readonly checkpoint: unknown
}

/**
 * The questions of the current top-level step: how many times each name has
 * asked (so a question's key is stable when the step runs again), how many
 * times each agent started a run (so an agent run finds its own answers when
 * the step runs again), and the answers given so far.
 *
 * @internal
 */
export interface Questions {
  topLevel: number
  readonly counts: Map<string, number>
  readonly runs: Map<string, number>
  answers: Record<string, Answer>
  /** the run's state, for code that carries on from a question where it stood */
  readonly state: RunState | undefined
}

/**
 * The state of a run in its encoded (JSON) form: saved with a question and
 * restored when the asking code carries on from it.
 *
 * @internal
 */
export interface RunState {
  readonly save: Effect.Effect<unknown, unknown>
  readonly restore: (encoded: unknown) => Effect.Effect<void, unknown>
}

/** @internal */
export const makeQuestions = (topLevel: number, answers: Record<string, Answer>, state?: RunState): Questions => ({
  topLevel,
  counts: new Map(),
  runs: new Map(),
  answers,
  state
})

/**
 * Moves the questions on to top-level step `next`: no question asked there
 * yet, none answered.
 *
 * @internal
 */
export const advanceQuestions = (questions: Questions, next: number): void => {
  questions.topLevel = next
  questions.counts.clear()
  questions.runs.clear()
  questions.answers = {}
}

/**
 * The questions of the workflow run the current fiber works for (none
 * outside of workflow runs): agents ask through it.
 *
 * @internal
 */
export const currentQuestions: FiberRef.FiberRef<Questions | undefined> = FiberRef.unsafeMake<Questions | undefined>(
  undefined
)

/**
 * Counts one more run of `name` in the current top-level step and returns
 * its number (1, 2, …): the same for the same run when the step runs again.
 *
 * @internal
 */
export const startRun = (questions: Questions, name: string): number => {
  const n = (questions.runs.get(name) ?? 0) + 1
  questions.runs.set(name, n)
  return n
}

/**
 * The last of the answered questions that follow the ones `name` asked so
 * far and that `belongs` claims (as one run of an agent asks them one after
 * the other), skipping them: the next question `name` asks comes after it.
 *
 * @internal
 */
export const latestAnswer = (
  questions: Questions,
  name: string,
  belongs: (answer: Answer) => boolean
): Answer | undefined => {
  let n = questions.counts.get(name) ?? 0
  let latest: Answer | undefined
  while (true) {
    const answer = questions.answers[`${questions.topLevel}:${name}#${n + 1}`]
    if (answer === undefined || !belongs(answer)) break
    latest = answer
    n++
  }
  questions.counts.set(name, n)
  return latest
}

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
    readonly done: Array<StepOutput.StepOutput> = []
  ) {}
  // fields, not methods: a container may take them apart (`const { run } = runner`)
  readonly run: Runner["run"] = (step, input) => runStep(step, input, this)
  // the steps were checked against `Chain` where `sequence` was called
  readonly sequence = ((steps, input) => runSequence(steps, input, this)) as Runner["sequence"]
  readonly outputs: Runner["outputs"] = () => Object.fromEntries(this.byName)
  readonly completed: Runner["completed"] = () => this.done
}

/** @internal */
export const makeExecContext = (events: boolean, questions: Questions = makeQuestions(0, {})): ExecContext =>
  new ExecContext(events, questions)

/**
 * The context of a nested workflow run by `runner`: its own outputs by name,
 * the run's completed list (a runner the engine did not make has none to
 * share).
 *
 * @internal
 */
export const nestedExecContext = (runner: Runner): ExecContext =>
  runner instanceof ExecContext
    ? new ExecContext(runner.events, runner.questions, runner.done)
    : new ExecContext(false, makeQuestions(0, {}))

/**
 * Raised (as a defect, so it is in no step's error type and no error policy
 * catches it) by a step that asks a question no answer was given to yet: the
 * runner pauses the run.
 *
 * @internal
 */
export class PauseSignal {
  readonly _tag = "PauseSignal"
  constructor(
    readonly key: string,
    readonly path: ReadonlyArray<string>,
    readonly payload: unknown,
    readonly checkpoint: unknown
  ) {}
}

/** The pause a cause carries, if any. @internal */
export const pauseOf = (cause: Cause.Cause<unknown>): PauseSignal | undefined => {
  for (const defect of Cause.defects(cause)) if (defect instanceof PauseSignal) return defect
  return undefined
}

/**
 * Asks a question: the answer given to it when the run was continued, else
 * the run pauses (with `payload`, and `checkpoint` for the asking code to
 * continue from). A question's key is its name and how many times that name
 * asked before in the current top-level step, so it is the same when the step
 * runs again after `Workflow.continue`.
 *
 * @internal
 */
export const ask = (
  questions: Questions,
  name: string,
  payload: unknown,
  checkpoint?: unknown
): Effect.Effect<Answer> =>
  Effect.suspend(() => {
    const n = (questions.counts.get(name) ?? 0) + 1
    questions.counts.set(name, n)
    const key = `${questions.topLevel}:${name}#${n}`
    const answer = questions.answers[key]
    if (answer !== undefined) return Effect.succeed(answer)
    return Effect.flatMap(
      Effect.map(FiberRef.get(events.currentPath), (path) => (path.length === 0 ? [name] : path)),
      (path) => Effect.die(new PauseSignal(key, path, payload, checkpoint))
    )
  })

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
 * and a failure fails the step (no error policy to apply).
 */
const isPlain = (step: Any, ctx: ExecContext): boolean =>
  !ctx.events && step.onError === "fail" && step.retry === undefined

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
  if (isPlain(node, ctx)) {
    return Effect.map(node.execute(input, ctx), (value) => record(ctx, toOutput(node.name, value)) as StepOutput.StepOutput<Output<S>>)
  }
  const run = node.retry === undefined
    ? node.execute(input, ctx)
    : Effect.retry(node.execute(input, ctx), node.retry as Schedule.Schedule<unknown, Error<S>>)
  const emit = (payload: WorkflowEvent.Payload) => (ctx.events ? WorkflowEvent.emit(payload) : Effect.void)
  const handled = Effect.matchCauseEffect(run, {
    onSuccess: (value) => {
      const output = record(ctx, toOutput(node.name, value))
      return Effect.as(
        emit({ _tag: "StepCompleted", stepName: node.name, kind: node.kind, content: output.content, success: output.success }),
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
  if (!ctx.events) return handled
  return WorkflowEvent.withPathSegment(
    Effect.zipRight(emit({ _tag: "StepStarted", stepName: node.name, kind: node.kind }), handled),
    node.name
  )
}

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
 * input types are checked where the sequence is built (see {@link Chain}).
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
      ? Effect.flatMap(node.execute(inputOf(i, content), ctx), (value) => after(i, record(ctx, toOutput(node.name, value))))
      : Effect.flatMap(runStep(node, inputOf(i, content), ctx), (output) => after(i, output))
  }
  // what follows step `i`: the end, or the journal and the next step
  const after = (i: number, output: StepOutput.StepOutput): Effect.Effect<StepOutput.StepOutput, E, R> => {
    if (output.stop === true || i + 1 >= steps.length) return Effect.succeed(output)
    const journal = between?.(i + 1, output.content)
    return journal === undefined ? loop(i + 1, output.content) : Effect.flatMap(journal, () => loop(i + 1, output.content))
  }
  return loop(index, previous)
}
