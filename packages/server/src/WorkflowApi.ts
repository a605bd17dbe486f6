/**
 * The HTTP API of a sessionflow server, as an `@effect/platform` `HttpApi`:
 * its endpoints, request and response Schemas, errors (each with its status
 * code) and middlewares. `WorkflowServer.layer` implements it; a client can
 * be derived from it with `HttpApiClient.make(WorkflowApi)`.
 *
 * | endpoint | what |
 * |---|---|
 * | `GET /workflows` | the served workflows |
 * | `GET /workflows/:name` | one workflow |
 * | `GET /workflows/:name/graph` | its step tree |
 * | `GET /workflows/:name/schedules` | its schedules, with their next tick |
 * | `POST /workflows/:name/runs` | run it (what it answers: below the table) |
 * | `GET /runs/:runId` | a run of the caller's: status, result or error, question |
 * | `GET /workflows/:name/runs/:runId` | the same, for a run of this workflow (a background run's `Location`) |
 * | `GET /workflows/:name/runs` | the caller's runs, a page at a time |
 * | `GET /workflows/:name/runs/paused` | the caller's paused runs, with their questions |
 * | `POST /workflows/:name/runs/:runId/continue` | answer a paused run's question, carry it on (JSON or events) |
 * | `POST /workflows/:name/runs/:runId/signals/:signal` | send a run a signal (`Step.waitFor`), kept or taken now |
 * | `GET /workflows/:name/runs/:runId/events` | a run's events after `Last-Event-ID`, then new ones until it ends |
 * | `POST /workflows/:name/runs/:runId/cancel` | end a paused (or running) run: its `cancelled` record |
 * | `GET /workflows/:name/sessions` | the caller's sessions, a page at a time |
 * | `GET /workflows/:name/sessions/:sessionId` | a session with its state |
 * | `GET`, `PUT /workflows/:name/sessions/:sessionId/state` | a session's state; replace it |
 * | `PUT /workflows/:name/sessions/:sessionId/name` | rename (or `{ autogenerate: true }`) |
 * | `DELETE /workflows/:name/sessions/:sessionId` | delete it with its history |
 * | `GET /workflows/:name/sessions/:sessionId/runs` | its run history |
 * | `GET /workflows/:name/sessions/:sessionId/chat` | its chat history |
 * | `GET /workflows/:name/sessions/:sessionId/versions` | its kept versions: run, time, the keys each changed |
 * | `GET /workflows/:name/sessions/:sessionId/versions/:version` | the state as committed at a kept version |
 * | `POST /workflows/:name/sessions/:sessionId/fork` | a new session from a kept version (or a paused run's point) |
 *
 * `POST /workflows/:name/runs` answers with the run's JSON `RunOutput` (202
 * `PausedRunOutput` when it pauses); with `Accept: text/event-stream`, with
 * its events as server-sent events (as `continue` and `events` do); with
 * `Prefer: respond-async`, at once, the run going on in the background (202
 * `StartedRun`, its `Location` the run's status). A signal is kept for the
 * run's wait, or given to it now and the run carried on.
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { SessionStore, StepOutput, Workflow } from "@sessionflow/core"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"

// -----------------------------------------------------------------------------
// errors
// -----------------------------------------------------------------------------

/**
 * Bad input: a body that is not JSON, a run input that does not fit the
 * workflow's input Schema, a state that does not fit its state Schema, a
 * malformed session id (`session-id`) or run id (`run-id`), a response to a paused run that does not fit the
 * pausing step's response Schema (the run stays paused). (Requests that do not fit the endpoint's own Schemas
 * are `HttpApiDecodeError`s, also 400.)
 *
 * @since 0.1.0
 * @category errors
 */
export class BadRequest extends Schema.TaggedError<BadRequest>("@sessionflow/server/BadRequest")(
  "BadRequest",
  {
    reason: Schema.Literal(
      "body",
      "input",
      "state",
      "session-id",
      "run-id",
      "response",
      "signal",
      "cursor",
      "last-event-id"
    ),
    message: Schema.String
  },
  HttpApiSchema.annotations({ status: 400 })
) {}

/**
 * A request whose credentials the server does not accept.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>("@sessionflow/server/Unauthorized")(
  "Unauthorized",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

/**
 * An unknown workflow; a session that does not exist, belongs to another
 * workflow or belongs to another user; a version of a session it does not
 * keep (`version`, its id `<sessionId>@<version>`); or a run id that names no unfinished
 * run of this workflow that the caller may see (never told apart, so a
 * session or run of another user stays invisible).
 *
 * @since 0.1.0
 * @category errors
 */
