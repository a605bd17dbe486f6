/**
 * Executor steps (an Effect, a promise, a stream) and user-defined containers.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as RunContext from "../../RunContext.js"
import type { StepInput } from "../../StepInput.js"
import type * as StepOutput from "../../StepOutput.js"
import * as WorkflowError from "../../WorkflowError.js"
import * as WorkflowEvent from "../../WorkflowEvent.js"
import { type Any, makeStep, type NodeOptions, type Previous, type Runner, type Step } from "./node.js"
import { ask, currentQuestions, makeQuestions, type Questions } from "./questions.js"

/** @internal */
export const make = <const N extends string, X, E = never, R = never, P = unknown, I = unknown>(
  name: N,
  execute: (input: StepInput<P, I>) => Effect.Effect<X, E, R>,
  options?: NodeOptions
): Step<StepOutput.Content<X>, E, R, P, I, N> =>
  makeStep({ ...options, name, kind: "step", execute: (input) => execute(input) })

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
): Step<StepOutput.Content<X>, E, R, P, I, N> =>
  makeStep({ ...options, name, kind: options?.kind ?? "container", execute })

/** @internal */
export interface PauseOptions<
  Payload,
  PayloadI,
  Response,
  ResponseI,
  X,
  E,
  R,
  E2,
  R2,
  P,
  I,
  T = never,
  E3 = never,
  R3 = never
> extends NodeOptions {
  readonly payload: Schema.Schema<Payload, PayloadI>
  readonly response: Schema.Schema<Response, ResponseI>
  readonly ask: (input: StepInput<P, I>) => Effect.Effect<Payload, E, R>
  readonly resume: (response: Response, input: StepInput<P, I>) => Effect.Effect<X, E2, R2>
  /**
   * when nobody answers within `after` (from the pause), the run wakes by
   * itself and `onTimeout` gives the step's content instead of `resume`
   */
  readonly timeout?: PauseTimeout<T, E3, R3, P, I> | undefined
}

/** @internal */
interface PauseTimeout<T, E, R, P, I> {
  readonly after: Duration.DurationInput
  readonly onTimeout: (input: StepInput<P, I>) => Effect.Effect<T, E, R>
}

/** The questions of the current run (a run of its own outside of one). */
const questionsNow: Effect.Effect<Questions> = Effect.map(
  FiberRef.get(currentQuestions),
  (questions) => questions ?? makeQuestions(0, {})
)

/** `now` plus a duration, in epoch milliseconds. */
const after = (now: number, duration: Duration.DurationInput): number =>
  now + Duration.toMillis(Duration.decode(duration))

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
  I = unknown,
  T = never,
  E3 = never,
  R3 = never
>(
  name: N,
  options: PauseOptions<Payload, PayloadI, Response, ResponseI, X, E, R, E2, R2, P, I, T, E3, R3>
): Step<
  StepOutput.Content<X> | StepOutput.Content<T>,
  E | E2 | E3 | WorkflowError.RunPaused | WorkflowError.ResponseDecodeError,
  R | R2 | R3,
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
        const questions = yield* questionsNow
        const timeout = options.timeout
        const timeoutAt = timeout === undefined ? undefined : after(yield* Clock.currentTimeMillis, timeout.after)
        const answer = yield* ask(
          questions,
          name,
          encoded,
          undefined,
          timeoutAt === undefined ? undefined : { kind: "question", wakeAt: timeoutAt, timeoutAt }
        )
        if (answer.timedOut === true && timeout !== undefined) return yield* timeout.onTimeout(input)
        const response = yield* decodeResponse(options.response, answer.response)
        return yield* options.resume(response, input)
      })
  })

/**
 * A durable sleep: the run is suspended in the store until `duration` from
 * now (see `Step.sleep`); its content is the content it received.
 *
 * @internal
 */
export const sleep = <const N extends string>(
  name: N,
  duration: Duration.DurationInput,
  options?: NodeOptions
): Step<Previous, WorkflowError.RunPaused, never, unknown, unknown, N> =>
  makeStep({
    ...options,
    name,
    kind: "step",
    execute: (input: StepInput<unknown, unknown>) =>
      Effect.gen(function*() {
        const millis = Duration.toMillis(Duration.decode(duration))
        if (millis > 0) {
          const wakeAt = (yield* Clock.currentTimeMillis) + millis
          yield* ask(yield* questionsNow, name, null, undefined, { kind: "sleep", wakeAt })
        }
        return input.previousStepContent
      })
  })

