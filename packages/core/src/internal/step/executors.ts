/**
 * Executor steps (an Effect, a promise, a stream) and user-defined containers.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as RunContext from "../../RunContext.js"
import type { StepInput } from "../../StepInput.js"
import * as StepOutput from "../../StepOutput.js"
import * as WorkflowError from "../../WorkflowError.js"
import * as WorkflowEvent from "../../WorkflowEvent.js"
import { type Any, makeStep, type NodeOptions, type Runner, type Step } from "./node.js"
import { ask, currentQuestions, makeQuestions } from "./questions.js"

/** @internal */
export const make = <const N extends string, X, E = never, R = never, P = unknown, I = unknown>(
  name: N,
  execute: (input: StepInput<P, I>) => Effect.Effect<X, E, R>,
  options?: NodeOptions
): Step<StepOutput.Content<X>, E, R, P, I, N> => makeStep({ ...options, name, kind: "step", execute: (input) => execute(input) })

/** @internal */
export const promise = <const N extends string, X, P = unknown, I = unknown>(
  name: N,
  execute: (input: StepInput<P, I>, signal: AbortSignal) => Promise<X>,
  options?: NodeOptions
): Step<StepOutput.Content<X>, WorkflowError.StepError, never, P, I, N> =>
  make(
    name,
    (input: StepInput<P, I>) =>
      Effect.tryPromise({
        try: (signal) => execute(input, signal),
        catch: (cause) =>
          new WorkflowError.StepError({
            step: name,
            description: cause instanceof globalThis.Error ? cause.message : String(cause),
            cause
          })
      }),
    options
  )

/** @internal */
export const stream = <const N extends string, X = never, E = never, R = never, P = unknown, I = unknown>(
  name: N,
  execute: (input: StepInput<P, I>) => Stream.Stream<string | StepOutput.StepOutput<X>, E, R>,
  options?: NodeOptions
): Step<string | X, E, R, P, I, N> =>
  makeStep({
    ...options,
    name,
    kind: "step",
    execute: (input: StepInput<P, I>) =>
      Effect.suspend(() => {
        let text = ""
        let output: StepOutput.StepOutput<X> | undefined
        return execute(input).pipe(
          Stream.runForEach((item) => {
            if (typeof item === "string") {
              text += item
              return WorkflowEvent.emit({ _tag: "TextDelta", delta: item })
            }
            output = item
            return Effect.void
          }),
          Effect.map(() => output ?? text)
        )
      })
  })

/** @internal */
export const container = <const N extends string, X, E = never, R = never, P = unknown, I = unknown>(
  name: N,
  execute: (input: StepInput<P, I>, runner: Runner) => Effect.Effect<X, E, R>,
  options?: NodeOptions & {
    readonly kind?: WorkflowEvent.StepKind | undefined
    /** the steps it runs, when known (see `Step.children`) */
    readonly children?: ReadonlyArray<Any> | undefined
    /** the branch of each child, for a container running one of several sequences */
    readonly branches?: ReadonlyArray<string> | undefined
  }
): Step<StepOutput.Content<X>, E, R, P, I, N> => makeStep({ ...options, name, kind: options?.kind ?? "container", execute })

/** @internal */
export interface PauseOptions<Payload, PayloadI, Response, ResponseI, X, E, R, E2, R2, P, I> extends NodeOptions {
  readonly payload: Schema.Schema<Payload, PayloadI>
  readonly response: Schema.Schema<Response, ResponseI>
  readonly ask: (input: StepInput<P, I>) => Effect.Effect<Payload, E, R>
  readonly resume: (response: Response, input: StepInput<P, I>) => Effect.Effect<X, E2, R2>
}

/** @internal */
export const pause = <
  const N extends string,
  Payload,
  PayloadI,
  Response,
  ResponseI,
  X,
  E = never,
  R = never,
  E2 = never,
  R2 = never,
  P = unknown,
  I = unknown
>(
  name: N,
  options: PauseOptions<Payload, PayloadI, Response, ResponseI, X, E, R, E2, R2, P, I>
): Step<
  StepOutput.Content<X>,
  E | E2 | WorkflowError.RunPaused | WorkflowError.ResponseDecodeError,
  R | R2,
  P,
  I,
  N
> =>
  makeStep({
    name,
    kind: "step",
    description: options.description,
    onError: options.onError,
    retry: options.retry,
    execute: (input: StepInput<P, I>) =>
      Effect.gen(function*() {
        const payload = yield* options.ask(input)
        // the payload is stored and shown as its Schema's encoded form
        const encoded = yield* Effect.orDie(Schema.encode(options.payload)(payload))
        const questions = (yield* FiberRef.get(currentQuestions)) ?? makeQuestions(0, {})
        const answer = yield* ask(questions, name, encoded)
        const response = yield* decodeResponse(options.response, answer.response)
        return yield* options.resume(response, input)
      })
  })

/**
 * Decodes the response given to a question with its Schema; one that does not
 * fit is a `ResponseDecodeError` (and the run waits for another).
 *
 * @internal
 */
export const decodeResponse = <A, I>(
  schema: Schema.Schema<A, I>,
  response: unknown
): Effect.Effect<A, WorkflowError.ResponseDecodeError> =>
  Schema.decodeUnknown(schema)(response).pipe(
    Effect.catchAll((error) =>
      Effect.flatMap(Effect.serviceOption(RunContext.RunContext), (run) =>
        Effect.fail(
          new WorkflowError.ResponseDecodeError({
            runId: Option.match(run, { onNone: () => "", onSome: (r) => r.runId }),
            description: ParseResult.TreeFormatter.formatErrorSync(error),
            cause: error
          })
        ))
    )
  )
