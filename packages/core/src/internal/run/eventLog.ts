/**
 * A run's event log: the sink that writes a run's events to the store, in
 * batches, numbering them after the ones already stored, and the reader that
 * replays a run's stored events, then follows the new ones until the run ends.
 *
 * @internal
 */
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as SessionStore from "../../SessionStore.js"
import * as WorkflowError from "../../WorkflowError.js"
import type * as WorkflowEvent from "../../WorkflowEvent.js"
import type { Sink } from "./model.js"

/**
 * What a run is told about its event log (`RunOptions` and `ContinueOptions`).
 *
 * @internal
 */
export interface LogOptions {
  readonly events?: "stored" | "none" | undefined
  readonly eventRetention?: {
    readonly maxEvents?: number | undefined
    readonly keepFor?: Duration.DurationInput | undefined
  } | undefined
}

/** How long a batch of events may wait before it is written, at most (checked as events arrive). */
const flushInterval = 100

/** The most events of one batch. */
const maxBatch = 256

/**
 * How long a follower waits for the last events of a run whose end is
 * recorded (they are written just after), and how often it looks meanwhile.
 */
const endGrace = 5_000
const endTick = Duration.millis(250)

/** The events a follower reads at once. */
const page = 1000

/** The retention a run's options ask for. */
const retentionOf = (options: LogOptions | undefined): SessionStore.EventRetention => ({
  maxEvents: options?.eventRetention?.maxEvents ?? SessionStore.defaultEventRetention.maxEvents,
  keepFor: options?.eventRetention?.keepFor === undefined
    ? SessionStore.defaultEventRetention.keepFor
    : Duration.toMillis(options.eventRetention.keepFor)
})

/**
 * How a write or read the log cannot do without (its end) is tried again
 * when the store fails: a lost connection, a lock held past the store's lock
 * timeout — for about ten seconds.
 */
const storeHiccup = Schedule.exponential(Duration.millis(100), 2).pipe(
  Schedule.union(Schedule.spaced(Duration.seconds(2))),
  Schedule.upTo(Duration.seconds(10))
)

/** Whether an event ends a run's stream: a top-level terminal event, or its pause. */
const endsStream = (event: WorkflowEvent.WorkflowEvent): boolean =>
  SessionStore.isFinalEvent(event) || (event._tag === "RunPaused" && event.path.length === 0)

/**
 * The sink of a run whose events are stored (`events: "stored"`): each event
 * is numbered after the run's stored ones (a continued or resumed run goes on
 * from its log's last `seq`; `known` is false for a run id just made, whose
 * log is empty), kept in a batch, and passed on to `downstream`. A batch is
 * written when it ends the run's stream (its terminal event, its pause: the
 * event is passed on once written), when it has `maxBatch` events, or
 * `flushInterval` millis after its first event (by a timer fiber). Batches
 * are written one at a time, in order. A batch the store refuses is kept and
 * written with the next (logged); the run goes on. Without
 * `events: "stored"`, `downstream` as it is.
 *
 * Only the caller that owns the run writes to its log: a run given an id
 * (`known`) writes nothing until `gate.open` (set when the run is registered
 * or claimed, see `background.registered`), and a call refused before (the
 * id runs elsewhere, ended, or replays a completed run) writes nothing at
 * all. A terminal event is written only when the run ended in the store: an
 * attempt that lost the run, or whose answer was refused (the run still
 * waits), leaves the log to whoever carries the run on.
 *
 * @internal
 */
export const storing = (
  options: LogOptions | undefined,
  runId: string,
  known: boolean,
  downstream: Sink,
  gate: LogGate = { open: !known }
): Sink => {
  if (options?.events !== "stored") return downstream
  const retention = retentionOf(options)
  const lock = Effect.unsafeMakeSemaphore(1)
  let next: number | undefined = known ? undefined : 0
  let batch: Array<WorkflowEvent.WorkflowEvent> = []
  let timer: Fiber.RuntimeFiber<void> | undefined
  const write = (store: SessionStore.Service) =>
    lock.withPermits(1)(Effect.suspend(() => {
      if (!gate.open) return Effect.void
      const written = batch
      batch = []
      if (written.length === 0) return Effect.void
      // the log's last write (its end) has no next write to go with: it is tried again a while
      const last = written.some(endsStream)
      return store.appendEvents(runId, written, retention).pipe(
        last ? Effect.retry(storeHiccup) : identity,
        Effect.catchAll((error) =>
          Effect.zipRight(
            Effect.sync(() => {
              batch = [...written, ...batch]
            }),
            Effect.logWarning(
              `sessionflow: could not store the events of run '${runId}' (kept for the next write)`,
              error
            )
          )
        )
      )
    })).pipe(Effect.uninterruptible)
  const stopTimer = Effect.suspend(() => {
    const running = timer
    timer = undefined
    return running === undefined ? Effect.void : Fiber.interruptFork(running)
  })
  const sink = (event: WorkflowEvent.WorkflowEvent) =>
    Effect.gen(function*() {
      // the run's store (a run always has one: its sink is used inside the run)
      const found = yield* Effect.serviceOption(SessionStore.SessionStore)
      if (Option.isNone(found)) return yield* Effect.dieMessage("a run's events were emitted outside of its store")
      const store = found.value
      if (next === undefined) {
        const [last] = yield* store.readEvents(runId, { latest: true, limit: 1 }).pipe(
          Effect.catchAll(() => Effect.succeed([]))
        )
        next = last === undefined ? 0 : last.seq + 1
      }
      const numbered = { ...event, seq: next++ } as WorkflowEvent.WorkflowEvent
      if (endsStream(numbered) && !gate.open) {
        // refused before the run was this caller's: nothing of it is the run's
        batch = []
      } else if (!SessionStore.isFinalEvent(numbered)) {
        batch.push(numbered)
      } else {
        // the run's end as the store recorded it (another caller may have ended it meanwhile)
        const end = yield* recordedEnd(store, runId, numbered, known)
        if (end !== undefined) batch.push(end)
      }
      if (endsStream(numbered) || batch.length >= maxBatch) {
        yield* stopTimer
        yield* write(store)
      } else if (timer === undefined) {
        timer = yield* Effect.forkDaemon(
          Effect.zipRight(
            Effect.sleep(flushInterval),
            Effect.suspend(() => {
              timer = undefined
              return write(store)
            })
          )
        )
      }
      if (downstream !== undefined) yield* downstream(numbered)
    })
  return sink
}