/** @internal */
export interface Received<A> {
  readonly _tag: "Received"
  readonly value: A
}

/** @internal */
export interface TimedOut {
  readonly _tag: "TimedOut"
}

/** The signal a `waitFor` step waits for, with its Schema, by the step's `execute`. */
const signalSteps = new WeakMap<Function, { readonly signal: string; readonly schema: Schema.Schema<any, any> }>()

/**
 * A step that waits for the signal `name` (see `Step.waitFor`): its content
 * is the signal's value decoded with `schema`; with a `timeout`, a
 * `Received` or `TimedOut`.
 *
 * @internal
 */
export const waitFor = <const N extends string, A, AI>(
  name: N,
  schema: Schema.Schema<A, AI>,
  options?: NodeOptions & { readonly timeout?: Duration.DurationInput | undefined }
): Step<unknown, WorkflowError.RunPaused | WorkflowError.SignalDecodeError, never, unknown, unknown, N> => {
  const timeout = options?.timeout
  const execute = () =>
    Effect.gen(function*() {
      const timeoutAt = timeout === undefined ? undefined : after(yield* Clock.currentTimeMillis, timeout)
      const answer = yield* ask(yield* questionsNow, name, null, undefined, {
        kind: "signal",
        signal: name,
        ...(timeoutAt === undefined ? {} : { wakeAt: timeoutAt, timeoutAt })
      })
      if (answer.timedOut === true) return { _tag: "TimedOut" } satisfies TimedOut
      const value = yield* decodeSignal(name, schema, answer.response)
      return timeout === undefined ? value : ({ _tag: "Received", value } satisfies Received<A>)
    })
  signalSteps.set(execute, { signal: name, schema })
  return makeStep({ ...options, name, kind: "step", execute })
}

/**
 * Decodes a signal's value with a `waitFor` step's Schema: one that does not
 * fit is a `SignalDecodeError`.
 *
 * @internal
 */
export const decodeSignal = <A, I>(
  signal: string,
  schema: Schema.Schema<A, I>,
  value: unknown,
  runId?: string
): Effect.Effect<A, WorkflowError.SignalDecodeError> =>
  decodeOr(
    schema,
    value,
    (current, description, cause) =>
      new WorkflowError.SignalDecodeError({ runId: runId ?? current, signal, description, cause })
  )

/**
 * Decodes `value` with `schema`; one that does not fit fails with `refuse`'s
 * error, given the current run's id ("" outside a run) and the Schema's
 * message.
 */
const decodeOr = <A, I, E>(
  schema: Schema.Schema<A, I>,
  value: unknown,
  refuse: (runId: string, description: string, cause: ParseResult.ParseError) => E
): Effect.Effect<A, E> =>
  Schema.decodeUnknown(schema)(value).pipe(
    Effect.catchAll((error) =>
      Effect.flatMap(Effect.serviceOption(RunContext.RunContext), (run) =>
        Effect.fail(
          refuse(
            Option.match(run, { onNone: () => "", onSome: (r) => r.runId }),
            ParseResult.TreeFormatter.formatErrorSync(error),
            error
          )
        ))
    )
  )

/**
 * The Schemas of the `waitFor` steps of a step tree that wait for `signal`
 * (containers that declare their children are walked; a step listed inside
 * itself once).
 *
 * @internal
 */
export const signalSchemas = (steps: ReadonlyArray<Any>, signal: string): ReadonlyArray<Schema.Schema<any, any>> => {
  const found: Array<Schema.Schema<any, any>> = []
  const seen = new Set<Any>()
  const walk = (nodes: ReadonlyArray<Any>) => {
    for (const node of nodes) {
      if (seen.has(node)) continue
      seen.add(node)
      const spec = signalSteps.get(node.execute)
      if (spec !== undefined && spec.signal === signal) found.push(spec.schema)
      if (node.children !== undefined) walk(node.children)
    }
  }
  walk(steps)
  return found
}

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
  decodeOr(
    schema,
    response,
    (runId, description, cause) => new WorkflowError.ResponseDecodeError({ runId, description, cause })
  )
