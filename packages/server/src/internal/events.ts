/**
 * A run's events as server-sent events: one event per `WorkflowEvent` (`id:`
 * its seq, `event:` its tag, `data:` its JSON on one line), comments as
 * heartbeats, and always a terminal event (`RunCompleted`, `RunFailed` or
 * `RunCancelled`) last.
 *
 * @internal
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { WorkflowEvent } from "@sessionflow/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
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
export const frame = (event: WorkflowEvent.WorkflowEvent): string =>
  `id: ${event.seq}\nevent: ${event._tag}\ndata: ${json(event)}\n\n`

/** @internal */
export const heartbeatFrame = ": keep-alive\n\n"

/** @internal */
export const isTerminal = (event: WorkflowEvent.WorkflowEvent): boolean =>
  event.path.length === 0 && (event._tag === "RunCompleted" || event._tag === "RunFailed" || event._tag === "RunCancelled")

/** @internal */
export interface StreamOptions {
  readonly timeout: Duration.Duration
  readonly heartbeat: Duration.Duration
  /** the session id the request named, for a terminal event before `RunStarted` (never in practice) */
  readonly sessionId: string | undefined
}

/**
 * The run's events, ending with exactly one terminal event whatever happens:
 * the run's own, or — when the run timed out and was interrupted — a
 * `RunCancelled` the server adds. A `RunFailed` is held back until the run's
 * error is known, so that an ownership error reads as a missing session.
 *
 * @internal
 */
export const runEvents = <E, R>(
  events: Stream.Stream<WorkflowEvent.WorkflowEvent, E, R>,
  options: StreamOptions
): Stream.Stream<WorkflowEvent.WorkflowEvent, never, R> =>
  Stream.suspend(() => {
    let last: WorkflowEvent.WorkflowEvent | undefined
    let failed: WorkflowEvent.RunFailed | undefined
    const timeoutMillis = Math.round(Duration.toMillis(options.timeout))
    const next = (tag: "RunFailed" | "RunCancelled", error?: string) =>
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
    return events.pipe(
      Stream.interruptWhen(Effect.zipRight(
        Effect.sleep(options.timeout),
        Effect.fail(
          new Api.RunTimeout({
            timeoutMillis,
            message: `The run took longer than ${timeoutMillis} ms: it was cancelled and committed nothing`
          })
        )
      )),
      Stream.tap((event) =>
        Effect.sync(() => {
          last = event
        })
      ),
      Stream.filter((event) => {
        if (event._tag === "RunFailed" && event.path.length === 0) {
          failed = event
          return false
        }
        return true
      }),
      Stream.catchAllCause((cause) => {
        // the stream itself was interrupted (the client went away): nobody to tell
        if (Cause.isInterruptedOnly(cause)) return Stream.failCause(cause as Cause.Cause<never>)
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure) && failure.value instanceof Api.RunTimeout) return Stream.fromEffect(next("RunCancelled"))
        // a defect: the run's own RunFailed (the message its record keeps), else a generic one
        const message = Option.match(failure, {
          onNone: () => failed?.error ?? "InternalError: Internal server error",
          onSome: (error) => publicRunMessage(error, failed?.error)
        })
        const last = failed === undefined
          ? next("RunFailed", message)
          : Effect.succeed<WorkflowEvent.WorkflowEvent>({ ...failed, error: message })
        return Stream.fromEffect(
          Option.isNone(failure)
            ? Effect.zipRight(Effect.logError("sessionflow server: a streamed run died", Cause.squash(cause)), last)
            : last
        )
      })
    )
  })

/**
 * The `text/event-stream` response of a run's events, with a comment every
 * `heartbeat` while the run is quiet.
 *
 * @internal
 */
export const response = <R>(
  events: Stream.Stream<WorkflowEvent.WorkflowEvent, never, R>,
  heartbeat: Duration.Duration
): Stream.Stream<Uint8Array, never, R> =>
  Stream.merge(
    Stream.map(events, frame),
    Stream.as(Stream.fromSchedule(Schedule.spaced(heartbeat)), heartbeatFrame),
    { haltStrategy: "left" }
  ).pipe(Stream.map((text) => encoder.encode(text)))

/** @internal */
export const eventStreamResponse = (body: Stream.Stream<Uint8Array>): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.stream(body, {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
  })
