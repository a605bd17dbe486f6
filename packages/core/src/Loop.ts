/**
 * Repeats its steps until an end condition holds or `maxIterations` is
 * reached.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { runSequence, snapshotOutputs } from "./internal/engine.js"
import * as Step from "./Step.js"
import type { StepInput } from "./StepInput.js"
import type * as StepOutput from "./StepOutput.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * Decides after each iteration, from that iteration's outputs, whether the
 * loop is done.
 *
 * @since 0.1.0
 * @category models
 */
export type EndCondition<E = unknown, R = unknown> = (
  outputs: ReadonlyArray<StepOutput.StepOutput>,
  input: StepInput
) => Effect.Effect<boolean, E, R>

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = <const S extends ReadonlyArray<Step.Any>, End extends EndCondition = EndCondition<never, never>>(options: {
  readonly name: string
  readonly description?: string | undefined
  readonly steps: S
  /** default 3 */
  readonly maxIterations?: number | undefined
  /** checked after each iteration with that iteration's outputs; true ends the loop */
  readonly endCondition?: End | undefined
}): Step.Step<
  Effect.Effect.Error<ReturnType<End>> | Step.Error<S[number]>,
  Effect.Effect.Context<ReturnType<End>> | Step.Context<S[number]>
> =>
  Step.makeNode({
    name: options.name,
    kind: "loop",
    description: options.description,
    execute: (input, ctx) =>
      Effect.gen(function*() {
        const max = options.maxIterations ?? 3
        const steps = options.steps as ReadonlyArray<Step.Step<Step.Error<S[number]>, Step.Context<S[number]>>>
        let current: StepInput = input
        let last: StepOutput.StepOutput | undefined
        for (let iteration = 1; iteration <= max; iteration++) {
          yield* WorkflowEvent.emit({ _tag: "LoopIterationStarted", stepName: options.name, iteration })
          const before = ctx.completed.length
          last = yield* runSequence(steps, current, ctx)
          const outputs = ctx.completed.slice(before)
          const done = last.stop === true || iteration === max ||
            (options.endCondition !== undefined &&
              (yield* (options.endCondition(outputs, { ...current, previousStepOutputs: snapshotOutputs(ctx) }) as Effect.Effect<
                boolean,
                Effect.Effect.Error<ReturnType<End>>,
                Effect.Effect.Context<ReturnType<End>>
              >)))
          yield* WorkflowEvent.emit({ _tag: "LoopIterationCompleted", stepName: options.name, iteration, done })
          if (done) break
          current = { ...current, previousStepContent: last.content }
        }
        return last ?? input.previousStepContent
      })
  })
