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
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
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
export interface StreamOptions {
  readonly timeout: Duration.Duration
  readonly heartbeat: Duration.Duration
  /** the session id the request named, for a terminal event before `RunStarted` (never in practice) */
  readonly sessionId: string | undefined
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
    const send = (text: string) => mailbox.offer(encoder.encode(text))
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
    yield* Effect.forkScoped(run)
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(options.heartbeat), send(heartbeatFrame))))
    return Mailbox.toStream(mailbox)
  }))

/** @internal */
export const eventStreamResponse = (body: Stream.Stream<Uint8Array>): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.stream(body, {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
  })
