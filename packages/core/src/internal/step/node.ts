/**
 * The step node: its type, the type-level rules of sequences, the `Runner` a
 * container runs its children with, and the constructors every kind of step
 * is built with.
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import type * as Schedule from "effect/Schedule"
import type { StepInput } from "../../StepInput.js"
import type * as StepOutput from "../../StepOutput.js"
import type * as WorkflowEvent from "../../WorkflowEvent.js"

/** @internal */
export const TypeId: unique symbol = Symbol.for("@sessionflow/core/Step")

/** @internal */
export type TypeId = typeof TypeId

declare const PreviousTypeId: unique symbol

/**
 * A marker in a step's output type: "the content this step received, passed
 * through unchanged" (a skipped `Condition`, a `skipOnError` step that
 * failed). Sequences replace it with the previous step's output type.
 *
 * @internal
 */
export interface Previous {
  readonly [PreviousTypeId]: typeof PreviousTypeId
}

/** @internal */
export type OnError = "fail" | "skip"

/** @internal */
interface Variance<A, E, R, P, I> {
  readonly _A: (_: never) => A
  readonly _E: (_: never) => E
  readonly _R: (_: never) => R
  readonly _P: (_: P) => void
  readonly _I: (_: I) => void
}

/**
 * A node of a workflow: produces `A` (its content), may fail with `E`, needs
 * `R`, receives the previous content `P` and the run input `I`; `N` is its
 * name.
 *
 * @internal
 */
export interface Step<
  out A = unknown,
  out E = never,
  out R = never,
  in P = unknown,
  in I = unknown,
  out N extends string = string
> extends Pipeable {
  readonly [TypeId]: Variance<A, E, R, P, I>
  readonly name: N
  readonly kind: WorkflowEvent.StepKind
  readonly description: string | undefined
  readonly onError: OnError
  readonly retry: Schedule.Schedule<unknown, never> | undefined
  /**
   * the steps a built-in container runs (in the order it declares them), for
   * the workflow's shape (see `run/shape.ts`); undefined for a leaf, or a
   * container whose children are not known
   */
  readonly children: ReadonlyArray<Any> | undefined
  /**
   * the branch each of `children` belongs to, when a container runs one of
   * several sequences (a `Condition`: `steps` or `else`); undefined otherwise
   */
  readonly branches: ReadonlyArray<string> | undefined
  /** runs the node once on `input`; a container runs its children with `runner` */
  readonly execute: (input: StepInput<P, I>, runner: Runner) => Effect.Effect<unknown, E, R>
}

/** @internal */
export type Any = Step<any, any, any, any, any, string>

/**
 * Runs the children of a container: each child gets its events, retry
 * schedule and error policy, and its output is recorded in the run.
 *
 * @internal
 */
export interface Runner {
  readonly run: <S extends Any>(
    step: S,
    input: StepInput<Input<S>, RunInput<S>>
  ) => Effect.Effect<StepOutput.StepOutput<Output<S>>, Error<S>, Context<S>>
  readonly sequence: <const S extends ReadonlyArray<Any>, P, I>(
    steps: S & Chain<S, P, I>,
    input: StepInput<P, I>
  ) => Effect.Effect<StepOutput.StepOutput<ChainOutput<S, P>>, Error<S[number]>, Context<S[number]>>
  readonly outputs: () => Readonly<Record<string, StepOutput.StepOutput>>
  readonly completed: () => ReadonlyArray<StepOutput.StepOutput>
}

/** @internal */
export type Output<S> = S extends Step<infer A, infer _E, infer _R, infer _P, infer _I, infer _N> ? A : never
/** @internal */
export type Error<S> = S extends Step<infer _A, infer E, infer _R, infer _P, infer _I, infer _N> ? E : never
/** @internal */
export type Context<S> = S extends Step<infer _A, infer _E, infer R, infer _P, infer _I, infer _N> ? R : never
/** @internal */
export type Name<S> = S extends Step<infer _A, infer _E, infer _R, infer _P, infer _I, infer N> ? N : never
/**
 * What a step (or every step of a union, at once) accepts as previous content.
 *
 * @internal
 */