export class NotFound extends Schema.TaggedError<NotFound>("@sessionflow/server/NotFound")(
  "NotFound",
  { what: Schema.Literal("workflow", "session", "run", "version"), id: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

/**
 * Why a request conflicts with what the store holds (see {@link Conflict}).
 *
 * @since 0.1.0
 * @category models
 */
export const ConflictReason = Schema.Literal(
  "session-changed",
  "session-paused",
  "session-busy",
  "run-in-progress",
  "run-paused",
  "run-lost",
  "other-workflow",
  "workflow-changed",
  "pause-mismatch",
  "run-unfinished",
  "run-ended",
  "session-exists"
)

/**
 * The request conflicts with the session or run as stored; nothing of it was
 * written. `reason`: another run committed to the session first
 * (`session-changed`); the session has a paused run, `runId` (`session-paused`:
 * continue or cancel it first); another run of the session runs elsewhere
 * (`session-busy`: the run was refused before any of its work); a run with this id runs elsewhere
 * (`run-in-progress`) or waits for a response (`run-paused`, when streamed);
 * the run was taken over or cancelled meanwhile (`run-lost`); the session
 * belongs to another workflow (`other-workflow`); the run was started by a
 * workflow of another shape (`workflow-changed`: it is left as it was); the
 * continue named a pause the run no longer waits at (`pause-mismatch`:
 * `expected` the named one, `current` where it waits now, if it is paused);
 * the run's final write failed and recovery will complete it
 * (`run-unfinished`: wait for it by its `runId`, do not start it again);
 * the run with this id has ended — failed, cancelled or abandoned — and never
 * runs again under its id (`run-ended`: start the work under a new id; a
 * continue or cancel of a run that ended, completed too, is the same); a
 * fork named a new session id that is taken (`session-exists`). A
 * `run-in-progress` answer carries a `Retry-After` header: the seconds until
 * the run's lease expires (after which the same request carries on the run
 * if its process died).
 *
 * @since 0.1.0
 * @category errors
 */
export class Conflict extends Schema.TaggedError<Conflict>("@sessionflow/server/Conflict")(
  "Conflict",
  {
    reason: ConflictReason,
    sessionId: Schema.optional(Schema.String),
    runId: Schema.optional(Schema.String),
    expected: Schema.optional(Schema.String),
    current: Schema.optional(Schema.String),
    message: Schema.String
  },
  HttpApiSchema.annotations({ status: 409 })
) {}

/**
 * A request body over the server's `maxBodySize`.
 *
 * @since 0.1.0
 * @category errors
 */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>("@sessionflow/server/PayloadTooLarge")(
  "PayloadTooLarge",
  { limit: Schema.Number, message: Schema.String },
  HttpApiSchema.annotations({ status: 413 })
) {}

/**
 * A state-changing request (`POST`, `PUT`, `DELETE`) sent by a page of
 * another site: its `Sec-Fetch-Site` is not `same-origin`, or its `Origin` is
 * not the server's own (nor one of the server's `allowedOrigins`). Answered at
 * the edge, before the request is read.
 *
 * @since 0.1.0
 * @category errors
 */
export class Forbidden extends Schema.TaggedError<Forbidden>("@sessionflow/server/Forbidden")(
  "Forbidden",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 403 })
) {}

/**
 * A request body that is not `application/json` (a form, `multipart/form-data`,
 * `text/plain`, or a body without a Content-Type). Answered at the edge,
 * before the body is read.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>(
  "@sessionflow/server/UnsupportedMediaType"
)(
  "UnsupportedMediaType",
  { contentType: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 415 })
) {}

/**
 * The run failed: one of its steps failed (a model error, a tool, a router
 * choice, …). The run is recorded with status `error`; no state change was
 * committed.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunFailed extends Schema.TaggedError<RunFailed>("@sessionflow/server/RunFailed")(
  "RunFailed",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 500 })
) {}

/**
 * The run took longer than the server's `runTimeout`: it was interrupted,
 * recorded as `cancelled`, and committed nothing.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunTimeout extends Schema.TaggedError<RunTimeout>("@sessionflow/server/RunTimeout")(
  "RunTimeout",
  { timeoutMillis: Schema.Number, message: Schema.String },
  HttpApiSchema.annotations({ status: 504 })
) {}

/**
 * The server failed (a store error, a stored state that cannot be read, a
 * defect). The message says what, without a stack trace.
 *
 * @since 0.1.0
 * @category errors
 */
export class InternalError extends Schema.TaggedError<InternalError>("@sessionflow/server/InternalError")(
  "InternalError",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 500 })
) {}

// -----------------------------------------------------------------------------
// models
// -----------------------------------------------------------------------------

/**
 * A JSON object (a session state, in its encoded form).
 *
 * @since 0.1.0
 * @category models
 */
export const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  identifier: "JsonObject"
})

/**
 * A served workflow.
 *
 * @since 0.1.0
 * @category models
 */
export const WorkflowInfo = Schema.Struct({
  /** URL-safe (lower-case letters, digits, `-`): `/workflows/:id/…` (the name works there too) */
  id: Schema.String,
  /** its display name */
  name: Schema.String,
  description: Schema.optional(Schema.String),
  /** the names of its top-level steps */
  steps: Schema.Array(Schema.String),
  /** the JSON Schema of its run input, when it declares an input Schema */
  input: Schema.optional(Schema.Unknown),
  /** the JSON Schema of its state, when it has a typed state */
  state: Schema.optional(Schema.Unknown)
}).annotations({ identifier: "WorkflowInfo" })

/**
 * @since 0.1.0
 * @category models
 */
export type WorkflowInfo = typeof WorkflowInfo.Type

/**
 * The body of `POST /workflows/:name/runs`.
 *
 * @since 0.1.0
 * @category models
 */
