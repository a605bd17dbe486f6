/**
 * The events of a workflow run: one Schema union tagged by `_tag`. Every event
 * carries the run id, the session id, a per-run sequence number (`seq`, from
 * 0), the step path (`path`, outermost step first; empty for run events) and a
 * timestamp (epoch milliseconds, from the Effect `Clock`).
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as events from "./internal/events.js"
import * as formatting from "./internal/format.js"

const base = {
  runId: Schema.String,
  sessionId: Schema.String,
  seq: Schema.Number,
  path: Schema.Array(Schema.String),
  timestamp: Schema.Number
}

/**
 * The kinds of step nodes.
 *
 * @since 0.1.0
 * @category models
 */
export const StepKind = Schema.Literal(
  "step",
  "steps",
  "condition",
  "router",
  "loop",
  "parallel",
  "agent",
  "team",
  "workflow",
  "container"
)

/**
 * @since 0.1.0
 * @category models
 */
export type StepKind = typeof StepKind.Type

/**
 * One change to the session state. `path` addresses the changed value
 * (object keys and array indexes); `append` means items were added at the end
 * of the array at `path`.
 *
 * @since 0.1.0
 * @category models
 */
export const StateChange = Schema.Union(
  Schema.Struct({
    op: Schema.Literal("set"),
    path: Schema.Array(Schema.Union(Schema.String, Schema.Number)),
    value: Schema.Unknown,
    previous: Schema.optional(Schema.Unknown)
  }),
  Schema.Struct({
    op: Schema.Literal("delete"),
    path: Schema.Array(Schema.Union(Schema.String, Schema.Number)),
    previous: Schema.Unknown
  }),
  Schema.Struct({
    op: Schema.Literal("append"),
    path: Schema.Array(Schema.Union(Schema.String, Schema.Number)),
    items: Schema.Array(Schema.Unknown)
  })
)

/**
 * @since 0.1.0
 * @category models
 */
export type StateChange = typeof StateChange.Type

const event = <const Tag extends string, const Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields) =>
  Schema.TaggedStruct(tag, { ...base, ...fields })

// fields several events share
const node = { stepName: Schema.String, kind: StepKind }
const iteration = { stepName: Schema.String, iteration: Schema.Number }
const toolCall = { toolCallId: Schema.String, toolName: Schema.String }

/** @since 0.1.0 @category events */
export const RunStarted = event("RunStarted", {
  workflowName: Schema.String,
  userId: Schema.optional(Schema.String),
  input: Schema.Unknown
})
/** @since 0.1.0 @category events */
export type RunStarted = typeof RunStarted.Type

/** @since 0.1.0 @category events */
export const RunCompleted = event("RunCompleted", { content: Schema.Unknown })
/** @since 0.1.0 @category events */
export type RunCompleted = typeof RunCompleted.Type

/** @since 0.1.0 @category events */
export const RunFailed = event("RunFailed", { error: Schema.String })
/** @since 0.1.0 @category events */
export type RunFailed = typeof RunFailed.Type

/**
 * The run paused to wait for a person (see `Step.pause`): nothing of the
 * session is committed yet; `Workflow.continue` carries on. `stepPath` is the
 * path of the step that asked, `payload` what it asks, `key` the pause itself
 * (unique within the run: name it in `continue`'s `pause` option so that the
 * answer is taken by this pause only). The run's stream ends after this event.
 *
 * A run that sleeps (`Step.sleep`: `kind` `"sleep"`, until `wakeAt`) or waits
 * for a signal (`Step.waitFor`: `kind` `"signal"`, named `signal`) ends its
 * stream with it too; `timeoutAt` is when a question or a wait times out.
 *
 * @since 0.1.0
 * @category events
 */
