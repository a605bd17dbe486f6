/**
 * The typed errors of sessionflow's engine and stores. Each carries the facts a
 * caller needs (which session, which step, which choice) and a readable
 * `message`.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { errorMessage } from "./internal/format.js"
import * as ids from "./internal/ids.js"

/**
 * @since 0.1.0
 * @category type ids
 */
export const TypeId: unique symbol = Symbol.for("@sessionflow/core/WorkflowError")

/**
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = typeof TypeId

/**
 * A session id that no store knows.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionNotFound extends Schema.TaggedError<SessionNotFound>("@sessionflow/core/SessionNotFound")(
  "SessionNotFound",
  { sessionId: Schema.String }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Session '${this.sessionId}' does not exist`
  }
}

/**
 * A session that belongs to another user (or to a user, when none was given).
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionOwnershipError
  extends Schema.TaggedError<SessionOwnershipError>("@sessionflow/core/SessionOwnershipError")(
    "SessionOwnershipError",
    { sessionId: Schema.String, userId: Schema.optional(Schema.String), ownerId: Schema.String }
  )
{
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return this.userId === undefined
      ? `Session '${this.sessionId}' belongs to user '${this.ownerId}'; no userId was given`
      : `Session '${this.sessionId}' belongs to user '${this.ownerId}', not to '${this.userId}'`
  }
}

/**
 * Another run (in this process or another one) committed to the session after
 * this run loaded it. Nothing of this run's state was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionConflict extends Schema.TaggedError<SessionConflict>("@sessionflow/core/SessionConflict")(
  "SessionConflict",
  { sessionId: Schema.String, expectedVersion: Schema.Number, actualVersion: Schema.Number }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Session '${this.sessionId}' was changed concurrently (expected version ` +
      `${this.expectedVersion}, found ${this.actualVersion}); nothing was written`
  }
}

/**
 * Session state that cannot be used: stored JSON that does not parse
 * (`corrupt`), or a state that does not fit the workflow's state Schema
 * (`schema`). Nothing is overwritten when this is raised.
 *
 * @since 0.1.0
 * @category errors
 */
export class StateDecodeError extends Schema.TaggedError<StateDecodeError>("@sessionflow/core/StateDecodeError")(
  "StateDecodeError",
  {
    sessionId: Schema.String,
    reason: Schema.Literal("corrupt", "schema"),
    description: Schema.String,
    cause: Schema.optional(Schema.Defect)
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return this.reason === "corrupt"
      ? `The stored state of session '${this.sessionId}' is corrupt: ${this.description}`
      : `The state of session '${this.sessionId}' does not fit the workflow's state schema: ${this.description}`
  }
}

/**
 * A persistence backend failed (I/O, SQL, serialisation).
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionStoreError extends Schema.TaggedError<SessionStoreError>("@sessionflow/core/SessionStoreError")(
  "SessionStoreError",
  {
    method: Schema.String,
    description: Schema.String,
    cause: Schema.optional(Schema.Defect)
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `SessionStore.${this.method}: ${this.description}`
  }
}

/**
 * A router selector chose a step name that no choice has (`unknown-name`), or
 * returned a step that is not one of the router's `choices`
 * (`outside-choices`).
 *
 * @since 0.1.0
 * @category errors
 */
export class RouterChoiceError extends Schema.TaggedError<RouterChoiceError>("@sessionflow/core/RouterChoiceError")(
  "RouterChoiceError",
  {
    router: Schema.String,
    choice: Schema.String,
    reason: Schema.Literal("unknown-name", "outside-choices"),
    choices: Schema.Array(Schema.String)
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    const known = this.choices.map((c) => `'${c}'`).join(", ")
    return this.reason === "unknown-name"
      ? `Router '${this.router}' selected unknown step name '${this.choice}' (choices: ${known})`
      : `Router '${this.router}' selected step '${this.choice}', which is not one of its choices (${known})`
  }
}

/**
 * A step failed with an untyped cause (a rejected promise, a thrown
 * exception) or returned an unsuccessful output while configured to fail.
 *
 * @since 0.1.0
 * @category errors
 */