export type Input<S> = [S] extends [Step<infer _A, infer _E, infer _R, infer P, infer _I, infer _N>] ? P : never
/** @internal */
export type RunInput<S> = [S] extends [Step<infer _A, infer _E, infer _R, infer _P, infer I, infer _N>] ? I : never

/**
 * What the first step of a sequence accepts (anything, for an empty one).
 *
 * @internal
 */
export type FirstInput<S extends ReadonlyArray<Any>> = S extends readonly [infer H, ...Array<Any>] ? Input<H> : unknown

/**
 * The run input every step of a sequence accepts.
 *
 * @internal
 */
export type RunInputOf<S extends ReadonlyArray<Any>> = S extends readonly [] ? unknown : RunInput<S[number]>

/** `A` with `Previous` replaced by `Prev`. @internal */
export type Resolve<A, Prev> = A extends Previous ? Prev : A

/**
 * The output of a sequence of steps that receives `Prev` (for an array whose
 * length is not known, any of its steps' outputs, or `Prev` when empty).
 *
 * @internal
 */
export type ChainOutput<S extends ReadonlyArray<Any>, Prev> = number extends S["length"]
  ? Resolve<Output<S[number]>, Prev> | Prev
  : S extends readonly [infer H, ...infer T extends ReadonlyArray<Any>] ? ChainOutput<T, Resolve<Output<H>, Prev>>
  : Prev

/**
 * The type each step of a sequence must have: a step that accepts what the
 * step before it produces (`Prev` for the first) and the run input `I`. (For
 * an array whose length is not known, only the run input is checked.)
 *
 * @internal
 */
export type Chain<S extends ReadonlyArray<Any>, Prev, I, Acc extends ReadonlyArray<Any> = []> = number extends
  S["length"] ? ReadonlyArray<Step<any, any, any, any, I, string>>
  : S extends readonly [infer H, ...infer T extends ReadonlyArray<Any>]
    ? Chain<T, Resolve<Output<H>, Prev>, I, [...Acc, Step<any, any, any, Prev, I, string>]>
  : readonly [...Acc]

// -----------------------------------------------------------------------------
// construction
// -----------------------------------------------------------------------------

const Proto = {
  pipe() {
    return pipeArguments(this, arguments)
  },
  toJSON(this: Any) {
    return { _id: "Step", name: this.name, kind: this.kind }
  }
}

/** @internal */
export interface NodeOptions {
  readonly description?: string | undefined
  readonly onError?: OnError | undefined
  readonly retry?: Schedule.Schedule<unknown, never> | undefined
}

/**
 * Builds a step node.
 *
 * @internal
 */
export const makeStep = <A, E, R, P, I, N extends string>(
  options: NodeOptions & {
    readonly name: N
    readonly kind: WorkflowEvent.StepKind
    readonly children?: ReadonlyArray<Any> | undefined
    readonly branches?: ReadonlyArray<string> | undefined
    readonly execute: (input: StepInput<P, I>, runner: Runner) => Effect.Effect<unknown, E, R>
  }
): Step<A, E, R, P, I, N> => {
  const step = Object.create(Proto)
  step[TypeId] = TypeId
  step.name = options.name
  step.kind = options.kind
  step.description = options.description
  step.onError = options.onError ?? "fail"
  step.retry = options.retry
  step.children = options.children
  step.branches = options.branches
  step.execute = options.execute
  return step
}

/** A copy of a step with some of its fields changed. @internal */
export const update = <A, E, R, P, I, N extends string, A2 = A, E2 = E, N2 extends string = N>(
  self: Step<A, E, R, P, I, N>,
  changes: NodeOptions & { readonly name?: N2 }
): Step<A2, E2, R, P, I, N2> =>
  makeStep<A2, E2, R, P, I, N2>({
    name: (changes.name ?? self.name) as N2,
    kind: self.kind,
    description: changes.description ?? self.description,
    onError: changes.onError ?? self.onError,
    retry: changes.retry ?? self.retry,
    children: self.children,
    branches: self.branches,
    // the error type changes only where the engine's policy does (skipOnError)
    execute: self.execute as unknown as (input: StepInput<P, I>, runner: Runner) => Effect.Effect<unknown, E2, R>
  })
