/**
 * Runs branches concurrently over one shared session state. The output's
 * content is an object of each branch's content by branch name.
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
 * The output of a parallel block over branches `S` that receives `P`: each
 * branch's content by branch name.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Output<S extends ReadonlyArray<Step.Any>, P> = {
  readonly [B in S[number] as Step.Name<B>]: internal.Resolve<Step.Output<B>, P>
}

/**
 * Runs every branch on the block's input at once (or `concurrency` at a
 * time). Branch names must be unique. The block is successful when every
 * branch is, and ends the workflow when a branch returned `stop`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <
  const N extends string,
  const S extends ReadonlyArray<Step.Any>,
  P = Step.Input<S[number]>,
  I = internal.RunInputOf<S>
>(
  name: N,
  branches: S & ReadonlyArray<Step.Step<any, any, any, P, I, string>>,
  options?: Step.Options & {
    /** how many branches run at once; default all */
    readonly concurrency?: number | undefined
  }
): Step.Step<Output<S, P>, Step.Error<S[number]>, Step.Context<S[number]>, P, I, N> => {
  const names = new Set<string>()
  for (const branch of branches) {
    if (names.has(branch.name)) {
      throw new globalThis.Error(`Parallel '${name}': two branches are named '${branch.name}'`)
    }
    names.add(branch.name)
  }
  // the signature types the output; here the branches run as any steps
  const children: ReadonlyArray<Step.Any> = branches
  return Step.container(
    name,
    (input: StepInput<P, I>, runner) =>
      Effect.gen(function*() {
        yield* WorkflowEvent.emit({ _tag: "ParallelStarted", stepName: name, branches: [...names] })
        const outputs = yield* Effect.forEach(children, (branch) => runner.run(branch, input), {
          concurrency: options?.concurrency ?? "unbounded"
        })
        yield* WorkflowEvent.emit({ _tag: "ParallelCompleted", stepName: name })
        const failed = outputs.filter((o) => !o.success)
        return StepOutput.make({
          // keyed by the branches' names, as `Output` lists them
          content: Object.fromEntries(outputs.map((o) => [o.stepName, o.content])) as Output<S, P>,
          success: failed.length === 0,
          error: failed.length === 0
            ? undefined
            : failed.map((o) => `${o.stepName}: ${o.error ?? "failed"}`).join("; "),
          stop: outputs.some((o) => o.stop === true) || undefined
        })
      }),
    { ...options, kind: "parallel", children }
  )
}
