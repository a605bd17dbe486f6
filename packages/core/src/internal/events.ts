/**
 * Where the events of a run go: the current run's emitter and step path
 * (fiber refs), and the helper that turns what a run emits into a `Stream`.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { dual } from "effect/Function"
import * as Mailbox from "effect/Mailbox"
import * as Stream from "effect/Stream"
import type * as WorkflowEvent from "../WorkflowEvent.js"

/**
 * Where the events of the current run go.
 *
 * @internal
 */
export interface Emitter {
  /** false when nobody listens (`Workflow.run`): producers may skip work. */
  readonly enabled: boolean
  readonly emit: (payload: WorkflowEvent.Payload, path: ReadonlyArray<string>) => Effect.Effect<void>
}

/** The emitter outside of any run: drops everything. @internal */
export const noopEmitter: Emitter = { enabled: false, emit: () => Effect.void }

/** The current run's emitter. @internal */
export const currentEmitter: FiberRef.FiberRef<Emitter> = FiberRef.unsafeMake(noopEmitter)

/** The path of the step being executed (outermost first). @internal */
export const currentPath: FiberRef.FiberRef<ReadonlyArray<string>> = FiberRef.unsafeMake<ReadonlyArray<string>>([])

/** @internal */
export const isEnabled: Effect.Effect<boolean> = Effect.map(FiberRef.get(currentEmitter), (e) => e.enabled)

/** @internal */
export const emit = (payload: WorkflowEvent.Payload): Effect.Effect<void> =>
  Effect.flatMap(
    FiberRef.get(currentEmitter),
    (emitter) =>
      emitter.enabled ? Effect.flatMap(FiberRef.get(currentPath), (path) => emitter.emit(payload, path)) : Effect.void
  )

/** @internal */
export const log = (message: string): Effect.Effect<void> =>
  Effect.flatMap(isEnabled, (enabled) => (enabled ? emit({ _tag: "Log", message }) : Effect.logInfo(message)))

/** @internal */
export const withPathSegment: {
  (segment: string): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, segment: string): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, segment: string): Effect.Effect<A, E, R> =>
    Effect.flatMap(FiberRef.get(currentPath), (path) => Effect.locally(self, currentPath, [...path, segment]))
)

/**
 * Runs `self` as a run's root: at the empty step path, its events numbered
 * from 0, stamped with the run's ids and the `Clock`'s time, and given to
 * `sink` (none are made when there is no sink).
 *
 * @internal
 */
export const emitTo = (
  ids: { readonly runId: string; readonly sessionId: string },
  sink: ((event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) | undefined
) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    let seq = 0
    const emitter: Emitter = sink === undefined ? noopEmitter : {
      enabled: true,
      emit: (payload, path) =>
        Effect.flatMap(Clock.currentTimeMillis, (timestamp) =>
          sink(
            {
              ...payload,
              runId: ids.runId,
              sessionId: ids.sessionId,
              seq: seq++,
              path,
              timestamp
            } as WorkflowEvent.WorkflowEvent
          ))
    }
    return self.pipe(Effect.locally(currentEmitter, emitter), Effect.locally(currentPath, []))
  })

/**
 * Runs `self` with the events of the given tags going to `capture` instead of
 * the current run; the other events still go to the run.
 *
 * @internal
 */
export const capture = <T extends WorkflowEvent.Tag>(
  tags: ReadonlyArray<T>,
  capture: (payload: WorkflowEvent.PayloadOf<T>) => Effect.Effect<void>
) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(FiberRef.get(currentEmitter), (outer) => {
    const captured: ReadonlySet<WorkflowEvent.Tag> = new Set(tags)
    const isCaptured = (payload: WorkflowEvent.Payload): payload is WorkflowEvent.PayloadOf<T> =>
      captured.has(payload._tag)
    const emitter: Emitter = {
      enabled: true,
      emit: (payload, path) =>
        isCaptured(payload) ? capture(payload) : outer.enabled ? outer.emit(payload, path) : Effect.void
    }
    return Effect.locally(self, currentEmitter, emitter)
  })

/**
 * The items a producer offers, as a `Stream`. The producer runs in a fiber of
 * the stream's scope: the stream ends when it completes, fails with its
 * error, and interrupts it when the stream is stopped early.
 *
 * @internal
 */
export const toStream = <A, E, R>(
  produce: (offer: (item: A) => Effect.Effect<void>) => Effect.Effect<unknown, E, R>
): Stream.Stream<A, E, R> =>
  Stream.unwrapScoped(
    Effect.gen(function*() {
      const mailbox = yield* Mailbox.make<A, E>()
      yield* produce((item) => Effect.asVoid(mailbox.offer(item))).pipe(
        Effect.asVoid,
        Mailbox.into(mailbox),
        Effect.forkScoped
      )
      return Mailbox.toStream(mailbox)
    })
  )