export class StepError extends Schema.TaggedError<StepError>("@sessionflow/core/StepError")(
  "StepError",
  {
    step: Schema.String,
    description: Schema.String,
    cause: Schema.optional(Schema.Defect)
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Step '${this.step}' failed: ${this.description}`
  }
}

/**
 * The run input does not fit the workflow's `input` Schema. Nothing ran and
 * nothing was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class InputDecodeError extends Schema.TaggedError<InputDecodeError>("@sessionflow/core/InputDecodeError")(
  "InputDecodeError",
  {
    workflowName: Schema.String,
    description: Schema.String,
    cause: Schema.optional(Schema.Defect)
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `The input of workflow '${this.workflowName}' does not fit its input schema: ${this.description}`
  }
}

/**
 * A session function was called without a session id on a workflow that has
 * no `sessionId` of its own.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionIdRequired extends Schema.TaggedError<SessionIdRequired>("@sessionflow/core/SessionIdRequired")(
  "SessionIdRequired",
  { workflowName: Schema.String, method: Schema.String }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Workflow.${this.method}: no session id was given and workflow '${this.workflowName}' has no sessionId`
  }
}

/**
 * A loop with `onExhausted: "fail"` reached `maxIterations` before its end
 * condition held.
 *
 * @since 0.1.0
 * @category errors
 */
export class LoopExhausted extends Schema.TaggedError<LoopExhausted>("@sessionflow/core/LoopExhausted")(
  "LoopExhausted",
  { loop: Schema.String, maxIterations: Schema.Number }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Loop '${this.loop}' reached its maximum of ${this.maxIterations} iteration${
      this.maxIterations === 1 ? "" : "s"
    } before its end condition held`
  }
}

/**
 * A value a run stores holds something that would not read back the same from
 * the JSON it is stored as (a function, a `Date`, a `Map`, `NaN`, a bigint,
 * `undefined` in an array, a circular reference, nesting deeper than 1,000
 * levels). `what` says which value: the run's `input`, its `output` (the last
 * step's content), its untyped `state`; in a durable run its `journal` (the
 * step outputs and the content the next step receives, kept between steps and
 * across a pause), its `pause` (the question's payload and the asking code's
 * checkpoint), or the `answer` given to `Workflow.continue`. `path` says where
 * in it (`""` for the value itself). Nothing of the session was committed.
 * (A typed state goes through its Schema, which may encode such values, e.g.
 * `Schema.Date`; so does a `Step.pause` payload.)
 *
 * @since 0.1.0
 * @category errors
 */
export class NotSerializable extends Schema.TaggedError<NotSerializable>("@sessionflow/core/NotSerializable")(
  "NotSerializable",
  {
    sessionId: Schema.String,
    what: Schema.Literal("input", "output", "state", "journal", "pause", "answer"),
    path: Schema.String,
    description: Schema.String
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    const which = this.what === "output" ? "output" : this.what
    return `The run's ${which}${
      this.path === "" ? "" : ` at ${this.what}${this.path}`
    } is not JSON (${this.description}); nothing was written to session '${this.sessionId}'`
  }
}

/** Why an id cannot be stored as given (see `InvalidSessionId`, `InvalidRunId`). */
const IdProblem = Schema.Literal("empty", "too-long", "control-character", "malformed")

/**
 * A session id that no store may take as given, the same for every store:
 * empty, longer than 256 characters (`too-long`), with a control character
 * such as NUL or a newline (`control-character`), or not well-formed Unicode
 * (a lone surrogate, `malformed`), which a store would not give back
 * unchanged.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidSessionId extends Schema.TaggedError<InvalidSessionId>("@sessionflow/core/InvalidSessionId")(
  "InvalidSessionId",
  { sessionId: Schema.String, reason: IdProblem }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return ids.describe("session", this.sessionId, this.reason)
  }
}

/**
 * A run id that no store may take as given (the rules of session ids:
 * empty, longer than 256 characters, a control character, not well-formed
 * Unicode). Nothing was read or written.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidRunId extends Schema.TaggedError<InvalidRunId>("@sessionflow/core/InvalidRunId")(
  "InvalidRunId",
  { runId: Schema.String, reason: IdProblem }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return ids.describe("run", this.runId, this.reason)
  }
}

/**
 * The run with this id has ended: it failed (`error`), was cancelled or
 * abandoned, or (for a `continue`, `resume` or `cancel`) completed. A run
 * that ended never runs again under its id: nothing was started. (A
 * `Workflow.run` with the id of a completed run replays it instead.) Start
 * the work again under a new id if it is wanted. `error` is what its record
 * says (a failed run's error, an abandoned run's reason), when it says
 * anything.
 *
 * It is also what the caller of a run gets when the run is cancelled while
 * it runs (`Workflow.cancel`, here or in another process; status
 * `cancelled`): its steps were stopped and nothing of it was committed.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunEnded extends Schema.TaggedError<RunEnded>("@sessionflow/core/RunEnded")(
  "RunEnded",
  {
    runId: Schema.String,
    sessionId: Schema.String,
    status: Schema.Literal("completed", "error", "cancelled", "abandoned"),
    error: Schema.optional(Schema.String)
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    const ended = `Run '${this.runId}' of session '${this.sessionId}' has ` +
      `ended (${this.status}): it does not run again under its id`
    return this.error === undefined || this.error === this.status
      ? ended
      : `${ended}; its recorded error: ${this.error}`
  }
}

/**
 * `Workflow.prune` was asked nothing it can do: neither `olderThan` nor
 * `keepLast`, a `keepLast` that is not a whole number from 0, or an
 * `olderThan` that is not a finite duration. Nothing was removed.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidPruneOptions
  extends Schema.TaggedError<InvalidPruneOptions>("@sessionflow/core/InvalidPruneOptions")(
    "InvalidPruneOptions",
    { workflowName: Schema.String, description: Schema.String }
  )
{
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Workflow.prune of '${this.workflowName}': ${this.description}`
  }
}

