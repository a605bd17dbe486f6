/**
 * The session entity's protocol: one message per run operation, and the
 * forms runs' options and outputs take between processes.
 *
 * @internal
 */
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import { SessionStore, StepOutput, type Workflow, WorkflowError, WorkflowEvent } from "@sessionflow/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"

/** @internal */
const EventRetention = Schema.Struct({
  maxEvents: Schema.optional(Schema.Number),
  keepForMillis: Schema.optional(Schema.Number)
})

/** What `Workflow.RunOptions` carries across (durations in milliseconds). @internal */
const RunOptions = Schema.Struct({
  userId: Schema.optional(Schema.String),
  sessionState: Schema.optional(Schema.Unknown),
  overwriteDbSessionState: Schema.optional(Schema.Boolean),
  additionalData: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  retryOnConflict: Schema.optional(Schema.Union(Schema.Boolean, Schema.Number)),
  durability: Schema.optional(Schema.Literal("run", "step")),
  leaseMillis: Schema.optional(Schema.Number),
  events: Schema.optional(Schema.Literal("stored", "none")),
  eventRetention: Schema.optional(EventRetention)
})

/** What `Workflow.ContinueOptions` carries across. @internal */
const ContinueOptions = Schema.Struct({
  userId: Schema.optional(Schema.String),
  retryOnConflict: Schema.optional(Schema.Union(Schema.Boolean, Schema.Number)),
  leaseMillis: Schema.optional(Schema.Number),
  events: Schema.optional(Schema.Literal("stored", "none")),
  eventRetention: Schema.optional(EventRetention),
  pause: Schema.optional(Schema.String)
})

/** A run: its workflow, its session, its id (always set, so that a redelivered run is the same run). @internal */
const RunPayload = {
  workflow: Schema.String,
  sessionId: Schema.String,
  runId: Schema.String,
  input: Schema.Unknown,
  options: RunOptions
}

/** @internal */
const ContinuePayload = {
  workflow: Schema.String,
  runId: Schema.String,
  response: Schema.Unknown,
  options: ContinueOptions
}

/** A completed run's output; its `state` in the workflow's encoded form. @internal */
export const RunOutput = Schema.Struct({
  runId: Schema.String,
  sessionId: Schema.String,
  userId: Schema.optional(Schema.String),
  workflowName: Schema.String,
  content: Schema.Unknown,
  stepOutputs: Schema.Array(StepOutput.StepOutputSchema),
  state: Schema.Unknown,
  usage: Schema.optional(SessionStore.RunUsage)
})

// `Run`, `Continue` and `Cancel` are persisted: stored before they are
// delivered, delivered again to the session's next owner when its runner dies
// before replying. They have no primary key: a run sent again with the same id
// is a message of its own, answered by the engine's own idempotency (after the
// first, in the session's mailbox) as in one process, rather than with the
// first message's stored reply (which may be stale: a `RunPaused` since continued).

/** A persisted operation answered with a run's output. */
const answered = <const Tag extends string, Payload extends Schema.Struct.Fields>(tag: Tag, payload: Payload) =>
  Rpc.make(tag, { payload, success: RunOutput, error: WorkflowError.WorkflowError }).annotate(
    ClusterSchema.Persisted,
    true
  )

/** An operation answered with the run's events as they happen (not persisted). */
const streamed = <const Tag extends string, Payload extends Schema.Struct.Fields>(tag: Tag, payload: Payload) =>
  Rpc.make(tag, { payload, success: WorkflowEvent.WorkflowEvent, error: WorkflowError.WorkflowError, stream: true })

/** @internal */
export const Run = answered("Run", RunPayload)

/** @internal */
export const StreamRun = streamed("StreamRun", RunPayload)

/** @internal */
export const Continue = answered("Continue", ContinuePayload)

/** @internal */
export const StreamContinue = streamed("StreamContinue", ContinuePayload)

/** @internal */
export const Cancel = Rpc.make("Cancel", {
  payload: { workflow: Schema.String, runId: Schema.String, userId: Schema.optional(Schema.String) },
  error: WorkflowError.WorkflowError
}).annotate(ClusterSchema.Persisted, true)

/**
 * Carries on an unfinished run whose owner stopped (its lease expired): sent
 * by the runner holding the session's shard (its recovery loop) to the
 * session's entity, so that the run goes on in the session's mailbox, after
 * the operations before it. Not persisted: if it is lost, the run's lease is
 * still expired at the next look of whichever runner holds the shard then.
 *
 * @internal
 */
export const Resume = Rpc.make("Resume", {
  payload: { workflow: Schema.String, runId: Schema.String, userId: Schema.optional(Schema.String) },
  error: WorkflowError.WorkflowError
})

/** @internal */
export const SessionEntity = Entity.make("sessionflow/Session", [
  Run,
  StreamRun,
  Continue,
  StreamContinue,
  Cancel,
  Resume
])

/** `@effect/cluster`'s `SqlMessageStorage` keeps entity ids in a `VARCHAR(255)` column. */
const maxEntityId = 255

/**
 * The entity of a session: `workflowName/sessionId`, or, when that is longer
 * than the message storage keeps, the workflow name's first characters and a
 * SHA-256 of both. Two sessions sharing an entity (a `/` in a workflow name
 * can make two pairs read the same) only share its mailbox: each message
 * names its workflow and session.
 *
 * @internal
 */
