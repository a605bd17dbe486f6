/**
 * A run started in the background (`Workflow.start`), or resumed by a
 * supervisor (`DurableRuns`): its starter waits only until the run is
 * registered in the store, and a run stopped because the scope it was forked
 * in closed (the process shuts down) is not cancelled: it is left unfinished,
 * with its lease given up, for recovery to carry on.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"

/** @internal */
export interface Background {
  /** done once the run is registered in the store (or ended before) */
  readonly registered: Deferred.Deferred<void, unknown>
}

/**
 * The background run the current fiber runs, if any (a run's steps do not
 * see it: a run inside a step is not the background run).
 *
 * @internal
 */
export const currentBackground: FiberRef.FiberRef<Background | undefined> = FiberRef.unsafeMake<Background | undefined>(
  undefined
)

/**
 * Opens the event log of the run the current fiber runs (see
 * `eventLog.storing`): the run is this caller's from now on, so its events
 * may be written.
 *
 * @internal
 */
export const currentLogGate: FiberRef.FiberRef<(() => void) | undefined> = FiberRef.unsafeMake<
  (() => void) | undefined
>(undefined)

/**
 * Tells a background run's starter that the run is registered (its entry is
 * in the store, running), and opens its event log to this caller.
 *
 * @internal
 */
export const registered: Effect.Effect<void> = Effect.flatMap(
  FiberRef.get(currentLogGate),
  (open) => {
    open?.()
    return Effect.flatMap(
      FiberRef.get(currentBackground),
      (background) => background === undefined ? Effect.void : Deferred.succeed(background.registered, undefined)
    )
  }
)
