/**
 * A named sequence of steps, usable wherever a step is.
 *
 * @since 0.1.0
 */
import type * as internal from "./internal/step/node.js"
import * as Step from "./Step.js"
import type { StepInput } from "./StepInput.js"

/**
 * Runs `steps` one after the other; each receives the previous one's
 * content, the first one this sequence's previous content. The sequence's
 * output is its last step's output (its input, when empty). Each step must
 * accept what the one before it produces.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <
  const N extends string,
  const S extends ReadonlyArray<Step.Any>,
  P = internal.FirstInput<S>,
  I = internal.RunInputOf<S>
>(
  name: N,
  steps: S & Step.Chain<S, P, I>,
  options?: Step.Options
): Step.Step<Step.ChainOutput<S, Step.Previous>, Step.Error<S[number]>, Step.Context<S[number]>, P, I, N> => {
  // the signature checks the chain and types the output; here they run as any steps
  const children: ReadonlyArray<Step.Any> = steps
  return Step.container(name, (input: StepInput<P, I>, runner) => runner.sequence(children, input), {
    ...options,
    kind: "steps",
    children
  })
}
