/**
 * The session state of a run: a cell the runner reads directly, and the
 * `SessionState` service over it.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as SessionState from "../SessionState.js"
import * as WorkflowEvent from "../WorkflowEvent.js"
import { diff } from "./json.js"

/** @internal */
export interface Cell<A> {
  value: A
}

/**
 * Succeeds with `b`, after a `StateChanged` event describing how `prev`
 * became `next` when the current fiber's events are consumed and something
 * changed.
 *
 * @internal
 */
export const reportChange = <B>(b: B, prev: unknown, next: unknown): Effect.Effect<B> =>
  prev === next ? Effect.succeed(b) : Effect.flatMap(WorkflowEvent.isEnabled, (enabled) => {
    if (!enabled) return Effect.succeed(b)
    const changes = diff(prev, next)
    return changes.length === 0
      ? Effect.succeed(b)
      : Effect.as(WorkflowEvent.emit({ _tag: "StateChanged", changes }), b)
  })

/**
 * The state service of a run over `cell`. Every update is one synchronous
 * step (so it is atomic). When the run's events are consumed (`events`),
 * each update that changes the value reports it (see {@link reportChange});
 * a run nobody listens to skips that, without looking up its emitter at
 * every update.
 *
 * @internal
 */
export const fromCell = <A>(cell: Cell<A>, events: boolean): SessionState.Service<A> => {
  if (events) {
    const modify = <B>(f: (state: A) => readonly [B, A]): Effect.Effect<B> =>
      Effect.suspend(() => {
        const prev = cell.value
        const [b, next] = f(prev)
        cell.value = next
        return reportChange(b, prev, next)
      })
    return {
      get: Effect.sync(() => cell.value),
      set: (value) => modify(() => [undefined, value]),
      update: (f) => modify((s) => [undefined, f(s)]),
      modify
    }
  }
  return {
    get: Effect.sync(() => cell.value),
    set: (value) =>
      Effect.sync(() => {
        cell.value = value
      }),
    update: (f) =>
      Effect.sync(() => {
        cell.value = f(cell.value)
      }),
    modify: (f) =>
      Effect.sync(() => {
        const [b, next] = f(cell.value)
        cell.value = next
        return b
      })
  }
}