export const RunPaused = event("RunPaused", {
  stepPath: Schema.Array(Schema.String),
  key: Schema.String,
  payload: Schema.Unknown,
  kind: Schema.optionalWith(Schema.Literal("question", "sleep", "signal"), { exact: true }),
  signal: Schema.optionalWith(Schema.String, { exact: true }),
  wakeAt: Schema.optionalWith(Schema.Number, { exact: true }),
  timeoutAt: Schema.optionalWith(Schema.Number, { exact: true })
})
/** @since 0.1.0 @category events */
export type RunPaused = typeof RunPaused.Type

/**
 * A paused or abandoned run carries on (in this process): from top-level step
 * number `fromStep` (0-based), as `reason` says.
 *
 * @since 0.1.0
 * @category events
 */
export const RunResumed = event("RunResumed", {
  workflowName: Schema.String,
  fromStep: Schema.Number,
  reason: Schema.Literal("continued", "resumed")
})
/** @since 0.1.0 @category events */
export type RunResumed = typeof RunResumed.Type

/** @since 0.1.0 @category events */
export const RunCancelled = event("RunCancelled", {})
/** @since 0.1.0 @category events */
export type RunCancelled = typeof RunCancelled.Type

/** @since 0.1.0 @category events */
export const StepStarted = event("StepStarted", node)
/** @since 0.1.0 @category events */
export type StepStarted = typeof StepStarted.Type

/** @since 0.1.0 @category events */
export const StepCompleted = event("StepCompleted", { ...node, content: Schema.Unknown, success: Schema.Boolean })
/** @since 0.1.0 @category events */
export type StepCompleted = typeof StepCompleted.Type

/** @since 0.1.0 @category events */
export const StepFailed = event("StepFailed", { ...node, error: Schema.String })
/** @since 0.1.0 @category events */
export type StepFailed = typeof StepFailed.Type

/** @since 0.1.0 @category events */
export const ConditionEvaluated = event("ConditionEvaluated", {
  stepName: Schema.String,
  result: Schema.Boolean,
  branch: Schema.Literal("steps", "else", "none")
})
/** @since 0.1.0 @category events */
export type ConditionEvaluated = typeof ConditionEvaluated.Type

/** @since 0.1.0 @category events */
export const RouterSelected = event("RouterSelected", {
  stepName: Schema.String,
  selected: Schema.Array(Schema.String)
})
/** @since 0.1.0 @category events */
export type RouterSelected = typeof RouterSelected.Type

/** @since 0.1.0 @category events */
export const LoopIterationStarted = event("LoopIterationStarted", iteration)
/** @since 0.1.0 @category events */
export type LoopIterationStarted = typeof LoopIterationStarted.Type

/**
 * `exhausted`: the loop reached `maxIterations` before its end condition held.
 *
 * @since 0.1.0
 * @category events
 */
export const LoopIterationCompleted = event("LoopIterationCompleted", {
  ...iteration,
  done: Schema.Boolean,
  exhausted: Schema.Boolean
})
/** @since 0.1.0 @category events */
export type LoopIterationCompleted = typeof LoopIterationCompleted.Type

/** @since 0.1.0 @category events */
export const ParallelStarted = event("ParallelStarted", {
  stepName: Schema.String,
  branches: Schema.Array(Schema.String)
})
/** @since 0.1.0 @category events */
export type ParallelStarted = typeof ParallelStarted.Type

/** @since 0.1.0 @category events */
export const ParallelCompleted = event("ParallelCompleted", { stepName: Schema.String })
/** @since 0.1.0 @category events */
export type ParallelCompleted = typeof ParallelCompleted.Type

/**
 * The session state changed; `changes` says where and how.
 *
 * @since 0.1.0
 * @category events
 */
export const StateChanged = event("StateChanged", { changes: Schema.Array(StateChange) })
/** @since 0.1.0 @category events */
export type StateChanged = typeof StateChanged.Type

/**
 * A piece of text streamed by a model or by a streaming executor.
 *
 * @since 0.1.0
 * @category events
 */
export const TextDelta = event("TextDelta", { delta: Schema.String })
/** @since 0.1.0 @category events */
export type TextDelta = typeof TextDelta.Type