/**
 * A recorded run replayed differently against the current workflow (see
 * `Replay.replay`): `at` is the first difference — a step that started,
 * completed or failed (`step`), a step's output or the run's content
 * (`output`), a condition's or router's choice (`decision`), the model calls
 * (`model`), how the run ended (`outcome`) or the state it committed
 * (`state`) — with what the recording holds (`expected`) and what the replay
 * did (`actual`).
 *
 * @since 0.1.0
 * @category errors
 */
export class ReplayMismatch extends Schema.TaggedError<ReplayMismatch>("@sessionflow/core/ReplayMismatch")(
  "ReplayMismatch",
  {
    runId: Schema.String,
    workflowName: Schema.String,
    kind: Schema.Literal("step", "output", "decision", "model", "outcome", "state"),
    /** where: a step path (`a/b`), `model call #n`, `run` or `state.a.b` */
    at: Schema.String,
    expected: Schema.String,
    actual: Schema.String
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Run '${this.runId}' of workflow '${this.workflowName}' replays differently ` +
      `(${this.kind}) at ${this.at}: recorded ${this.expected}, replayed ${this.actual}`
  }
}

/**
 * A run with this id is running elsewhere (another fiber or process holds its
 * lease). Nothing was started.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunInProgress extends Schema.TaggedError<RunInProgress>("@sessionflow/core/RunInProgress")(
  "RunInProgress",
  { runId: Schema.String, sessionId: Schema.String, owner: Schema.String, leaseExpiresAt: Schema.Number }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Run '${this.runId}' of session '${this.sessionId}' is running elsewhere (owner ${this.owner}, lease until ${
      new Date(this.leaseExpiresAt).toISOString()
    })`
  }
}

/**
 * A run this process was running was taken over by another process (its
 * lease had expired), or cancelled when it was not running its steps (as it
 * opened the session, or paused; a run cancelled while its steps run, or at
 * its commit, is `RunEnded`, cancelled): it commits nothing.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunLost extends Schema.TaggedError<RunLost>("@sessionflow/core/RunLost")(
  "RunLost",
  { runId: Schema.String, description: Schema.String }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Run '${this.runId}' is no longer ours: ${this.description}; nothing was committed`
  }
}

/**
 * An unfinished run was started by a workflow whose shape (its step tree:
 * names, kinds, nesting; and its `version`) differs from the workflow that
 * was asked to carry it on. Its journal says where it stands by step index,
 * which would mean something else under the changed steps, so it is not
 * carried on: it stays as it was (paused, or abandoned). `difference` names
 * the first step path that differs; `recorded` and `current` summarise both
 * shapes (version and fingerprint). A workflow that may carry on runs of an
 * older shape says so with `Workflow.make({ version, resumes })`.
 *
 * @since 0.1.0
 * @category errors
 */
