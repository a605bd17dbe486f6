/**
 * Runs its steps only when an evaluator (an Effect that may read the session
 * state and the run context) says so; else its `elseSteps`, if any.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as internal from "./internal/step/node.js"
import * as Step from "./Step.js"
import type { StepInput } from "./StepInput.js"
import * as StepOutput from "./StepOutput.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * The output type of a condition: its branch's output, or — when it has no
 * `elseSteps` and the evaluator says no — the content it received
 * (`Step.Previous`), passed through unchanged.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Output<S extends ReadonlyArray<Step.Any>, Else extends ReadonlyArray<Step.Any>> =
  | Step.ChainOutput<S, Step.Previous>
  | (Else extends readonly [] ? Step.Previous : Step.ChainOutput<Else, Step.Previous>)

/**
 * A condition. The evaluator and both branches receive the condition's input;
 * each branch's steps must accept what the step before them produces.
 *
 * ```ts
 * Condition.make({
 *   name: "new user?",
 *   evaluator: () => Greeting.get.pipe(Effect.map((s) => !s.greeted)),
 *   steps: [greet]
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <
  const N extends string,
  const S extends ReadonlyArray<Step.Any>,
  const Else extends ReadonlyArray<Step.Any> = [],
  E = never,
  R = never,
  P = internal.FirstInput<S> & internal.FirstInput<Else>,
  I = internal.RunInputOf<S> & internal.RunInputOf<Else>
>(options: {
  readonly name: N
  readonly description?: string | undefined
  readonly evaluator: (input: StepInput<P, I>) => Effect.Effect<boolean, E, R>
  readonly steps: S & Step.Chain<S, P, I>
  readonly elseSteps?: (Else & Step.Chain<Else, P, I>) | undefined
}): Step.Step<
  Output<S, Else>,
  E | Step.Error<S[number]> | Step.Error<Else[number]>,
  R | Step.Context<S[number]> | Step.Context<Else[number]>,
  P,
  I,
  N
> => {
  // the signature checks the chains and types the output; here they run as any steps
  const steps: ReadonlyArray<Step.Any> = options.steps
  const elseSteps: ReadonlyArray<Step.Any> | undefined = options.elseSteps
  return Step.container(
    options.name,
    (input: StepInput<P, I>, runner) =>
      Effect.gen(function*() {
        const result = yield* options.evaluator({ ...input, previousStepOutputs: runner.outputs() })
        const branchName = result ? "steps" : elseSteps === undefined ? "none" : "else"
        yield* WorkflowEvent.emit({ _tag: "ConditionEvaluated", stepName: options.name, result, branch: branchName })
        if (result) return yield* runner.sequence(steps, input)
        if (elseSteps === undefined) return StepOutput.make({ content: input.previousStepContent })
        return yield* runner.sequence(elseSteps, input)
      }),
    {
      kind: "condition",
      description: options.description,
      children: [...steps, ...(elseSteps ?? [])],
      branches: [...steps.map(() => "steps"), ...(elseSteps ?? []).map(() => "else")]
    }
  )
}
