/**
 * A run's events as server-sent events: one event per `WorkflowEvent` (`id:`
 * its seq, `event:` its tag, `data:` its JSON on one line), comments as
 * heartbeats, and always a terminal event (`RunCompleted`, `RunFailed`,
 * `RunCancelled`, or `RunPaused` when the run waits for a person) last.
 *
 * @internal
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { WorkflowEvent } from "@sessionflow/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Api from "../WorkflowApi.js"
import { publicRunMessage } from "./errors.js"

const encoder = new TextEncoder()

/** JSON text of a value that may hold something JSON cannot say (a BigInt, a cycle). */
const json = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? "null"
  } catch (error) {
    return JSON.stringify({ unserializable: String(error) })
  }
}

/**
 * One server-sent event.
 *
 * @internal
 */
const frame = (event: WorkflowEvent.WorkflowEvent): string =>
  `id: ${event.seq}\nevent: ${event._tag}\ndata: ${json(event)}\n\n`

/** @internal */
const heartbeatFrame = ": keep-alive\n\n"

/** @internal */
export interface StreamOptions {
  readonly timeout: Duration.Duration
  readonly heartbeat: Duration.Duration
  /** the most unsent bytes kept for one client; past it the client is cut off and the run goes on without it */
  readonly maxBuffered: number
  /** where a run cut off from its client goes on (the server's scope) */
  readonly scope: Scope.Scope
  /** the session id the request named, for a terminal event before `RunStarted` (never in practice) */
  readonly sessionId: string | undefined
  /** whether a client that goes away interrupts the run (else the run goes on without it) */
  readonly cancelOnDisconnect: boolean
}

/**
 * The body of a streamed run: its events as server-sent events, ending with
 * exactly one terminal event whatever happens — the run's own (a pause's
 * `RunPaused` ends the run's stream normally), or, when the
 * run timed out (it is interrupted and recorded as cancelled first), a
 * `RunCancelled` the server adds — with a comment every `heartbeat` while the
 * run is quiet. A `RunFailed` is held back until the run's error is known, so
 * that an ownership error reads as a missing session. The run is consumed by
 * a fiber of the response's scope: a client that goes away interrupts it.
 *
 * @internal
 */
export const response = <E, R>(
  events: Stream.Stream<WorkflowEvent.WorkflowEvent, E, R>,
  options: StreamOptions
): Stream.Stream<Uint8Array, never, R> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const mailbox = yield* Mailbox.make<Uint8Array>()
    // what the client has not taken yet: bounded, so a client that does not read costs at most maxBuffered
    let buffered = 0
    let cutOff = false
    let gone = false
    const send = (text: string) =>
      Effect.suspend(() => {
        if (cutOff || gone) return Effect.void
        const bytes = encoder.encode(text)
        if (buffered + bytes.length > options.maxBuffered) {
          // too slow: the client is cut off (its response ends); the run goes on without it
          cutOff = true
          return Effect.zipRight(
            Effect.logWarning(`sessionflow server: a client read its event stream too slowly and was cut off`),
            mailbox.end
          )
        }
        buffered += bytes.length
        return mailbox.offer(bytes)
      })
    let last: WorkflowEvent.WorkflowEvent | undefined
    let failed: WorkflowEvent.RunFailed | undefined
    const timeoutMillis = Math.round(Duration.toMillis(options.timeout))
    const added = (tag: "RunFailed" | "RunCancelled", error?: string) =>
      Effect.map(Clock.currentTimeMillis, (timestamp): WorkflowEvent.WorkflowEvent => {
        const base = {
          runId: last?.runId ?? "",
          sessionId: last?.sessionId ?? options.sessionId ?? "",
          seq: last === undefined ? 0 : last.seq + 1,
          path: [],
          timestamp
        }
        return tag === "RunFailed" ? { _tag: tag, ...base, error: error ?? "" } : { _tag: tag, ...base }
      })
    const terminal = (cause: Cause.Cause<unknown>): Effect.Effect<WorkflowEvent.WorkflowEvent> => {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure) && failure.value instanceof Api.RunTimeout) return added("RunCancelled")
      // a defect: the run's own RunFailed (the message its record keeps), else a generic one
      const message = Option.match(failure, {
        onNone: () => failed?.error ?? "InternalError: Internal server error",
        onSome: (error) => publicRunMessage(error, failed?.error)
      })
      const event = failed === undefined
        ? added("RunFailed", message)
        : Effect.succeed<WorkflowEvent.WorkflowEvent>({ ...failed, error: message })
      return Option.isNone(failure)
        ? Effect.zipRight(Effect.logError("sessionflow server: a streamed run died", Cause.squash(cause)), event)
        : event
    }
    const run = Stream.runForEach(events, (event) => {
      last = event
      if (event._tag === "RunFailed" && event.path.length === 0) {
        failed = event
        return Effect.void
      }
      return send(frame(event))
    }).pipe(
      Effect.timeoutFail({
        duration: options.timeout,
        onTimeout: () =>
          new Api.RunTimeout({
            timeoutMillis,
            message: `The run took longer than ${timeoutMillis} ms: it was cancelled and committed nothing`
          })
      }),
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause) ? Effect.void : Effect.flatMap(terminal(cause), (event) => send(frame(event)))
      ),
      Effect.ensuring(mailbox.end)
    )
    // the run lives in the server's scope: a client that goes away interrupts it only with
    // `cancelOnDisconnect` (else the run goes on, its events stored for a client that comes back); one cut
    // off for reading too slowly never does
    const fiber = yield* Effect.forkIn(run, options.scope)
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        gone = true
        return cutOff || !options.cancelOnDisconnect ? Effect.void : Fiber.interrupt(fiber)
      })
    )
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(options.heartbeat), send(heartbeatFrame))))
    return Mailbox.toStream(mailbox).pipe(
      Stream.mapChunks((chunk) => {
        for (const bytes of chunk) buffered -= bytes.length
        return chunk
      })
    )
  }))

