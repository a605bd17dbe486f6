/**
 * Runs branches concurrently over one shared session state. The output's
 * content is an object of each branch's content by branch name.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { runStep } from "./internal/engine.js"
import * as Step from "./Step.js"
import * as StepOutput from "./StepOutput.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = <const S extends ReadonlyArray<Step.Any>>(
  name: string,
  branches: S,
  options?: Step.Options & {
    /** how many branches run at once; default all */
    readonly concurrency?: number | undefined
  }
): Step.Step<Step.Error<S[number]>, Step.Context<S[number]>> =>
  Step.makeNode({
    name,
    kind: "parallel",
    ...options,
    execute: (input, ctx) =>
      Effect.gen(function*() {
        const steps = branches as ReadonlyArray<Step.Step<Step.Error<S[number]>, Step.Context<S[number]>>>
        yield* WorkflowEvent.emit({ _tag: "ParallelStarted", stepName: name, branches: steps.map((s) => s.name) })
        const outputs = yield* Effect.forEach(steps, (step) => runStep(step, input, ctx), {
          concurrency: options?.concurrency ?? "unbounded"
        })
        yield* WorkflowEvent.emit({ _tag: "ParallelCompleted", stepName: name })
        const failed = outputs.filter((o) => !o.success)
        return StepOutput.make({
          content: Object.fromEntries(outputs.map((o) => [o.stepName, o.content])),
          success: failed.length === 0,
          error: failed.length === 0 ? undefined : failed.map((o) => `${o.stepName}: ${o.error ?? "failed"}`).join("; "),
          stop: outputs.some((o) => o.stop === true) || undefined
        })
      })
  })