export const RunRequest = Schema.Struct({
  /** the run input, in the workflow input Schema's encoded form */
  input: Schema.Unknown,
  /** else the workflow's, else a new one (returned); 1 to 256 characters, no control characters */
  sessionId: Schema.optional(SessionStore.Id),
  /** deep-merged over the stored state (or the seed); encoded form */
  sessionState: Schema.optional(JsonObject),
  /** replace the stored state with `sessionState` (else the seed) instead */
  overwriteDbSessionState: Schema.optional(Schema.Boolean),
  /**
   * the run's id (default: a new one), to retry safely: an id whose run
   * completed returns its recorded output (no `stepOutputs`) without running
   * again; one whose run failed, was cancelled or abandoned is a 409
   * `run-ended` (with the recorded error), and nothing runs; one that runs
   * elsewhere is a 409; one that waits for a response is a 202 (409 when
   * streamed)
   */
  runId: Schema.optional(SessionStore.Id),
  /**
   * what the run does when its session is busy (a run in progress, or one
   * paused for a person): `reject` (default: a 409, as without it),
   * `enqueue` (it waits its turn in the session's queue, from whichever
   * server, in arrival order), `interrupt` (the session's run is cancelled,
   * nothing of it committed, its paused run's question withdrawn; then this
   * run runs). See `Workflow.RunOptions.onBusy`.
   */
  onBusy: Schema.optional(Workflow.OnBusy)
}).annotations({ identifier: "RunRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export type RunRequest = typeof RunRequest.Type

/**
 * A completed run.
 *
 * @since 0.1.0
 * @category models
 */
export const RunOutput = Schema.Struct({
  runId: Schema.String,
  sessionId: Schema.String,
  userId: Schema.optional(Schema.String),
  workflowName: Schema.String,
  status: Schema.Literal("completed"),
  /** the last step's content */
  content: Schema.Unknown,
  stepOutputs: Schema.Array(StepOutput.StepOutputSchema),
  /** the committed state, encoded */
  state: JsonObject,
  /** the tokens the run's model calls used (absent when it called no model) */
  usage: Schema.optional(SessionStore.RunUsage)
}).annotations({ identifier: "RunOutput" })

/**
 * @since 0.1.0
 * @category models
 */
export type RunOutput = typeof RunOutput.Type

/**
 * A run started in the background (the 202 answer of `POST
 * /workflows/:name/runs` with `Prefer: respond-async`): it is registered and
 * goes on in the server; the answer's `Location` header is its status, `GET
 * /workflows/:name/runs/:runId`, and its events are at `…/runs/:runId/events`.
 *
 * @since 0.1.0
 * @category models
 */
export const StartedRun = Schema.Struct({
  status: Schema.Literal("started"),
  runId: Schema.String,
  sessionId: Schema.String
}).annotations({ identifier: "StartedRun" })

/**
 * @since 0.1.0
 * @category models
 */
export type StartedRun = typeof StartedRun.Type

/**
 * A run that paused to ask a person (the 202 answer of a run or a
 * continuation): `payload` is the question (the pausing step's payload
 * Schema, encoded), `path` the step that asked. `POST
 * …/runs/:runId/continue` answers it; nothing of the session is committed
 * until the run completes.
 *
 * @since 0.1.0
 * @category models
 */
export const PausedRunOutput = Schema.Struct({
  status: Schema.Literal("paused"),
  runId: Schema.String,
  sessionId: Schema.String,
  /** the pause's key: a continuation names it (`ContinueRequest.pause`) */
  pause: Schema.String,
  path: Schema.Array(Schema.String),
  payload: Schema.Unknown
}).annotations({ identifier: "PausedRunOutput" })

/**
 * @since 0.1.0
 * @category models
 */
export type PausedRunOutput = typeof PausedRunOutput.Type

/**
 * Where an unfinished run is, as the run lifecycle names it
 * (`SessionStore.RunState`): `running` (a process runs it, in the background
 * or for a client), `paused` (waiting for a person's answer), `sleeping`
 * (until its `wakeAt`) or `waiting` (for its `signal`, until its `timeoutAt`
 * if it has one). A paused, sleeping or waiting run has `status: "paused"`.
 *
 * @since 0.1.0
 * @category models
 */
export const UnfinishedState = Schema.Literal("running", "paused", "sleeping", "waiting")

/**
 * @since 0.1.0
 * @category models
 */
export type UnfinishedState = typeof UnfinishedState.Type

/** What an unfinished run waits for: its state, and, when it has them, its wake time, signal and timeout. */
const unfinishedFields = {
  /** where the run is, while unfinished */
  state: Schema.optional(UnfinishedState),
  /** epoch milliseconds: when a sleeping (or timing-out) run is due to wake */
  wakeAt: Schema.optional(Schema.Number),
  /** the signal a waiting run waits for */
  signal: Schema.optional(Schema.String),
  /** epoch milliseconds: when a wait for a signal, or a question, times out */
  timeoutAt: Schema.optional(Schema.Number)
}

/**
 * A paused run, as listed: its question and when it asked; its `state`
 * (`paused`: a question, `sleeping`, `waiting` for a signal) and, when it has
 * them, `wakeAt`, `signal` and `timeoutAt`.
 *
 * @since 0.1.0
 * @category models
 */
export const PausedRun = Schema.Struct({
  runId: Schema.String,
  sessionId: Schema.String,
  workflowName: Schema.String,
  userId: Schema.optional(Schema.String),
  /** the run's input */
  input: Schema.Unknown,
  /** the pause's key: a continuation names it (`ContinueRequest.pause`) */
  pause: Schema.String,
  /** the path of the step that asked */
  path: Schema.Array(Schema.String),
  /** what it asked */
  payload: Schema.Unknown,
  /** epoch milliseconds */
  startedAt: Schema.Number,
  /** epoch milliseconds */
  pausedAt: Schema.Number,
  ...unfinishedFields
}).annotations({ identifier: "PausedRun" })

/**
 * @since 0.1.0
 * @category models
 */
export type PausedRun = typeof PausedRun.Type

/**
 * A run in its session's queue (`onBusy: "enqueue"`), as listed: `running`
 * the one whose turn it is, `waiting` the others, in arrival order (by
 * `ticket`); `SessionStore.QueuedRun` without its caller's lease.
 *
 * @since 0.1.0
 * @category models
 */
export const QueuedRun = SessionStore.QueuedRun.omit("owner", "leaseExpiresAt").annotations({ identifier: "QueuedRun" })

/**
 * @since 0.1.0
 * @category models
 */
export type QueuedRun = typeof QueuedRun.Type

/**
 * The body of `POST …/runs/:runId/continue`: the answer to the paused run's
 * question, in the encoded form of the pausing step's response Schema (for an
 * agent's tool approval: `{ approved: boolean, reason?: string }`), and the
 * key of the pause it answers (`pause`, as the 202 answer, the paused-run
 * listing and the `RunPaused` event give it): an answer to a pause the run no
 * longer waits at is a 409 `pause-mismatch` that changes nothing. Without
 * `pause` the answer goes to whatever pause the run waits at when it is
 * claimed, which another client may have answered and moved on from.
 *
 * @since 0.1.0
 * @category models
 */
export const ContinueRequest = Schema.Struct({
  response: Schema.Unknown,
  pause: Schema.optional(Schema.String)
}).annotations({ identifier: "ContinueRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export type ContinueRequest = typeof ContinueRequest.Type

/**
 * The body of `POST …/runs/:runId/signals/:signal`: the signal's value, in
 * the encoded form of the Schema of the workflow's `Step.waitFor` for that
 * signal (a value that does not fit is a 400 `signal` that stores nothing).
 *
 * @since 0.1.0
 * @category models
 */
export const SignalRequest = Schema.Struct({
  value: Schema.Unknown
}).annotations({ identifier: "SignalRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export type SignalRequest = typeof SignalRequest.Type

/**
 * A signal the run does not wait for now (the 202 answer of `POST
 * …/signals/:signal`): it is kept with the run, and the run's next wait for
 * it takes it, in whichever process runs it; `seq` is its number among the
 * run's signals.
 *
 * @since 0.1.0
 * @category models
 */
export const SignalKept = Schema.Struct({
  status: Schema.Literal("kept"),
  runId: Schema.String,
  signal: Schema.String,
  seq: Schema.Number
}).annotations({ identifier: "SignalKept" })

/**
 * @since 0.1.0
 * @category models
 */
export type SignalKept = typeof SignalKept.Type

/**
 * What the store knows of a session, without its state.
 *
 * @since 0.1.0
 * @category models
 */
export const SessionInfo = Schema.Struct({
  sessionId: Schema.String,
  workflowName: Schema.String,
  userId: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  version: Schema.Number,
  /** epoch milliseconds */
  createdAt: Schema.Number,
  /** epoch milliseconds */
  updatedAt: Schema.Number
}).annotations({ identifier: "SessionInfo" })

/**
 * @since 0.1.0
 * @category models
 */
export type SessionInfo = typeof SessionInfo.Type

/**
 * A workflow's sessions, most recently updated first, and the rows the store
 * cannot read.
 *
 * @since 0.1.0
 * @category models
 */
export const SessionListing = Schema.Struct({
  sessions: Schema.Array(SessionInfo),
  broken: Schema.Array(Schema.Struct({ sessionId: Schema.String, error: Schema.String }))
}).annotations({ identifier: "SessionListing" })

/**
 * @since 0.1.0
 * @category models
 */
export type SessionListing = typeof SessionListing.Type

/**
 * A page of a workflow's sessions (`GET /workflows/:name/sessions`), most
 * recently updated first; `next`, when there are more, is the `cursor` of the
 * next page.
 *
 * @since 0.1.0
 * @category models
 */
export const SessionPage = Schema.Struct({
  ...SessionListing.fields,
  next: Schema.optional(Schema.String)
}).annotations({ identifier: "SessionPage" })

/**
 * @since 0.1.0
 * @category models
 */
export type SessionPage = typeof SessionPage.Type

/**
 * The statuses a run listing filters by: unfinished (`running`, `paused`) or
 * ended (the statuses of a run record).
 *
 * @since 0.1.0
 * @category models
 */
export const ListedRunState = Schema.Literal("running", "paused", "completed", "error", "cancelled", "abandoned")

/**
 * @since 0.1.0
 * @category models
 */
export type ListedRunState = typeof ListedRunState.Type

/**
 * Where a run is: `queued` (waiting in its session's queue, not started:
 * `onBusy: "enqueue"`), unfinished (`running`, `paused`) or ended (the
 * statuses of a run record).
 *
 * @since 0.1.0
 * @category models
 */
export const RunState = Schema.Literal("queued", ...ListedRunState.literals)

/**
 * A run as a resource (`GET /runs/:runId`): its status, its result (`content`)
 * or error, and, while it is paused, its question; while it is unfinished,
 * its `state` and, when it has them, when it wakes (`wakeAt`), the signal it
 * waits for (`signal`) and when its wait times out (`timeoutAt`); while it is
 * queued, when it was queued (`queuedAt`) and its `position` in its session's
 * queue (how many runs are ahead of it), and no `startedAt`.
 *
 * @since 0.1.0
 * @category models
 */
export const RunInfo = Schema.Struct({
  runId: Schema.String,
  sessionId: Schema.String,
  workflowName: Schema.String,
  userId: Schema.optional(Schema.String),
  status: RunState,
  input: Schema.Unknown,
  /** the last step's content, once completed */
  content: Schema.optional(Schema.Unknown),
  /** the error's message, once failed */
  error: Schema.optional(Schema.String),
  /** the question, while paused */
  pause: Schema.optional(
    Schema.Struct({ path: Schema.Array(Schema.String), payload: Schema.Unknown, pausedAt: Schema.Number })
  ),
  ...unfinishedFields,
  /** epoch milliseconds: when it was queued, while queued */
  queuedAt: Schema.optional(Schema.Number),
  /** how many runs of its session's queue are ahead of it, while queued */
  position: Schema.optional(Schema.Number),
  /** epoch milliseconds: when it started (absent while queued) */
  startedAt: Schema.optional(Schema.Number),
  /** epoch milliseconds, once ended */
  completedAt: Schema.optional(Schema.Number),
  /** the tokens its model calls used so far (absent when it called no model) */
  usage: Schema.optional(SessionStore.RunUsage)
}).annotations({ identifier: "RunInfo" })

/**
 * @since 0.1.0
 * @category models
 */
export type RunInfo = typeof RunInfo.Type

/**
 * A page of a workflow's runs, most recently started first; `next` is the
 * `cursor` of the next page.
 *
 * @since 0.1.0
 * @category models
 */
export const RunPage = Schema.Struct({
  runs: Schema.Array(RunInfo),
  next: Schema.optional(Schema.String)
}).annotations({ identifier: "RunPage" })

/**
 * @since 0.1.0
 * @category models
 */
export type RunPage = typeof RunPage.Type

/**
 * A session with its state (encoded).
 *
 * @since 0.1.0
 * @category models
 */
export const Session = Schema.Struct({ ...SessionInfo.fields, state: JsonObject }).annotations({
  identifier: "Session"
})

/**
 * @since 0.1.0
 * @category models
 */
export type Session = typeof Session.Type

/**
 * A session's state, encoded.
 *
 * @since 0.1.0
 * @category models
 */
export const StateBody = Schema.Struct({ state: JsonObject }).annotations({ identifier: "StateBody" })

/**
 * The state of a session as committed at a version.
 *
 * @since 0.1.0
 * @category models
 */
export const VersionState = Schema.Struct({ version: Schema.Number, state: JsonObject }).annotations({
  identifier: "VersionState"
})

/**
 * @since 0.1.0
 * @category models
 */
export type VersionState = typeof VersionState.Type

/**
 * The body of `POST …/fork`: the version to fork from (default: the
 * current one) or a paused run to fork at (`atRun`), and the new session's
 * id (default: a new UUID).
 *
 * @since 0.1.0
 * @category models
 */
export const ForkRequest = Schema.Struct({
  atVersion: Schema.optional(Schema.Int.pipe(Schema.positive())),
  newSessionId: Schema.optional(SessionStore.Id),
  atRun: Schema.optional(SessionStore.Id)
}).annotations({ identifier: "ForkRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export type ForkRequest = typeof ForkRequest.Type

/**
 * The new session of a fork: its id, its version (the one it was forked
 * from) and, forked at a paused run, the id of its copy of that run.
 *
 * @since 0.1.0
 * @category models
 */
export const ForkResult = Schema.Struct({
  sessionId: Schema.String,
  version: Schema.Number,
  runId: Schema.optional(Schema.String)
}).annotations({ identifier: "ForkResult" })

/**
 * @since 0.1.0
 * @category models
 */
export type ForkResult = typeof ForkResult.Type

/**
 * The body of `PUT …/name`: a name, or `{ autogenerate: true }`.
 *
 * @since 0.1.0
 * @category models
 */
export const RenameRequest = Schema.Union(
  Schema.Struct({ name: Schema.NonEmptyTrimmedString }),
  Schema.Struct({ autogenerate: Schema.Literal(true) })
).annotations({ identifier: "RenameRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const NameBody = Schema.Struct({ name: Schema.String }).annotations({ identifier: "NameBody" })

/**
 * One exchange of a session's conversation.
 *
 * @since 0.1.0
 * @category models
 */
export const ChatTurn = Schema.Struct({
  runId: Schema.String,
  input: Schema.Unknown,
  output: Schema.Unknown,
  completedAt: Schema.Number
}).annotations({ identifier: "ChatTurn" })

// -----------------------------------------------------------------------------
// middlewares
// -----------------------------------------------------------------------------

/**
 * Who is calling: the user id the authentication turned the request into
 * (`undefined` for an anonymous caller).
 *
 * @since 0.1.0
 * @category middlewares
 */
export class CurrentUser extends Context.Tag("@sessionflow/server/CurrentUser")<
  CurrentUser,
  { readonly userId: string | undefined }
>() {}

/**
 * Turns every request into a {@link CurrentUser} (documented in the OpenAPI
 * spec as bearer authentication), or refuses it with {@link Unauthorized}.
 *
 * @since 0.1.0
 * @category middlewares
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("@sessionflow/server/Authentication", {
  provides: CurrentUser,
  failure: Unauthorized,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/**
 * Reads a request's body within the size limit (413 above it) and checks
 * that it is JSON nested at most 64 levels deep without a `"__proto__"` key
 * (400 otherwise), before the endpoint decodes it. (Bodies that are not
 * `application/json` never get here: the server's edge answers them 415.)
 *
 * @since 0.1.0
 * @category middlewares
 */
export class RequestLimits extends HttpApiMiddleware.Tag<RequestLimits>()("@sessionflow/server/RequestLimits", {
  failure: Schema.Union(PayloadTooLarge, BadRequest)
}) {}

// -----------------------------------------------------------------------------
// endpoints
// -----------------------------------------------------------------------------

const workflowPath = Schema.Struct({ name: Schema.String })
const sessionPath = Schema.Struct({ name: Schema.String, sessionId: SessionStore.Id })
const runPath = Schema.Struct({ name: Schema.String, runId: SessionStore.Id })
const versionPath = Schema.Struct({
  name: Schema.String,
  sessionId: SessionStore.Id,
  version: Schema.NumberFromString.pipe(Schema.int(), Schema.positive())
})
const positiveInt = Schema.NumberFromString.pipe(Schema.int(), Schema.positive())
/** a page's size: 1 to 1,000 (default 100) */
const pageLimit = Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000))
const acceptHeader = Schema.Struct({ accept: Schema.optional(Schema.String) })
const startHeaders = Schema.Struct({
  accept: Schema.optional(Schema.String),
  /** `respond-async`: run in the background (202 `StartedRun` with a `Location`) */
  prefer: Schema.optional(Schema.String)
})

/**
 * The event stream of a run, as documented in the OpenAPI spec.
 */
/** Documents a 200 answered as server-sent events (beside JSON, or instead of it). */
const eventStreamDoc = (description: string, only = false) => (operation: Record<string, any>): Record<string, any> => {
  const responses = (operation["responses"] ?? {}) as Record<string, { content?: Record<string, unknown> }>
  const ok = responses["200"]
  if (ok !== undefined) {
    ok.content = {
      ...(only ? {} : ok.content),
      "text/event-stream": { schema: { type: "string", description } }
    }
  }
  return operation
}

const runEventsDoc = eventStreamDoc(
  "With `Accept: text/event-stream`: one server-sent event per WorkflowEvent " +
    "(`id:` its seq, `event:` its _tag, `data:` its JSON), ending with RunCompleted, RunFailed, " +
    "RunCancelled or RunPaused (the run waits for a response: continue it)"
)

const watchDoc = eventStreamDoc(
  "Server-sent events: one `SessionUpdate` event per committed version (`id:` the version, `data:` a " +
    "SessionUpdate as JSON), first the current one; comments as heartbeats; a `WatchFailed` event (`data:` " +
    "`{ error }`) ends the stream when the session can no longer be read. It never ends otherwise.",
  true
)

/**
 * @since 0.1.0
 * @category groups
 */
export class WorkflowsGroup extends HttpApiGroup.make("workflows")
  .middleware(RequestLimits)
  .middleware(Authentication)
  .add(
    HttpApiEndpoint.get("list", "/workflows")
      .addSuccess(Schema.Array(WorkflowInfo))
      .annotate(OpenApi.Summary, "The served workflows")
  )
  .add(
    HttpApiEndpoint.get("get", "/workflows/:name")
      .setPath(workflowPath)
      .addSuccess(WorkflowInfo)
      .annotate(OpenApi.Summary, "One workflow")
  )
  .add(
    HttpApiEndpoint.get("graph", "/workflows/:name/graph")
      .setPath(workflowPath)
      .addSuccess(Schema.Array(Workflow.StepNode))
      .annotate(OpenApi.Summary, "The workflow's step tree")
      .annotate(
        OpenApi.Description,
        "One StepNode per top-level step, containers with their children (a sequence's steps, a condition's " +
          "`steps` and `else` branches, a router's choices, a loop's body, a parallel's branches, a nested " +
          "workflow's steps); each node's `path` is the `path` of its events."
      )
  )
  .add(
    HttpApiEndpoint.get("schedules", "/workflows/:name/schedules")
      .setPath(workflowPath)
      .addSuccess(Schema.Array(SessionStore.StoredSchedule))
      .annotate(OpenApi.Summary, "The workflow's schedules")
      .annotate(
        OpenApi.Description,
        "The schedules the store keeps for the workflow (see `Schedules.layer`), by name: each one's cron " +
          "expression (UTC), its next tick and when a tick last fired (epoch milliseconds)."
      )
  )
{}

/**
 * Runs of a workflow: start one (or start it in the background); read one;
 * list, continue and cancel them.
 *
 * @since 0.1.0
 * @category groups
 */
export class RunsGroup extends HttpApiGroup.make("runs")
  .middleware(RequestLimits)
  .middleware(Authentication)
  .add(
    HttpApiEndpoint.post("start", "/workflows/:name/runs")
      .setPath(workflowPath)
      .setPayload(RunRequest)
      .setHeaders(startHeaders)
      .addSuccess(RunOutput)
      .addSuccess(PausedRunOutput, { status: 202 })
      .addSuccess(StartedRun, { status: 202 })
      .addError(RunFailed)
      .addError(RunTimeout)
      .annotate(OpenApi.Summary, "Run the workflow on a session")
      .annotate(
        OpenApi.Description,
        "Returns the RunOutput as JSON (202 with the question when the run pauses for a person), or, with " +
          "`Accept: text/event-stream`, streams the run's events as they happen. With `Prefer: respond-async` " +
          "the run goes on in the background: 202 with a StartedRun (`status: \"started\"`, its `runId` and " +
          "`sessionId`) as soon as the run is registered, a `Location` header pointing at its status " +
          "(`GET /workflows/:name/runs/:runId`) and `Preference-Applied: respond-async`; its events are stored " +
          "(unless the server stores none) for `GET …/runs/:runId/events`. A background run is not bound by the " +
          "server's run timeout; `POST …/runs/:runId/cancel` stops it. A client that disconnects " +
          "from the stream does not stop the run: it goes on, and its events can be read again from " +
          "`GET …/runs/:runId/events` (with `Last-Event-ID`); with `?cancelOnDisconnect=true` a client that " +
          "disconnects interrupts the run instead (recorded as cancelled, nothing committed). A session with a " +
          "paused run takes no new run (409) until that run is continued or cancelled, unless `onBusy` says " +
          "otherwise: `enqueue` waits for the session's run (and the runs queued before) to end, `interrupt` " +
          "cancels it first."
      )
      .annotate(OpenApi.Transform, runEventsDoc)
  )
  .add(
    HttpApiEndpoint.get("get", "/runs/:runId")
      .setPath(Schema.Struct({ runId: SessionStore.Id }))
      .addSuccess(RunInfo)
      .annotate(
        OpenApi.Summary,
        "A run: its status, its result or error, its question while paused (the caller's only)"
      )
  )
  .add(
    HttpApiEndpoint.get("status", "/workflows/:name/runs/:runId")
      .setPath(runPath)
      .addSuccess(RunInfo)
      .annotate(
        OpenApi.Summary,
        "A run of this workflow: its status, its result or error, its question while paused (the caller's only)"
      )
      .annotate(
        OpenApi.Description,
        "Where a run stands — `queued` (waiting in its session's queue, with `queuedAt` and its `position`: how many " +
          "runs are ahead of it), `running`, `paused` (with its question), `completed` (with its `content`), `error` " +
          "(failed, with its `error`), `cancelled` or `abandoned` " +
          "— from any server over the same store. An unfinished " +
          "run also has its `state` (`running`, `paused`, `sleeping` or `waiting`; a sleeping or waiting run has " +
          "`status: \"paused\"`) and, when it has them, `wakeAt`, `signal` and `timeoutAt`. A run of " +
          "another user, or of another workflow, is a 404. (A run whose id is `paused` or `queued` is read at " +
          "`GET /runs/:runId`.)"
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/workflows/:name/runs")
      .setPath(workflowPath)
      .setUrlParams(Schema.Struct({
        status: Schema.optional(ListedRunState),
        sessionId: Schema.optional(SessionStore.Id),
        limit: Schema.optional(pageLimit),
        cursor: Schema.optional(Schema.String)
      }))
      .addSuccess(RunPage)
      .annotate(OpenApi.Summary, "The caller's runs of the workflow, most recently started first, a page at a time")
  )
  .add(
    HttpApiEndpoint.get("paused", "/workflows/:name/runs/paused")
      .setPath(workflowPath)
      .setUrlParams(Schema.Struct({ sessionId: Schema.optional(SessionStore.Id) }))
      .addSuccess(Schema.Array(PausedRun))
      .annotate(OpenApi.Summary, "The caller's paused runs, oldest first, with their questions")
  )
  .add(
    HttpApiEndpoint.get("queued", "/workflows/:name/runs/queued")
      .setPath(workflowPath)
      .setUrlParams(Schema.Struct({ sessionId: Schema.optional(SessionStore.Id) }))
      .addSuccess(Schema.Array(QueuedRun))
      .annotate(OpenApi.Summary, "The caller's runs waiting in (or holding) their session's queue, in arrival order")
  )
  .add(
    HttpApiEndpoint.post("continue", "/workflows/:name/runs/:runId/continue")
      .setPath(runPath)
      .setPayload(ContinueRequest)
      .setHeaders(acceptHeader)
      .addSuccess(RunOutput)
      .addSuccess(PausedRunOutput, { status: 202 })
      .addError(RunFailed)
      .addError(RunTimeout)
      .annotate(OpenApi.Summary, "Answer a paused run's question and carry the run on")
      .annotate(
        OpenApi.Description,
        "The response is decoded with the pausing step's response Schema (400 when it does not fit; the run stays " +
          "paused). Returns the RunOutput as JSON (202 when the run pauses again), or, with " +
          "`Accept: text/event-stream`, the carried-on run's events, starting with RunResumed."
      )
      .annotate(OpenApi.Transform, runEventsDoc)
  )
  .add(
    HttpApiEndpoint.post("signal", "/workflows/:name/runs/:runId/signals/:signal")
      .setPath(Schema.Struct({ name: Schema.String, runId: SessionStore.Id, signal: Schema.String }))
      .setPayload(SignalRequest)
      .addSuccess(RunOutput)
      .addSuccess(PausedRunOutput, { status: 202 })
      .addSuccess(SignalKept, { status: 202 })
      .addError(RunFailed)
      .addError(RunTimeout)
      .annotate(OpenApi.Summary, "Send a signal to a run (Step.waitFor): kept for its wait, or given to it now")
      .annotate(
        OpenApi.Description,
        "The value is decoded with the Schema of the workflow's Step.waitFor for this signal (400 `signal` when it " +
          "does not fit, or when no step waits for such a signal: nothing is stored). When the run waits for this " +
          "signal now, it is given the signal and carried on: the RunOutput as JSON (202 PausedRunOutput when it " +
          "pauses, sleeps or waits again). Otherwise the signal is kept with the run (202 SignalKept) and its next " +
          "wait for it takes it. A run that ended takes no signal (409 `run-ended`)."
      )
  )
  .add(
    HttpApiEndpoint.get("events", "/workflows/:name/runs/:runId/events")
      .setPath(runPath)
      .setHeaders(Schema.Struct({ "last-event-id": Schema.optional(Schema.String) }))
      .setUrlParams(Schema.Struct({
        after: Schema.optional(
          Schema.String.pipe(
            Schema.pattern(/^(-1|[0-9]{1,16})$/),
            Schema.compose(Schema.NumberFromString),
            Schema.int()
          )
        )
      }))
      .addSuccess(Schema.String)
      .annotate(
        OpenApi.Summary,
        "A run's stored events, then its new ones until it ends, as server-sent events, from every server"
      )
      .annotate(
        OpenApi.Description,
        "Replays the events of a run (stored by the server that runs it) after the client's last one — " +
          "`Last-Event-ID`, else `?after=` (a seq), else from the first — then follows the new ones until the run " +
          "ends or pauses, whichever server runs it over the same store (PostgreSQL: as they are stored; SQLite: " +
          "polled). No event is sent twice or skipped. A client cut off (a dropped connection, a slow reader past " +
          "the stream buffer) reconnects with the last id it saw."
      )
      .annotate(
        OpenApi.Transform,
        eventStreamDoc(
          "Server-sent events: one per WorkflowEvent (`id:` its seq, `event:` its _tag, `data:` its JSON), ending " +
            "with RunCompleted, RunFailed, RunCancelled or RunPaused; comments as heartbeats; an `EventsFailed` " +
            "event (`data:` `{ error }`) ends the stream when the events asked for are no longer kept.",
          true
        )
      )
  )
  .add(
    HttpApiEndpoint.post("cancel", "/workflows/:name/runs/:runId/cancel")
      .setPath(runPath)
      .addSuccess(SessionStore.RunRecord)
      .annotate(OpenApi.Summary, "End a paused or running run without committing anything: its cancelled record")
      .annotate(
        OpenApi.Description,
        "The run is recorded as cancelled at once, so nothing of it can be committed. A running run's steps are " +
          "interrupted: at once on the server that runs it, else at that server's next lease renewal (a third of the " +
          "lease). Its caller (a JSON or streamed run) gets a 409 `run-ended`, its event stream ends with RunCancelled."
      )
  )
{}

/**
 * One committed version of a watched session (the `data` of a `SessionUpdate`
 * server-sent event): its state encoded with the workflow's state Schema, and
 * the run that committed it (none for a state set outside a run).
 *
 * @since 0.1.0
 * @category models
 */
export const SessionUpdate = Schema.Struct({
  sessionId: Schema.String,
  version: Schema.Number,
  state: JsonObject,
  runId: Schema.optional(Schema.String),
  updatedAt: Schema.Number
}).annotations({ identifier: "SessionUpdate" })

/**
 * @since 0.1.0
 * @category models
 */
export type SessionUpdate = typeof SessionUpdate.Type

/**
 * Sessions of a workflow.
 *
 * @since 0.1.0
 * @category groups
 */
export class SessionsGroup extends HttpApiGroup.make("sessions")
  .middleware(RequestLimits)
  .middleware(Authentication)
  .add(
    HttpApiEndpoint.get("list", "/workflows/:name/sessions")
      .setPath(workflowPath)
      .setUrlParams(Schema.Struct({
        limit: Schema.optional(pageLimit),
        cursor: Schema.optional(Schema.String),
        /** only sessions updated at or after (epoch milliseconds) */
        updatedSince: Schema.optional(Schema.NumberFromString),
        /** only sessions whose id or name contains this (A to Z in either case; searched by the store) */
        q: Schema.optional(Schema.String)
      }))
      .addSuccess(SessionPage)
      .annotate(OpenApi.Summary, "The caller's sessions of the workflow, most recently updated first, a page at a time")
  )
  .add(
    HttpApiEndpoint.get("get", "/workflows/:name/sessions/:sessionId")
      .setPath(sessionPath)
      .addSuccess(Session)
      .annotate(OpenApi.Summary, "A session with its state")
  )
  .add(
    HttpApiEndpoint.get("getState", "/workflows/:name/sessions/:sessionId/state")
      .setPath(sessionPath)
      .addSuccess(StateBody)
      .annotate(OpenApi.Summary, "A session's state")
  )
  .add(
    HttpApiEndpoint.put("setState", "/workflows/:name/sessions/:sessionId/state")
      .setPath(sessionPath)
      .setPayload(StateBody)
      .addSuccess(StateBody)
      .annotate(OpenApi.Summary, "Replace a session's state (decoded with the workflow's state Schema)")
  )
  .add(
    HttpApiEndpoint.put("rename", "/workflows/:name/sessions/:sessionId/name")
      .setPath(sessionPath)
      .setPayload(RenameRequest)
      .addSuccess(NameBody)
      .annotate(OpenApi.Summary, "Name a session, or { autogenerate: true }")
  )
  .add(
    HttpApiEndpoint.del("delete", "/workflows/:name/sessions/:sessionId")
      .setPath(sessionPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Summary, "Delete a session with its history")
  )
  .add(
    HttpApiEndpoint.get("runs", "/workflows/:name/sessions/:sessionId/runs")
      .setPath(sessionPath)
      .setUrlParams(Schema.Struct({
        limit: Schema.optional(positiveInt),
        status: Schema.optional(SessionStore.RunStatus)
      }))
      .addSuccess(Schema.Array(SessionStore.RunRecord))
      .annotate(OpenApi.Summary, "A session's run history, oldest first")
  )
  .add(
    HttpApiEndpoint.get("watch", "/workflows/:name/sessions/:sessionId/watch")
      .setPath(sessionPath)
      .addSuccess(SessionUpdate)
      .annotate(OpenApi.Summary, "Watch a session: its committed changes as server-sent events, from every server")
      .annotate(
        OpenApi.Description,
        "Streams the session's current version, then every version committed later by any server over the same " +
          "store (PostgreSQL: as the commits land; SQLite: polled). A store that polls may skip versions committed " +
          "within one interval, never the latest."
      )
      .annotate(OpenApi.Transform, watchDoc)
  )
  .add(
    HttpApiEndpoint.get("chat", "/workflows/:name/sessions/:sessionId/chat")
      .setPath(sessionPath)
      .setUrlParams(Schema.Struct({ lastRuns: Schema.optional(positiveInt) }))
      .addSuccess(Schema.Array(ChatTurn))
      .annotate(OpenApi.Summary, "A session's conversation: the input and output of its completed runs")
  )
  .add(
    HttpApiEndpoint.get("versions", "/workflows/:name/sessions/:sessionId/versions")
      .setPath(sessionPath)
      .addSuccess(Schema.Array(SessionStore.VersionInfo))
      .annotate(
        OpenApi.Summary,
        "A session's kept versions, oldest first: the run that made each, when, and the keys it changed"
      )
  )
  .add(
    HttpApiEndpoint.get("version", "/workflows/:name/sessions/:sessionId/versions/:version")
      .setPath(versionPath)
      .addSuccess(VersionState)
      .annotate(OpenApi.Summary, "A session's state as committed at a kept version (404 for a version not kept)")
  )
  .add(
    HttpApiEndpoint.post("fork", "/workflows/:name/sessions/:sessionId/fork")
      .setPath(sessionPath)
      .setPayload(ForkRequest)
      .addSuccess(ForkResult, { status: 201 })
      .annotate(
        OpenApi.Summary,
        "Fork a session: a new session of the caller's from a kept version, or from a paused run's point"
      )
      .annotate(
        OpenApi.Description,
        "The new session's state is the state at `atVersion` (default: the current version), its kept versions the " +
          "original's up to it. With `atRun` (a paused run of the " +
          "session) it starts where that run started, with a copy " +
          "of the run paused at the same question (`runId` in the answer): continue it to take another path. Runs on " +
          "the fork never change the original."
      )
  )
{}

/**
 * The whole API.
 *
 * @since 0.1.0
 * @category api
 */
export class WorkflowApi extends HttpApi.make("sessionflow")
  .add(WorkflowsGroup)
  .add(RunsGroup)
  .add(SessionsGroup)
  .addError(BadRequest)
  .addError(Forbidden)
  .addError(UnsupportedMediaType)
  .addError(NotFound)
  .addError(Conflict)
  .addError(InternalError)
  .annotate(OpenApi.Title, "sessionflow")
  .annotate(
    OpenApi.Description,
    "Stateful, multi-step AI workflows: run them, stream their events, and look into their sessions."
  )
{}