/** @internal */
export const eventStreamResponse = (body: Stream.Stream<Uint8Array>): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.stream(body, {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
  })

/**
 * The body of a run's stored events (`GET …/runs/:runId/events`): one
 * server-sent event per `WorkflowEvent`, as a live run's stream frames them
 * (`id:` its seq, so that a client that reconnects sends it back as
 * `Last-Event-ID`), a comment every `heartbeat`; it ends after the run's
 * terminal event (or its pause). When the events cannot be read (those after
 * the client's last one are no longer kept), an `EventsFailed` event with
 * `message` ends it.
 *
 * @internal
 */
export const logResponse = <E, R>(
  events: Stream.Stream<WorkflowEvent.WorkflowEvent, E, R>,
  options: { readonly heartbeat: Duration.Duration; readonly message: (error: E) => string }
): Stream.Stream<Uint8Array, never, R> => {
  const frames = events.pipe(
    Stream.map(frame),
    Stream.catchAll((error) =>
      Stream.succeed(`event: EventsFailed\ndata: ${json({ error: options.message(error) })}\n\n`)
    )
  )
  const heartbeats = Stream.repeatEffect(Effect.as(Effect.sleep(options.heartbeat), heartbeatFrame))
  return Stream.merge(frames, heartbeats, { haltStrategy: "left" }).pipe(
    Stream.map((text) => encoder.encode(text))
  )
}

/**
 * The body of a watched session: one `SessionUpdate` event per version (`id:`
 * the version), a comment every `heartbeat`, and, when the watch fails (the
 * session became another user's, its state cannot be read), a `WatchFailed`
 * event with `message` that ends it. It never ends otherwise: a client that
 * goes away interrupts it.
 *
 * @internal
 */
export const watchResponse = <E, R>(
  updates: Stream.Stream<Api.SessionUpdate, E, R>,
  options: { readonly heartbeat: Duration.Duration; readonly message: (error: E) => string }
): Stream.Stream<Uint8Array, never, R> => {
  const frames = updates.pipe(
    Stream.map((update) => `id: ${update.version}\nevent: SessionUpdate\ndata: ${json(update)}\n\n`),
    Stream.catchAll((error) =>
      Stream.succeed(`event: WatchFailed\ndata: ${json({ error: options.message(error) })}\n\n`)
    )
  )
  const heartbeats = Stream.repeatEffect(Effect.as(Effect.sleep(options.heartbeat), heartbeatFrame))
  return Stream.merge(frames, heartbeats, { haltStrategy: "left" }).pipe(
    Stream.map((text) => encoder.encode(text))
  )
}