export class WorkflowChanged extends Schema.TaggedError<WorkflowChanged>("@sessionflow/core/WorkflowChanged")(
  "WorkflowChanged",
  {
    runId: Schema.String,
    workflowName: Schema.String,
    recorded: Schema.String,
    current: Schema.String,
    difference: Schema.String
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Run '${this.runId}' was started by workflow '${this.workflowName}' ${this.recorded}, ` +
      `which is now ${this.current} (${this.difference}); it is left as it was. Declare the ` +
      `change compatible with Workflow.make({ version, resumes: [...] }) to carry it on`
  }
}

/**
 * No unfinished (running or paused) run has this id, or it belongs to
 * another workflow.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunNotFound extends Schema.TaggedError<RunNotFound>("@sessionflow/core/RunNotFound")(
  "RunNotFound",
  { runId: Schema.String, description: Schema.String }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Run '${this.runId}': ${this.description}`
  }
}

/**
 * A run paused to wait for a person: nothing of the session is committed yet.
 * `payload` is what the pausing step asks (its Schema's encoded form);
 * `Workflow.continue(wf, runId, response)` carries on, `Workflow.cancel` ends
 * it. Only workflows with a step that can pause have it in their error type.
 *
 * A run that sleeps durably (`Step.sleep`) or waits for a signal
 * (`Step.waitFor`) is suspended the same way: `kind` says which (`"sleep"`
 * until `wakeAt`, `"signal"` for the signal named `signal`; absent or
 * `"question"`: a person's answer), and `timeoutAt` when a question or a
 * wait times out. Such a run holds no fiber: `DurableRuns` (or
 * `Workflow.recover`) wakes it when its time comes, `Workflow.signal` gives
 * it its signal.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunPaused extends Schema.TaggedError<RunPaused>("@sessionflow/core/RunPaused")(
  "RunPaused",
  {
    runId: Schema.String,
    sessionId: Schema.String,
    /** the path of the step that paused */
    path: Schema.Array(Schema.String),
    /**
     * the pause: `Workflow.continue` names it (`{ pause: key }`) so that its
     * answer is taken by this pause only
     */
    key: Schema.String,
    payload: Schema.Unknown,
    /** absent: `"question"` */
    kind: Schema.optional(Schema.Literal("question", "sleep", "signal")),
    signal: Schema.optional(Schema.String),
    /** epoch milliseconds: the end of a sleep */
    wakeAt: Schema.optional(Schema.Number),
    /** epoch milliseconds: when the question or wait times out */
    timeoutAt: Schema.optional(Schema.Number)
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    const at = this.path.join(" > ")
    if (this.kind === "sleep") {
      return `Run '${this.runId}' sleeps at ${at} until ${
        new Date(this.wakeAt ?? 0).toISOString()
      } (DurableRuns wakes it)`
    }
    if (this.kind === "signal") {
      return `Run '${this.runId}' waits at ${at} for signal '${this.signal}' (Workflow.signal)`
    }
    return `Run '${this.runId}' paused at ${at}, waiting for a response (Workflow.continue)`
  }
}

/**
 * A signal sent to a run (`Workflow.signal`) that its workflow does not
 * take: no `Step.waitFor` of the workflow waits for a signal of that name, or
 * the value does not fit its Schema (`description` says why). Nothing was
 * stored: the run is as it was.
 *
 * @since 0.1.0
 * @category errors
 */
export class SignalDecodeError extends Schema.TaggedError<SignalDecodeError>("@sessionflow/core/SignalDecodeError")(
  "SignalDecodeError",
  { runId: Schema.String, signal: Schema.String, description: Schema.String, cause: Schema.optional(Schema.Defect) }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Signal '${this.signal}' for run '${this.runId}' was refused: ${this.description}`
  }
}

/**
 * A `continue` named a pause the run is no longer at (another answer was
 * taken first and the run went on, or it pauses on another question now).
 * Nothing was changed: the run still waits at `current` (undefined: it is
 * running, or not paused).
 *
 * @since 0.1.0
 * @category errors
 */
export class PauseMismatch extends Schema.TaggedError<PauseMismatch>("@sessionflow/core/PauseMismatch")(
  "PauseMismatch",
  { runId: Schema.String, expected: Schema.String, current: Schema.optional(Schema.String) }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Run '${this.runId}' is not waiting at pause '${this.expected}' ${
      this.current === undefined ? "(it is not paused)" : `(it waits at '${this.current}')`
    }: the answer was not taken`
  }
}

