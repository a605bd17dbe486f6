/**
 * Chooses which steps to run at run time. The selector (an Effect that may
 * read the session state and the run context) returns one step, several
 * steps, a step name or several names; every choice must be one of the
 * router's `choices`, else the run fails with `RouterChoiceError`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { runSequence, snapshotOutputs } from "./internal/engine.js"
import * as Step from "./Step.js"
import type { StepInput } from "./StepInput.js"
import * as WorkflowError from "./WorkflowError.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * What a selector may return.
 *
 * @since 0.1.0
 * @category models
 */
export type Selection = Step.Any | string | ReadonlyArray<Step.Any | string>

/**
 * A selector: picks from the step input (and, through its requirements, the
 * session state or run context).
 *
 * @since 0.1.0
 * @category models
 */
export type Selector = (input: StepInput) => Effect.Effect<Selection, unknown, unknown>

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = <const S extends ReadonlyArray<Step.Any>, Sel extends Selector>(options: {
  readonly name: string
  readonly description?: string | undefined
  readonly choices: S
  readonly selector: Sel
}): Step.Step<
  Effect.Effect.Error<ReturnType<Sel>> | WorkflowError.RouterChoiceError | Step.Error<S[number]>,
  Effect.Effect.Context<ReturnType<Sel>> | Step.Context<S[number]>
> =>
  Step.makeNode({
    name: options.name,
    kind: "router",
    description: options.description,
    execute: (input, ctx) =>
      Effect.gen(function*() {
        const selection = yield* (options.selector({ ...input, previousStepOutputs: snapshotOutputs(ctx) }) as Effect.Effect<
          Selection,
          Effect.Effect.Error<ReturnType<Sel>>,
          Effect.Effect.Context<ReturnType<Sel>>
        >)
        const picked = yield* resolve(options.name, options.choices, selection)
        yield* WorkflowEvent.emit({ _tag: "RouterSelected", stepName: options.name, selected: picked.map((s) => s.name) })
        return yield* runSequence(
          picked as ReadonlyArray<Step.Step<Step.Error<S[number]>, Step.Context<S[number]>>>,
          input,
          ctx
        )
      })
  })

const resolve = (
  router: string,
  choices: ReadonlyArray<Step.Any>,
  selection: Selection
): Effect.Effect<ReadonlyArray<Step.Any>, WorkflowError.RouterChoiceError> => {
  const items: ReadonlyArray<Step.Any | string> = typeof selection === "string" || !Array.isArray(selection)
    ? [selection as Step.Any | string]
    : selection
  const names = choices.map((c) => c.name)
  const out: Array<Step.Any> = []
  for (const item of items) {
    if (typeof item === "string") {
      const found = choices.find((c) => c.name === item)
      if (found === undefined) {
        return Effect.fail(new WorkflowError.RouterChoiceError({ router, choice: item, reason: "unknown-name", choices: names }))
      }
      out.push(found)
    } else if (choices.includes(item)) {
      out.push(item)
    } else {
      return Effect.fail(
        new WorkflowError.RouterChoiceError({ router, choice: item.name, reason: "outside-choices", choices: names })
      )
    }
  }
  return Effect.succeed(out)
}
