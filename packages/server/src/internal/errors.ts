/**
 * From the engine's typed errors to the API's: which status code each gets,
 * and messages that never carry a stack trace or another user's id.
 *
 * @internal
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { WorkflowError } from "@sessionflow/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Api from "../WorkflowApi.js"

/** @internal */
export const sessionNotFound = (sessionId: string): Api.NotFound =>
  new Api.NotFound({ what: "session", id: sessionId, message: `Session '${sessionId}' does not exist` })

/** @internal */
export const workflowNotFound = (name: string): Api.NotFound =>
  new Api.NotFound({ what: "workflow", id: name, message: `Workflow '${name}' is not served here` })

/** @internal */
export const runNotFound = (runId: string, message = `Run '${runId}' does not exist`): Api.NotFound =>
  new Api.NotFound({ what: "run", id: runId, message })

/** The errors every endpoint may answer with. @internal */
export type CommonError = Api.BadRequest | Api.NotFound | Api.Conflict | Api.InternalError

const isApiError = (u: unknown): u is CommonError | Api.RunFailed | Api.RunTimeout =>
  u instanceof Api.BadRequest || u instanceof Api.NotFound || u instanceof Api.Conflict ||
  u instanceof Api.InternalError || u instanceof Api.RunFailed || u instanceof Api.RunTimeout

/**
 * The API error of an engine error that is not a step's own, if it is one.
 * (`RunPaused` is not an error to the API: the handlers answer it with 202.)
 * `carriedState`: the request gave a state, so a state that does not fit the
 * workflow's Schema is the caller's (400) rather than the store's (500).
 *
 * @internal
 */
const fromWorkflowError = (error: unknown, carriedState: boolean): CommonError | undefined => {
  if (isApiError(error)) return error instanceof Api.RunFailed || error instanceof Api.RunTimeout ? undefined : error
  if (!WorkflowError.isWorkflowError(error)) return undefined
  switch (error._tag) {
    case "SessionNotFound":
    case "SessionOwnershipError":
      // another user's session is indistinguishable from a missing one
      return sessionNotFound(error.sessionId)
    case "SessionConflict":
      return new Api.Conflict({ reason: "session-changed", sessionId: error.sessionId, message: error.message })
    case "SessionPaused":
      return new Api.Conflict({
        reason: "session-paused",
        sessionId: error.sessionId,
        runId: error.runId,
        message: error.message
      })
    case "SessionBusy":
      return new Api.Conflict({
        reason: "session-busy",
        sessionId: error.sessionId,
        runId: error.runId,
        message: `Session '${error.sessionId}' is busy: another run runs on it (lease until ${
          new Date(error.leaseExpiresAt).toISOString()
        }); nothing was written`
      })
    case "RunInProgress":
      // not `error.message`: the owner id names the host and process that run it
      return new Api.Conflict({
        reason: "run-in-progress",
        sessionId: error.sessionId,
        runId: error.runId,
        message: `Run '${error.runId}' of session '${error.sessionId}' is running elsewhere (lease until ${
          new Date(error.leaseExpiresAt).toISOString()
        })`
      })
    case "RunLost":
      return new Api.Conflict({ reason: "run-lost", runId: error.runId, message: error.message })
    case "RunNotFound":
      return runNotFound(error.runId, error.message)
    case "RunEnded":
      return new Api.Conflict({
        reason: "run-ended",
        runId: error.runId,
        sessionId: error.sessionId,
        message: error.message
      })
    case "InvalidRunId":
      return new Api.BadRequest({ reason: "run-id", message: error.message })
    case "PauseMismatch":
      return new Api.Conflict({
        reason: "pause-mismatch",
        runId: error.runId,
        expected: error.expected,
        ...(error.current === undefined ? {} : { current: error.current }),
        message: error.message
      })
    case "RunUnfinished":
      return new Api.Conflict({
        reason: "run-unfinished",
        runId: error.runId,
        sessionId: error.sessionId,
        message: error.message
      })
    case "WorkflowChanged":
      return new Api.Conflict({ reason: "workflow-changed", runId: error.runId, message: error.message })
    case "ResponseDecodeError":
      return new Api.BadRequest({ reason: "response", message: error.message })
    case "SignalDecodeError":
      return new Api.BadRequest({ reason: "signal", message: error.message })
    case "InputDecodeError":
      return new Api.BadRequest({ reason: "input", message: error.message })
    case "InvalidSessionId":
    case "SessionIdRequired":
      return new Api.BadRequest({ reason: "session-id", message: error.message })
    case "StateDecodeError":
      return carriedState && error.reason === "schema"
        ? new Api.BadRequest({ reason: "state", message: error.message })
        : new Api.InternalError({ message: error.message })
    case "VersionNotFound":
      return new Api.NotFound({ what: "version", id: `${error.sessionId}@${error.version}`, message: error.message })
    case "SessionExists":
      return new Api.Conflict({ reason: "session-exists", sessionId: error.sessionId, message: error.message })
    case "InvalidSchedule":
    case "SessionStoreError":
      return new Api.InternalError({ message: error.message })
    case "PlacementError":
      // "remote": a step's own error, brought back from the runner that ran it
      return error.reason === "delivery" ? new Api.InternalError({ message: error.message }) : undefined
    case "NotSerializable":
      return error.what === "input"
        ? new Api.BadRequest({ reason: "input", message: error.message })
        : error.what === "answer"
        ? new Api.BadRequest({ reason: "response", message: error.message })
        : undefined
    default:
      return undefined
  }
}