/**
 * A tracked run (with a `runId`, or `durability: "step"`) whose steps ended
 * but whose outcome could not be written (the store failed or timed out in
 * the final commit). The run is not lost and is not failed: it is still
 * unfinished in the store (or the commit did land), and `Workflow.recover`
 * completes it after its lease. Wait for `runId` (a run with the same id
 * replays the completed run) instead of starting the work again under a new
 * id.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunUnfinished extends Schema.TaggedError<RunUnfinished>("@sessionflow/core/RunUnfinished")(
  "RunUnfinished",
  { runId: Schema.String, sessionId: Schema.String, description: Schema.String }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Run '${this.runId}' of session '${this.sessionId}' is unfinished: ${this.description}; ` +
      "recovery completes it (wait for the run id, do not start it again under a new id)"
  }
}

/**
 * A session has a paused run: it takes no new run until that run is continued
 * or cancelled.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionPaused extends Schema.TaggedError<SessionPaused>("@sessionflow/core/SessionPaused")(
  "SessionPaused",
  { sessionId: Schema.String, runId: Schema.String }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Session '${this.sessionId}' has a paused run ('${this.runId}'): continue or cancel it first`
  }
}

/**
 * A run with `onBusy: "reject"` (the default) refused before any of its work:
 * another run of the session (`runId`) runs in another process under a live
 * lease (until `leaseExpiresAt`). Nothing was written. With `retryOnConflict`
 * the run waits and tries again, as after a conflict.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionBusy extends Schema.TaggedError<SessionBusy>("@sessionflow/core/SessionBusy")(
  "SessionBusy",
  { sessionId: Schema.String, runId: Schema.String, leaseExpiresAt: Schema.Number }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Session '${this.sessionId}' is busy: run '${this.runId}' runs on it elsewhere (lease until ${
      new Date(this.leaseExpiresAt).toISOString()
    }); nothing was written`
  }
}

/**
 * The response given to `Workflow.continue` does not fit the paused step's
 * response Schema. The run stays paused.
 *
 * @since 0.1.0
 * @category errors
 */
export class ResponseDecodeError
  extends Schema.TaggedError<ResponseDecodeError>("@sessionflow/core/ResponseDecodeError")(
    "ResponseDecodeError",
    { runId: Schema.String, description: Schema.String, cause: Schema.optional(Schema.Defect) }
  )
{
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `The response to run '${this.runId}' does not fit the paused step's response schema: ${this.description}`
  }
}

/**
 * A version of a session that the store does not have: never committed
 * (`missing`: above the session's version, or below 1), or no longer kept
 * (`not-kept`: older than the session's history keeps, see
 * `SessionStore.HistoryOptions`).
 *
 * @since 0.1.0
 * @category errors
 */
export class VersionNotFound extends Schema.TaggedError<VersionNotFound>("@sessionflow/core/VersionNotFound")(
  "VersionNotFound",
  {
    sessionId: Schema.String,
    version: Schema.Number,
    reason: Schema.Literal("missing", "not-kept"),
    latest: Schema.Number
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return this.reason === "missing"
      ? `Session '${this.sessionId}' has no version ${this.version} (its versions are 1 to ${this.latest})`
      : `Version ${this.version} of session '${this.sessionId}' is no longer kept (see the workflow's history option)`
  }
}

/**
 * A session id that is taken already, given for a new session (a fork's).
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionExists extends Schema.TaggedError<SessionExists>("@sessionflow/core/SessionExists")(
  "SessionExists",
  { sessionId: Schema.String }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Session '${this.sessionId}' exists already`
  }
}

/**
 * The run could not be handed to where it executes, or its outcome could not
 * be brought back: with a cluster placement, the cluster refused or lost the
 * message (`reason: "delivery"`), or the run failed with an error of a step
 * that has no Schema to carry it between processes (`reason: "remote"`; the
 * error's tag and message are in `description`). Nothing of a run that
 * failed to be delivered was committed; a `"remote"` failure was recorded
 * like any failed run.
 *
 * @since 0.1.0
 * @category errors
 */
export class PlacementError extends Schema.TaggedError<PlacementError>("@sessionflow/core/PlacementError")(
  "PlacementError",
  {
    reason: Schema.Literal("delivery", "remote"),
    workflowName: Schema.String,
    sessionId: Schema.String,
    description: Schema.String
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return this.reason === "delivery"
      ? `A run of workflow '${this.workflowName}' on session ` +
        `'${this.sessionId}' could not be delivered: ${this.description}`
      : `A run of workflow '${this.workflowName}' on session ` +
        `'${this.sessionId}' failed where it ran: ${this.description}`
  }
}