export const entityId = (workflowName: string, sessionId: string): string => {
  const plain = `${workflowName}/${sessionId}`
  if (plain.length <= maxEntityId) return plain
  const digest = createHash("sha256").update(workflowName).update("\u0000").update(sessionId).digest("hex")
  return `${workflowName.slice(0, maxEntityId - digest.length - 1)}#${digest}`
}

const millis = (duration: Duration.DurationInput | undefined): number | undefined =>
  duration === undefined ? undefined : Duration.toMillis(Duration.decode(duration))

/** Drops the keys whose value is undefined (the wire has no undefined). */
const defined = <A extends object>(value: A): A =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as A

const retentionToWire = (retention: Workflow.EventRetentionOptions | undefined) =>
  retention === undefined ? undefined : defined({
    maxEvents: retention.maxEvents,
    keepForMillis: millis(retention.keepFor)
  })

const retentionFromWire = (
  retention: typeof EventRetention.Type | undefined
): Workflow.EventRetentionOptions | undefined =>
  retention === undefined ? undefined : {
    maxEvents: retention.maxEvents,
    keepFor: retention.keepForMillis === undefined ? undefined : Duration.millis(retention.keepForMillis)
  }

/** What runs and continues share: their owner, their retries, their lease and their event log. */
const sharedToWire = (options: Workflow.ContinueOptions) => ({
  userId: options.userId,
  retryOnConflict: options.retryOnConflict,
  leaseMillis: millis(options.leaseDuration),
  events: options.events,
  eventRetention: retentionToWire(options.eventRetention)
})

const sharedFromWire = (options: typeof ContinueOptions.Type): Workflow.ContinueOptions => ({
  userId: options.userId,
  retryOnConflict: options.retryOnConflict,
  leaseDuration: options.leaseMillis === undefined ? undefined : Duration.millis(options.leaseMillis),
  events: options.events,
  eventRetention: retentionFromWire(options.eventRetention)
})

/** @internal */
export const runOptionsToWire = (options: Workflow.RunOptions<unknown> | undefined): typeof RunOptions.Type =>
  options === undefined ? {} : defined({
    ...sharedToWire(options),
    sessionState: options.sessionState,
    overwriteDbSessionState: options.overwriteDbSessionState,
    additionalData: options.additionalData,
    durability: options.durability
  })

/** @internal */
export const runOptionsFromWire = (
  options: typeof RunOptions.Type,
  sessionId: string,
  runId: string
): Workflow.RunOptions<unknown> => ({
  ...sharedFromWire(options),
  sessionId,
  runId,
  sessionState: options.sessionState,
  overwriteDbSessionState: options.overwriteDbSessionState,
  additionalData: options.additionalData,
  durability: options.durability
})

/** @internal */
export const continueOptionsToWire = (options: Workflow.ContinueOptions | undefined): typeof ContinueOptions.Type =>
  options === undefined ? {} : defined({ ...sharedToWire(options), pause: options.pause })

/** @internal */
export const continueOptionsFromWire = (options: typeof ContinueOptions.Type): Workflow.ContinueOptions => ({
  ...sharedFromWire(options),
  pause: options.pause
})

/** The state Schema of a workflow, when it has a typed one. */
const stateSchema = (self: Workflow.Any): Schema.Schema<unknown, unknown> | undefined =>
  (self.state as { readonly schema: Schema.Schema<unknown, unknown> } | undefined)?.schema

/**
 * A run output as it crosses: its state encoded with the workflow's state
 * Schema (a state that does not encode is a `StateDecodeError`, as a stored
 * one that does not decode).
 *
 * @internal
 */
export const outputToWire = (
  self: Workflow.Any,
  output: Workflow.RunOutput<unknown, unknown>
): Effect.Effect<typeof RunOutput.Type, WorkflowError.StateDecodeError> => {
  const schema = stateSchema(self)
  const state = schema === undefined ? Effect.succeed(output.state) : Schema.encode(schema)(output.state)
  return Effect.map(
    Effect.mapError(state, (error) => stateError(output.sessionId, error)),
    (state) =>
      defined({
        runId: output.runId,
        sessionId: output.sessionId,
        userId: output.userId,
        workflowName: output.workflowName,
        content: output.content,
        stepOutputs: output.stepOutputs.map((step) => defined({ ...step })),
        state,
        usage: output.usage
      })
  )
}

/** @internal */
export const outputFromWire = (
  self: Workflow.Any,
  output: typeof RunOutput.Type
): Effect.Effect<Workflow.RunOutput<unknown, unknown>, WorkflowError.StateDecodeError> => {
  const schema = stateSchema(self)
  const state = schema === undefined ? Effect.succeed(output.state) : Schema.decodeUnknown(schema)(output.state)
  return Effect.map(
    Effect.mapError(state, (error) => stateError(output.sessionId, error)),
    (state) => ({
      runId: output.runId,
      sessionId: output.sessionId,
      userId: output.userId,
      workflowName: output.workflowName,
      status: "completed",
      content: output.content,
      stepOutputs: output.stepOutputs.map((step) => StepOutput.make(step)),
      state,
      ...(output.usage === undefined ? {} : { usage: output.usage })
    })
  )
}

const stateError = (sessionId: string, error: ParseResult.ParseError) =>
  new WorkflowError.StateDecodeError({
    sessionId,
    reason: "schema",
    description: ParseResult.TreeFormatter.formatErrorSync(error)
  })