/**
 * `self`, whose `RunInProgress` (a run with the id holds its lease) answers
 * with a `Retry-After` header: the seconds until the lease expires (at least
 * 1), after which a run with the id carries the run on if its process died.
 *
 * @internal
 */
export const withRetryAfter = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.tapError(
    self,
    (error) =>
      WorkflowError.isWorkflowError(error) && (error._tag === "RunInProgress" || error._tag === "SessionBusy")
        ? Effect.flatMap(Clock.currentTimeMillis, (now) =>
          HttpApp.appendPreResponseHandler((_, response) =>
            Effect.succeed(
              HttpServerResponse.setHeader(
                response,
                "retry-after",
                String(retryAfterSeconds(error.leaseExpiresAt, now))
              )
            )
          ))
        : Effect.void
  )

/** Whole seconds from `now` until `leaseExpiresAt` is past, at least 1. @internal */
const retryAfterSeconds = (leaseExpiresAt: number, now: number): number =>
  Math.max(1, Math.ceil((leaseExpiresAt + 1 - now) / 1000))

/**
 * The API error of a session operation's failure.
 *
 * @internal
 */
export const sessionError = (carriedState: boolean) => (error: unknown): CommonError =>
  fromWorkflowError(error, carriedState) ?? new Api.InternalError({ message: WorkflowError.format(error) })

/**
 * The API error of a run's failure: the engine's own errors as above, a
 * step's error as `RunFailed`.
 *
 * @internal
 */
export const runError = (carriedState: boolean) => (error: unknown): CommonError | Api.RunFailed | Api.RunTimeout =>
  error instanceof Api.RunTimeout || error instanceof Api.RunFailed
    ? error
    : fromWorkflowError(error, carriedState) ?? new Api.RunFailed({ message: stepErrorMessage(error) })

/**
 * A step's own error as one process formats it; one brought back from a
 * cluster runner (`PlacementError`, `"remote"`) was formatted there already.
 */
const stepErrorMessage = (error: unknown): string =>
  WorkflowError.isWorkflowError(error) && error._tag === "PlacementError"
    ? error.description
    : WorkflowError.format(error)

/**
 * The message a client may see for a run's failure: ownership errors read as
 * a missing session (they would name the owner).
 *
 * @internal
 */
export const publicRunMessage = (error: unknown, recorded: string | undefined): string =>
  WorkflowError.isWorkflowError(error) && error._tag === "SessionOwnershipError"
    ? `SessionNotFound: ${sessionNotFound(error.sessionId).message}`
    : recorded ?? WorkflowError.format(error)

/**
 * A defect becomes a 500 without details; the cause is logged on the server.
 *
 * @internal
 */
export const catchDefects = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | Api.InternalError, R> =>
  Effect.catchAllDefect(effect, (defect) =>
    Effect.zipRight(
      // (the cause, not the defect itself: an Error logs as its message and stack, not as `{}`)
      Effect.logError("sessionflow server: internal error", Cause.die(defect)),
      Effect.fail(new Api.InternalError({ message: "Internal server error" }))
    ))

/** A Schema's message for bad input. @internal */
export const parseMessage = (error: ParseResult.ParseError): string => ParseResult.TreeFormatter.formatErrorSync(error)
