/**
 * How a chaos process records its calls: an `invoke` line before the call,
 * a `complete` line after it with what it was told.
 */
import { Cause, Effect, Exit, Option } from "effect"
import { append, toldError } from "./history.js"

export const makeRecorder = (file: string, worker: string, incarnation: number) => {
  let counter = 0
  /** A new op id, unique in the run: `<worker>.<incarnation>.<n>`. */
  const nextId = (): string => `${worker}.${incarnation}.${++counter}`

  /** Runs `effect` as the operation `op`, recorded. */
  const recorded = <A, E, R>(
    op: string,
    args: Record<string, unknown>,
    effect: Effect.Effect<A, E, R>,
    show: (a: A) => unknown = (a) => a,
    id: string = nextId()
  ): Effect.Effect<Exit.Exit<A, E>, never, R> =>
    Effect.gen(function*() {
      append(file, { type: "invoke", t: Date.now(), worker, pid: process.pid, id, op, args })
      const exit = yield* Effect.exit(effect)
      const base = { type: "complete", t: Date.now(), worker, pid: process.pid, id, op } as const
      if (Exit.isSuccess(exit)) {
        append(file, { ...base, ok: true, value: show(exit.value) })
      } else {
        const failure = Cause.failureOption(exit.cause)
        const error = Option.isSome(failure)
          ? toldError(failure.value)
          : Cause.isInterruptedOnly(exit.cause)
          ? { _tag: "Interrupted" }
          : { _tag: "Defect", message: Cause.pretty(exit.cause).slice(0, 500) }
        append(file, { ...base, ok: false, error })
      }
      return exit
    })
  return { nextId, recorded }
}