/** Whether a caller may open a run's log (see {@link storing}). @internal */
export interface LogGate {
  open: boolean
}

/**
 * The terminal event a run's log gets for `event`: none while the run is
 * unfinished in the store (this attempt did not end it) or unknown to it
 * (a run given its id that never registered), else the one its
 * record says — `event` when they agree, else the record's (a run recorded
 * cancelled ends with `RunCancelled`, whatever this attempt ran into).
 */
const recordedEnd = (
  store: SessionStore.Service,
  runId: string,
  event: WorkflowEvent.WorkflowEvent,
  known: boolean
) =>
  Effect.map(
    // (a store that cannot say how the run ended gets no terminal event from this attempt: none beats a wrong one)
    Effect.either(Effect.retry(store.getRun(runId), storeHiccup)),
    (read): WorkflowEvent.WorkflowEvent | undefined => {
      if (Either.isLeft(read)) return undefined
      const found = read.right
      // a run of its own id (a plain run) has no record: its end is this attempt's; a run given its
      // id with neither entry nor record never registered (it failed in the session's queue, say):
      // its id may still run, and end its log then
      if (Option.isNone(found)) return known ? undefined : event
      if (found.value._tag === "Active") return undefined
      const { content, error, status } = found.value.record
      const base = {
        runId: event.runId,
        sessionId: event.sessionId,
        seq: event.seq,
        path: event.path,
        timestamp: event.timestamp
      }
      switch (status) {
        case "completed":
          return event._tag === "RunCompleted" ? event : { ...base, _tag: "RunCompleted", content }
        case "cancelled":
          return event._tag === "RunCancelled" ? event : { ...base, _tag: "RunCancelled" }
        default:
          return event._tag === "RunFailed" ? event : { ...base, _tag: "RunFailed", error: error ?? status }
      }
    }
  )

/**
 * A run's stored events after `after`, then the ones stored later, until the
 * run's stream ends: its terminal event or its pause, or, when the run has
 * ended or paused without them in its log (its process died just after its
 * end was recorded), once everything stored is read and `endGrace` has
 * passed since that end.
 * Events are read by `seq`, so none is read twice and none is skipped: a
 * first event above `after + 1` means the ones between are no longer kept
 * (`RunNotFound`).
 *
 * @internal
 */