/**
 * A schedule given to `Schedules.layer` that cannot run: its cron expression
 * does not parse (or its time zone is unknown), its name is not a valid id,
 * or two schedules of one workflow share a name.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidSchedule extends Schema.TaggedError<InvalidSchedule>("@sessionflow/core/InvalidSchedule")(
  "InvalidSchedule",
  {
    workflowName: Schema.String,
    name: Schema.String,
    description: Schema.String
  }
) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Schedule '${this.name}' of workflow '${this.workflowName}': ${this.description}`
  }
}

/**
 * Every error of this module.
 *
 * @since 0.1.0
 * @category errors
 */
export type WorkflowError =
  | SessionNotFound
  | SessionOwnershipError
  | SessionConflict
  | StateDecodeError
  | SessionStoreError
  | RouterChoiceError
  | StepError
  | InputDecodeError
  | SessionIdRequired
  | LoopExhausted
  | NotSerializable
  | InvalidSessionId
  | RunInProgress
  | RunLost
  | RunNotFound
  | RunPaused
  | SessionPaused
  | ResponseDecodeError
  | WorkflowChanged
  | PauseMismatch
  | RunUnfinished
  | InvalidRunId
  | RunEnded
  | ReplayMismatch
  | InvalidPruneOptions
  | VersionNotFound
  | SessionExists
  | PlacementError
  | SignalDecodeError
  | InvalidSchedule
  | SessionBusy

/**
 * Errors a run of any workflow can fail with, whatever its steps are.
 *
 * @since 0.1.0
 * @category errors
 */
export type RunError =
  | SessionOwnershipError
  | SessionConflict
  | StateDecodeError
  | SessionStoreError
  | InputDecodeError
  | NotSerializable
  | InvalidSessionId
  | SessionPaused
  | SessionBusy
  | RunInProgress
  | RunLost
  | WorkflowChanged
  | RunNotFound
  | RunUnfinished
  | InvalidRunId
  | RunEnded
  | PlacementError

/**
 * @since 0.1.0
 * @category schemas
 */
export const WorkflowError: Schema.Union<[
  typeof SessionNotFound,
  typeof SessionOwnershipError,
  typeof SessionConflict,
  typeof StateDecodeError,
  typeof SessionStoreError,
  typeof RouterChoiceError,
  typeof StepError,
  typeof InputDecodeError,
  typeof SessionIdRequired,
  typeof LoopExhausted,
  typeof NotSerializable,
  typeof InvalidSessionId,
  typeof RunInProgress,
  typeof RunLost,
  typeof RunNotFound,
  typeof RunPaused,
  typeof SessionPaused,
  typeof ResponseDecodeError,
  typeof WorkflowChanged,
  typeof PauseMismatch,
  typeof RunUnfinished,
  typeof InvalidRunId,
  typeof RunEnded,
  typeof ReplayMismatch,
  typeof InvalidPruneOptions,
  typeof VersionNotFound,
  typeof SessionExists,
  typeof PlacementError,
  typeof SignalDecodeError,
  typeof InvalidSchedule,
  typeof SessionBusy
]> = Schema.Union(
  SessionNotFound,
  SessionOwnershipError,
  SessionConflict,
  StateDecodeError,
  SessionStoreError,
  RouterChoiceError,
  StepError,
  InputDecodeError,
  SessionIdRequired,
  LoopExhausted,
  NotSerializable,
  InvalidSessionId,
  RunInProgress,
  RunLost,
  RunNotFound,
  RunPaused,
  SessionPaused,
  ResponseDecodeError,
  WorkflowChanged,
  PauseMismatch,
  RunUnfinished,
  InvalidRunId,
  RunEnded,
  ReplayMismatch,
  InvalidPruneOptions,
  VersionNotFound,
  SessionExists,
  PlacementError,
  SignalDecodeError,
  InvalidSchedule,
  SessionBusy
)

/**
 * @since 0.1.0
 * @category refinements
 */
export const isWorkflowError = (u: unknown): u is WorkflowError => Predicate.hasProperty(u, TypeId)

/**
 * A readable message for anything a run can fail with: the error's tag and
 * its own `message` (`Boom: …`), where that message is the field dump of an
 * error without a message of its own (`@effect/ai`'s `MalformedOutput` and
 * `MalformedInput`) `module.method: description` instead. Run records and the
 * `RunFailed` / `StepFailed` events carry the same text.
 *
 * @since 0.1.0
 * @category formatting
 */
export const format: (error: unknown) => string = errorMessage