/** @since 0.1.0 @category events */
export const ToolCallStarted = event("ToolCallStarted", { ...toolCall, arguments: Schema.Unknown })
/** @since 0.1.0 @category events */
export type ToolCallStarted = typeof ToolCallStarted.Type

/** @since 0.1.0 @category events */
export const ToolCallCompleted = event("ToolCallCompleted", {
  ...toolCall,
  result: Schema.Unknown,
  isError: Schema.Boolean
})
/** @since 0.1.0 @category events */
export type ToolCallCompleted = typeof ToolCallCompleted.Type

/**
 * The usage a recorded model reply reported (see {@link ModelReplied}).
 *
 * @since 0.1.0
 * @category models
 */
export const RecordedUsage = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  totalTokens: Schema.optional(Schema.Number),
  reasoningTokens: Schema.optional(Schema.Number),
  cachedInputTokens: Schema.optional(Schema.Number)
})

/**
 * What a model replied to one call of a recorded run, as a `TestModel`
 * reply can say it again: text (a structured output reply is its JSON
 * text), tool calls (with the text before them), or a failure (its
 * description). Provider-executed tool calls are not recorded.
 *
 * @since 0.1.0
 * @category models
 */
export const RecordedReply = Schema.Union(
  Schema.TaggedStruct("Text", { text: Schema.String, usage: Schema.optional(RecordedUsage) }),
  Schema.TaggedStruct("ToolCalls", {
    text: Schema.optional(Schema.String),
    calls: Schema.Array(Schema.Struct({ name: Schema.String, params: Schema.Unknown })),
    usage: Schema.optional(RecordedUsage)
  }),
  Schema.TaggedStruct("Fail", { error: Schema.String })
).annotations({ identifier: "RecordedReply" })

/**
 * @since 0.1.0
 * @category models
 */
export type RecordedReply = typeof RecordedReply.Type

/**
 * A recorded run starts an attempt (see `Replay.record`): `state` is the
 * session state it starts from (encoded, as stored). Emitted only by runs
 * that record.
 *
 * @since 0.1.0
 * @category events
 */
export const RunRecording = event("RunRecording", { state: Schema.Unknown })
/** @since 0.1.0 @category events */
export type RunRecording = typeof RunRecording.Type

/**
 * A model replied to a call of a recorded run (see `Replay.record`): the
 * `agent` that called it and the `reply`, which a replay gives back to the
 * same call. Emitted only by runs that record.
 *
 * @since 0.1.0
 * @category events
 */
export const ModelReplied = event("ModelReplied", {
  agent: Schema.optional(Schema.String),
  reply: RecordedReply
})
/** @since 0.1.0 @category events */
export type ModelReplied = typeof ModelReplied.Type

/**
 * A line of text a step, condition, router or tool wants to show in the run's
 * transcript (see {@link log}).
 *
 * @since 0.1.0
 * @category events
 */
export const Log = event("Log", { message: Schema.String })
/** @since 0.1.0 @category events */
export type Log = typeof Log.Type

/**
 * The schema of every workflow event.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WorkflowEvent = Schema.Union(
  RunStarted,
  RunCompleted,
  RunFailed,
  RunCancelled,
  RunPaused,
  RunResumed,
  StepStarted,
  StepCompleted,
  StepFailed,
  ConditionEvaluated,
  RouterSelected,
  LoopIterationStarted,
  LoopIterationCompleted,
  ParallelStarted,
  ParallelCompleted,
  StateChanged,
  TextDelta,
  ToolCallStarted,
  ToolCallCompleted,
  Log,
  RunRecording,
  ModelReplied
)

/**
 * @since 0.1.0
 * @category models
 */
export type WorkflowEvent = typeof WorkflowEvent.Type

/**
 * The `_tag`s of all events.
 *
 * @since 0.1.0
 * @category models
 */
export type Tag = WorkflowEvent["_tag"]

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

/**
 * An event without the fields the run fills in (`runId`, `sessionId`, `seq`,
 * `path`, `timestamp`).
 *
 * @since 0.1.0
 * @category models
 */