export const follow = (
  store: SessionStore.Service,
  runId: string,
  after: number,
  options: SessionStore.WatchOptions
): Stream.Stream<WorkflowEvent.WorkflowEvent, WorkflowError.SessionStoreError | WorkflowError.RunNotFound> =>
  Stream.suspend(() => {
    let last = after
    let checked = false
    const expired = (first: number) =>
      new WorkflowError.RunNotFound({
        runId,
        description: `its events after ${after} are no longer kept (the first kept one is ${first})`
      })
    // every stored event above `last`, page by page
    const readAll: Effect.Effect<
      Array<WorkflowEvent.WorkflowEvent>,
      WorkflowError.SessionStoreError | WorkflowError.RunNotFound
    > = Effect.gen(function*() {
      const out: Array<WorkflowEvent.WorkflowEvent> = []
      while (true) {
        const found = yield* store.readEvents(runId, { after: last, limit: page })
        if (found.length > 0) {
          if (!checked && found[0]!.seq > after + 1) return yield* expired(found[0]!.seq)
          checked = true
          out.push(...found)
          last = found[found.length - 1]!.seq
        }
        if (found.length < page) return out
      }
    })
    // when the run ended or paused (0: it is gone), else undefined
    const endedAt = Effect.map(store.getRun(runId), (found) =>
      Option.match(found, {
        onNone: () => 0,
        onSome: (lookup) =>
          lookup._tag === "Recorded"
            ? lookup.record.completedAt
            : lookup.run.status === "paused"
            ? lookup.run.updatedAt
            : undefined
      }))
    // whether the run was seen ended without its terminal event read: from then
    // on the reader also wakes by itself, until the event comes or `endGrace` passed
    let ending = false
    const read = (wakeUp: "store" | "tick") =>
      Effect.gen(function*() {
        if (wakeUp === "tick" && !ending) return { events: [], done: false }
        const events = yield* readAll
        if (events.some(endsStream)) return { events, done: true }
        if (events.length > 0) return { events, done: false }
        // nothing new: the run may have ended without its terminal event in the log
        const ended = yield* endedAt
        if (ended === undefined) return { events, done: false }
        const rest = yield* readAll
        if (rest.length === 0 && !checked && after < 0) {
          return yield* new WorkflowError.RunNotFound({
            runId,
            description: "it has no stored events (they were not stored, or are no longer kept)"
          })
        }
        if (rest.some(endsStream)) return { events: rest, done: true }
        // the log ended the stream at or before what was asked for (read after its end)
        const [latest] = yield* store.readEvents(runId, { latest: true, limit: 1 })
        if (latest !== undefined && latest.seq <= last && endsStream(latest)) return { events: rest, done: true }
        // the run's last events are written just after its end is recorded: they
        // are waited for a while, and a run whose process died in between ends
        // its stream without them
        ending = true
        const now = yield* Clock.currentTimeMillis
        return { events: rest, done: now - ended >= endGrace }
      })
    return Stream.merge(
      store.watchEvents(runId, options).pipe(
        Stream.as("store" as const),
        // several wake-ups while a read is under way make one more read
        Stream.buffer({ capacity: 1, strategy: "sliding" })
      ),
      Stream.as(Stream.tick(endTick), "tick" as const)
    ).pipe(
      Stream.mapEffect(read),
      Stream.takeUntil((result) => result.done),
      Stream.mapConcatChunk((result) => Chunk.unsafeFromArray(truncate(result.events)))
    )
  })

/** The events up to the first that ends the stream. */
const truncate = (events: Array<WorkflowEvent.WorkflowEvent>): Array<WorkflowEvent.WorkflowEvent> => {
  const end = events.findIndex(endsStream)
  return end < 0 ? events : events.slice(0, end + 1)
}

/**
 * The terminal event of a run that another caller ended (cancelled, given up,
 * interrupted), as it was read before (`run`): written to the run's log, when
 * it keeps one, after its last stored event, so that its followers see the
 * end. A run that was running under a live lease has its owner write it
 * when it stops (at its next lease renewal), after its own last events: it
 * is written here a second after that lease ran out, if the log has no end
 * by then (the owner died; events it stores later are refused). A write
 * that lost its `seq` to another's events is tried again after them.
 *
 * @internal
 */
export const endedBy = (
  store: SessionStore.Service,
  run: SessionStore.ActiveRun,
  end: { readonly _tag: "RunCancelled" } | { readonly _tag: "RunFailed"; readonly error: string },
  now: number
): Effect.Effect<void> => {
  const startedWith = run.startedWith
  if (startedWith?.events !== "stored") return Effect.void
  const retention = retentionOf({
    events: "stored",
    eventRetention: {
      ...(startedWith.maxEvents === undefined ? {} : { maxEvents: startedWith.maxEvents }),
      ...(startedWith.keepFor === undefined ? {} : { keepFor: Duration.millis(startedWith.keepFor) })
    }
  })
  const attempt = Effect.gen(function*() {
    const [last] = yield* store.readEvents(run.runId, { latest: true, limit: 1 })
    if (last !== undefined && SessionStore.isFinalEvent(last)) return true
    const timestamp = yield* Clock.currentTimeMillis
    const event = {
      ...end,
      runId: run.runId,
      sessionId: run.sessionId,
      seq: last === undefined ? 0 : last.seq + 1,
      path: [],
      timestamp
    } as WorkflowEvent.WorkflowEvent
    yield* store.appendEvents(run.runId, [event], retention)
    const [now] = yield* store.readEvents(run.runId, { latest: true, limit: 1 })
    return now !== undefined && SessionStore.isFinalEvent(now)
  })
  const write = Effect.repeat(attempt, { until: (done) => done, times: 3 }).pipe(
    Effect.retry(storeHiccup),
    Effect.asVoid,
    Effect.catchAll((error) =>
      Effect.logWarning(`sessionflow: could not write the end of run '${run.runId}' to its event log`, error)
    )
  )
  if (run.status !== "running" || SessionStore.isAbandoned(run, now)) return write
  // its owner ends the log as it stops, at its next lease renewal; if it never does (it died, or
  // stopped for longer than its lease), it is ended here once the lease is over
  return Effect.asVoid(Effect.forkDaemon(Effect.delay(write, Duration.millis(run.leaseExpiresAt - now + 1000))))
}
