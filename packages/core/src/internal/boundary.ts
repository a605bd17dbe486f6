/**
 * Durable boundaries: the points of a run where a process may die and leave
 * the run to recovery — a top-level step about to start (after the journal
 * record of the steps before it), a step whose effects are done but not yet
 * journaled, a tool call or a model reply inside a step, and a run just
 * committed. Nothing happens at them unless a process installed a hook on
 * `globalThis` under {@link hookKey} (`@sessionflow/testing`'s crash-test
 * worker does, to count the boundaries of a run and to die at one of them);
 * without it each point costs one property read.
 *
 * @internal
 */
import * as Effect from "effect/Effect"

/**
 * One boundary, as the hook receives it. `index` is the top-level step's
 * index in its workflow; tools and model calls are reported without it (the
 * hook knows which step started last).
 *
 * @internal
 */
export type Boundary =
  | { readonly _tag: "BeforeStep"; readonly runId: string; readonly step: string; readonly index: number }
  | { readonly _tag: "AfterStep"; readonly runId: string; readonly step: string; readonly index: number }
  | { readonly _tag: "AfterCommit"; readonly runId: string }
  | {
    readonly _tag: "AfterTool"
    readonly tool: string
    readonly params: unknown
    /** the tool is annotated `Tool.Idempotent` or `Tool.Readonly` */
    readonly idempotent: boolean
  }
  | { readonly _tag: "AfterModelCall"; readonly agent: string; readonly method: string; readonly request: unknown }

/** Where the hook is installed: `globalThis[Symbol.for("@sessionflow/core/boundary")]`. */
const hookKey: unique symbol = Symbol.for("@sessionflow/core/boundary") as never

type Hook = (boundary: Boundary) => void

const installed = (): Hook | undefined => (globalThis as { readonly [hookKey]?: Hook })[hookKey]

/**
 * Whether a hook is installed (the engine then reports its boundaries).
 *
 * @internal
 */
export const active = (): boolean => installed() !== undefined

/**
 * Reports a boundary to the hook, if there is one (the boundary is only made
 * then). The hook may end the process.
 *
 * @internal
 */
export const at = (boundary: () => Boundary): Effect.Effect<void> =>
  Effect.sync(() => {
    const hook = installed()
    if (hook !== undefined) hook(boundary())
  })
