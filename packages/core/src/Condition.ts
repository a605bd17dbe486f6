/**
 * Runs its steps only when an evaluator (an Effect that may read the session
 * state and the run context) says so; else its `elseSteps`, if any.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { runSequence, snapshotOutputs } from "./internal/engine.js"
import * as Step from "./Step.js"
import type { StepInput } from "./StepInput.js"
import * as StepOutput from "./StepOutput.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * An evaluator: reads the step input (and, through its requirements, the
 * session state or run context) and decides.
 *
 * @since 0.1.0
 * @category models
 */
export type Evaluator = (input: StepInput) => Effect.Effect<boolean, unknown, unknown>

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = <
  const S extends ReadonlyArray<Step.Any>,
  Ev extends Evaluator,
  const Else extends ReadonlyArray<Step.Any> = []
>(options: {
  readonly name: string
  readonly description?: string | undefined
  readonly evaluator: Ev
  readonly steps: S
  readonly elseSteps?: Else | undefined
}): Step.Step<
  Effect.Effect.Error<ReturnType<Ev>> | Step.Error<S[number]> | Step.Error<Else[number]>,
  Effect.Effect.Context<ReturnType<Ev>> | Step.Context<S[number]> | Step.Context<Else[number]>
> =>
  Step.makeNode({
    name: options.name,
    kind: "condition",
    description: options.description,
    execute: (input, ctx) =>
      Effect.gen(function*() {
        const result = yield* (options.evaluator({ ...input, previousStepOutputs: snapshotOutputs(ctx) }) as Effect.Effect<
          boolean,
          Effect.Effect.Error<ReturnType<Ev>>,
          Effect.Effect.Context<ReturnType<Ev>>
        >)
        const branch = result ? options.steps : options.elseSteps ?? []
        const branchName = result ? "steps" : options.elseSteps === undefined ? "none" : "else"
        yield* WorkflowEvent.emit({ _tag: "ConditionEvaluated", stepName: options.name, result, branch: branchName })
        if (branch.length === 0) return StepOutput.make({ content: input.previousStepContent })
        return yield* runSequence(branch as ReadonlyArray<Step.Step<Step.Error<S[number]>, Step.Context<S[number]>>>, input, ctx)
      })
  })
