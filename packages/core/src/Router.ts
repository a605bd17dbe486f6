/**
 * Chooses which steps to run at run time. The selector gets the step input and
 * the router's choices, and returns one choice (a step or its name) or several
 * (a sequence) — as a plain value, or as an Effect when it reads the session
 * state, the run context or a service; every choice must be one of the
 * router's `choices`, else the run fails with `RouterChoiceError`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as internal from "./internal/step/node.js"
import * as Step from "./Step.js"
import type { StepInput } from "./StepInput.js"
import * as WorkflowError from "./WorkflowError.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * One choice: a step of `S`, or its name. Any string is accepted (editors
 * still suggest the choices' names); a name that is not a choice's fails the
 * run with `RouterChoiceError`.
 *
 * @since 0.1.0
 * @category models
 */
export type Choice<S extends ReadonlyArray<Step.Any>> = S[number] | Step.Name<S[number]> | (string & {})

/**
 * Whether every choice accepts every choice's output, so that several choices
 * can run as a sequence.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Chainable<S extends ReadonlyArray<Step.Any>> = [Exclude<Step.Output<S[number]>, Step.Previous>] extends
  [Step.Input<S[number]>] ? true : false

/**
 * What a selector may return: one choice, or — when the choices can follow
 * one another (see {@link Chainable}) — several, run in order.
 *
 * @since 0.1.0
 * @category models
 */
export type Selection<S extends ReadonlyArray<Step.Any>> =
  | Choice<S>
  | (Chainable<S> extends true ? ReadonlyArray<Choice<S>> : never)

/**
 * A selector: the choice made from the step input, as a plain
 * {@link Selection} or an Effect of one.
 *
 * @since 0.1.0
 * @category models
 */
export type Selector<S extends ReadonlyArray<Step.Any>, P, I, E, R> = (
  input: StepInput<P, I>,
  choices: S
) => Selection<S> | Effect.Effect<Selection<S>, E, R>

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = <
  const N extends string,
  const S extends ReadonlyArray<Step.Any>,
  E = never,
  R = never,
  P = Step.Input<S[number]>,
  I = internal.RunInputOf<S>
>(options: {
  readonly name: N
  readonly description?: string | undefined
  readonly choices: S & ReadonlyArray<Step.Step<any, any, any, P, I, string>>
  readonly selector: Selector<S, P, I, E, R>
}): Step.Step<
  Step.Output<S[number]>,
  E | WorkflowError.RouterChoiceError | Step.Error<S[number]>,
  R | Step.Context<S[number]>,
  P,
  I,
  N
> =>
  // the signature types the output; the picked steps run as any steps
  Step.container(
    options.name,
    (input: StepInput<P, I>, runner) =>
      Effect.gen(function*() {
        const selected = options.selector({ ...input, previousStepOutputs: runner.outputs() }, options.choices)
        const selection = Effect.isEffect(selected) ? yield* selected : selected
        const picked: ReadonlyArray<Step.Any> = yield* resolve(options.name, options.choices, selection)
        yield* WorkflowEvent.emit({
          _tag: "RouterSelected",
          stepName: options.name,
          selected: picked.map((s) => s.name)
        })
        return yield* runner.sequence(picked, input)
      }),
    { kind: "router", description: options.description, children: options.choices }
  )

const resolve = <S extends ReadonlyArray<Step.Any>>(
  router: string,
  choices: S,
  selection: Selection<S>
): Effect.Effect<ReadonlyArray<S[number]>, WorkflowError.RouterChoiceError> => {
  const items: ReadonlyArray<Step.Any | string> = Array.isArray(selection) ? selection : [selection as Choice<S>]
  const names = choices.map((c) => c.name)
  const out: Array<S[number]> = []
  for (const item of items) {
    if (typeof item === "string") {
      const found = choices.find((c) => c.name === item)
      if (found === undefined) {
        return Effect.fail(
          new WorkflowError.RouterChoiceError({ router, choice: item, reason: "unknown-name", choices: names })
        )
      }
      out.push(found)
    } else if (choices.includes(item)) {
      out.push(item)
    } else {
      return Effect.fail(
        new WorkflowError.RouterChoiceError({
          router,
          choice: String((item as { readonly name?: unknown } | null)?.name ?? item),
          reason: "outside-choices",
          choices: names
        })
      )
    }
  }
  return Effect.succeed(out)
}
