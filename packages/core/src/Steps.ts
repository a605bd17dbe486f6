/**
 * A named sequence of steps, usable wherever a step is.
 *
 * @since 0.1.0
 */
import { runSequence } from "./internal/engine.js"
import * as Step from "./Step.js"

/**
 * Runs `steps` one after the other; each receives the previous one's
 * content. The sequence's output is its last step's output.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const S extends ReadonlyArray<Step.Any>>(
  name: string,
  steps: S,
  options?: Step.Options
): Step.Step<Step.Error<S[number]>, Step.Context<S[number]>> =>
  Step.makeNode({
    name,
    kind: "steps",
    execute: (input, ctx) => runSequence(steps as ReadonlyArray<Step.Step<Step.Error<S[number]>, Step.Context<S[number]>>>, input, ctx),
    ...options
  })