export type Payload = DistributiveOmit<WorkflowEvent, "runId" | "sessionId" | "seq" | "path" | "timestamp">

/**
 * The payload of the events with the given tags.
 *
 * @since 0.1.0
 * @category models
 */
export type PayloadOf<T extends Tag> = Extract<Payload, { readonly _tag: T }>

// -----------------------------------------------------------------------------
// emitting
// -----------------------------------------------------------------------------

/**
 * Emits an event of the current run at the current step path. Outside a run,
 * or when nobody consumes the run's events, it does nothing. Streaming
 * executors, agents and tools use it to publish their own events.
 *
 * @since 0.1.0
 * @category emitting
 */
export const emit: (payload: Payload) => Effect.Effect<void> = events.emit

/**
 * Publishes a line in the run's event stream (a `Log` event at the current
 * step path, in order with the other events). When nobody consumes the run's
 * events, or outside a run, the line goes to the Effect logger instead.
 *
 * ```ts
 * const evaluator = () =>
 *   Effect.gen(function*() {
 *     const state = yield* Greeting.get
 *     yield* WorkflowEvent.log(`has been greeted: ${state.has_been_greeted}`)
 *     return !state.has_been_greeted
 *   })
 * ```
 *
 * @since 0.1.0
 * @category emitting
 */
export const log: (message: string) => Effect.Effect<void> = events.log

/**
 * Whether the current run's events are being consumed; lets producers skip
 * building expensive payloads.
 *
 * @since 0.1.0
 * @category emitting
 */
export const isEnabled: Effect.Effect<boolean> = events.isEnabled

/**
 * Runs `self` one level deeper in the step path.
 *
 * @since 0.1.0
 * @category emitting
 */
export const withPathSegment: {
  (segment: string): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, segment: string): Effect.Effect<A, E, R>
} = events.withPathSegment

// -----------------------------------------------------------------------------
// formatting
// -----------------------------------------------------------------------------

/**
 * What a part of a formatted event is, for a caller that colours it.
 *
 * @since 0.1.0
 * @category formatting
 */
export type Role = formatting.Role

/**
 * @since 0.1.0
 * @category formatting
 */
export interface FormatOptions {
  /** colours a part of the text (default: none) */
  readonly paint?: ((role: Role, text: string) => string) | undefined
  /** `StepCompleted`, `RunCompleted`: how long the step or the run took, in milliseconds */
  readonly elapsed?: number | undefined
  /**
   * `StepCompleted`, `ToolCallCompleted`: the content was already shown as
   * streamed text (the step's content is left out, a tool call's result
   * refers to the reply above)
   */
  readonly streamed?: boolean | undefined
}

/**
 * Renders an event for people, as the lines of a transcript indented two
 * spaces per step level: `▶ manage_items (agent)`, `🔧 add_item(item="milk")`,
 * `→ Added 'milk' to the shopping list.`, `Δ shopping_list += ["milk"]`,
 * `✓ manage_items`, … A `TextDelta` is its text (it continues a line).
 *
 * @since 0.1.0
 * @category formatting
 */
export const format: (event: WorkflowEvent, options?: FormatOptions) => string = formatting.formatEvent

/**
 * Renders one state change, e.g. `shopping_list += ["milk"]`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatChange: (change: StateChange) => string = formatting.formatChange

/**
 * Renders a value (a step's content, a tool result, a state) as {@link format}
 * shows it: a string as it is, anything else as JSON that stays on one line
 * when it fits in `width` columns (default 88).
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatValue = (value: unknown, width?: number): string =>
  typeof value === "string" ? value : formatting.prettyJson(value, width)

/**
 * Renders a value (a run's input, a paused run's question) on one line of at
 * most `max` characters: a string as it is, nothing for `null` and
 * `undefined`, anything else as compact JSON; runs of whitespace become one
 * space, and a longer text ends in `…`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatLine: (value: unknown, max?: number) => string = formatting.line
