/**
 * Repeats its steps until an end condition holds or `maxIterations` is
 * reached.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as internal from "./internal/step/node.js"
import * as Step from "./Step.js"
import type { StepInput } from "./StepInput.js"
import * as StepOutput from "./StepOutput.js"
import * as WorkflowError from "./WorkflowError.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * The number of iterations of a loop without `maxIterations`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxIterations = 3

/**
 * What a loop does when it reaches `maxIterations` while its end condition
 * still says no: `"continue"` (the default) ends the loop with the last
 * iteration's output, marked `exhausted`; `"fail"` fails with `LoopExhausted`.
 *
 * @since 0.1.0
 * @category models
 */
export type OnExhausted = "continue" | "fail"

/**
 * A loop. The first iteration receives the loop's input, each later one the
 * previous iteration's output, so the body must accept both. The loop's output
 * is its last iteration's output.
 *
 * After each iteration the loop ends when a step returned `stop`, when the end
 * condition (given that iteration's step outputs) returns true, or after
 * `maxIterations` (default {@link defaultMaxIterations}). A loop with an end
 * condition that reaches `maxIterations` before the condition held is
 * *exhausted*: its output and its last `LoopIterationCompleted` event say so,
 * and with `onExhausted: "fail"` it fails with `LoopExhausted` instead.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <
  const N extends string,
  const S extends ReadonlyArray<Step.Any>,
  E = never,
  R = never,
  P = internal.FirstInput<S>,
  I = internal.RunInputOf<S>,
  X extends OnExhausted = "continue"
>(options: {
  readonly name: N
  readonly description?: string | undefined
  readonly steps: S & Step.Chain<S, P | Step.ChainOutput<S, P>, I>
  /** default {@link defaultMaxIterations} */
  readonly maxIterations?: number | undefined
  /**
   * checked after each iteration with that iteration's step outputs (and the
   * loop's input); true ends the loop
   */
  readonly endCondition?:
    | ((outputs: ReadonlyArray<StepOutput.StepOutput>, input: StepInput<P, I>) => Effect.Effect<boolean, E, R>)
    | undefined
  /** default `"continue"` */
  readonly onExhausted?: X | undefined
}): Step.Step<
  Step.ChainOutput<S, Step.Previous>,
  E | Step.Error<S[number]> | (X extends "fail" ? WorkflowError.LoopExhausted : never),
  R | Step.Context<S[number]>,
  P,
  I,
  N
> => {
  const max = options.maxIterations ?? defaultMaxIterations
  if (!Number.isInteger(max) || max < 1) {
    throw new RangeError(`Loop '${options.name}': maxIterations must be a positive integer, got ${max}`)
  }
  // the signature checks the chain and types the output; here it runs as any steps
  const steps: ReadonlyArray<Step.Any> = options.steps
  return Step.container(
    options.name,
    (input: StepInput<P, I>, runner) =>
      Effect.gen(function*() {
        let current: StepInput<unknown, I> = input
        for (let iteration = 1;; iteration++) {
          yield* WorkflowEvent.emit({ _tag: "LoopIterationStarted", stepName: options.name, iteration })
          const before = runner.completed().length
          const last = yield* runner.sequence(steps, current)
          const ended = last.stop === true || (options.endCondition !== undefined &&
            (yield* options.endCondition(runner.completed().slice(before), {
              ...input,
              previousStepOutputs: runner.outputs()
            })))
          const exhausted = !ended && iteration === max && options.endCondition !== undefined
          const done = ended || iteration === max
          yield* WorkflowEvent.emit({
            _tag: "LoopIterationCompleted",
            stepName: options.name,
            iteration,
            done,
            exhausted
          })
          if (exhausted && options.onExhausted === "fail") {
            const error = new WorkflowError.LoopExhausted({ loop: options.name, maxIterations: max })
            // only raised with onExhausted: "fail", which is what puts LoopExhausted in the type
            return yield* Effect.fail(error as X extends "fail" ? WorkflowError.LoopExhausted : never)
          }
          if (done) return exhausted ? StepOutput.make({ ...last, exhausted: true }) : last
          current = { ...current, previousStepContent: last.content }
        }
      }),
    { kind: "loop", description: options.description, children: steps }
  )
}
