/**
 * The events of a workflow run: one Schema union tagged by `_tag`. Every event
 * carries the run id, the session id, a per-run sequence number (`seq`, from
 * 0), the step path (`path`, outermost step first; empty for run events) and a
 * timestamp (epoch milliseconds, from the Effect `Clock`).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { dual } from "effect/Function"
import * as Schema from "effect/Schema"

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

/** @since 0.1.0 @category events */
export const RunStarted = Schema.TaggedStruct("RunStarted", {
  ...base,
  workflowName: Schema.String,
  userId: Schema.optional(Schema.String),
  input: Schema.Unknown
})
/** @since 0.1.0 @category events */
export type RunStarted = typeof RunStarted.Type

/** @since 0.1.0 @category events */
export const RunCompleted = Schema.TaggedStruct("RunCompleted", {
  ...base,
  content: Schema.Unknown
})
/** @since 0.1.0 @category events */
export type RunCompleted = typeof RunCompleted.Type

/** @since 0.1.0 @category events */
export const RunFailed = Schema.TaggedStruct("RunFailed", {
  ...base,
  error: Schema.String
})
/** @since 0.1.0 @category events */
export type RunFailed = typeof RunFailed.Type

/**
 * The run paused to wait for a person (see `Step.pause`): nothing of the
 * session is committed yet; `Workflow.continue` carries on. `stepPath` is the
 * path of the step that asked, `payload` what it asks. The run's stream ends
 * after this event.
 *
 * @since 0.1.0
 * @category events
 */
export const RunPaused = Schema.TaggedStruct("RunPaused", {
  ...base,
  stepPath: Schema.Array(Schema.String),
  payload: Schema.Unknown
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
export const RunResumed = Schema.TaggedStruct("RunResumed", {
  ...base,
  workflowName: Schema.String,
  fromStep: Schema.Number,
  reason: Schema.Literal("continued", "resumed")
})
/** @since 0.1.0 @category events */
export type RunResumed = typeof RunResumed.Type

/** @since 0.1.0 @category events */
export const RunCancelled = Schema.TaggedStruct("RunCancelled", { ...base })
/** @since 0.1.0 @category events */
export type RunCancelled = typeof RunCancelled.Type

/** @since 0.1.0 @category events */
export const StepStarted = Schema.TaggedStruct("StepStarted", {
  ...base,
  stepName: Schema.String,
  kind: StepKind
})
/** @since 0.1.0 @category events */
export type StepStarted = typeof StepStarted.Type

/** @since 0.1.0 @category events */
export const StepCompleted = Schema.TaggedStruct("StepCompleted", {
  ...base,
  stepName: Schema.String,
  kind: StepKind,
  content: Schema.Unknown,
  success: Schema.Boolean
})
/** @since 0.1.0 @category events */
export type StepCompleted = typeof StepCompleted.Type

/** @since 0.1.0 @category events */
export const StepFailed = Schema.TaggedStruct("StepFailed", {
  ...base,
  stepName: Schema.String,
  kind: StepKind,
  error: Schema.String
})
/** @since 0.1.0 @category events */
export type StepFailed = typeof StepFailed.Type

/** @since 0.1.0 @category events */
export const ConditionEvaluated = Schema.TaggedStruct("ConditionEvaluated", {
  ...base,
  stepName: Schema.String,
  result: Schema.Boolean,
  branch: Schema.Literal("steps", "else", "none")
})
/** @since 0.1.0 @category events */
export type ConditionEvaluated = typeof ConditionEvaluated.Type

/** @since 0.1.0 @category events */
export const RouterSelected = Schema.TaggedStruct("RouterSelected", {
  ...base,
  stepName: Schema.String,
  selected: Schema.Array(Schema.String)
})
/** @since 0.1.0 @category events */
export type RouterSelected = typeof RouterSelected.Type

/** @since 0.1.0 @category events */
export const LoopIterationStarted = Schema.TaggedStruct("LoopIterationStarted", {
  ...base,
  stepName: Schema.String,
  iteration: Schema.Number
})
/** @since 0.1.0 @category events */
export type LoopIterationStarted = typeof LoopIterationStarted.Type

/** @since 0.1.0 @category events */
export const LoopIterationCompleted = Schema.TaggedStruct("LoopIterationCompleted", {
  ...base,
  stepName: Schema.String,
  iteration: Schema.Number,
  done: Schema.Boolean,
  /** the loop reached `maxIterations` before its end condition held */
  exhausted: Schema.Boolean
})
/** @since 0.1.0 @category events */
export type LoopIterationCompleted = typeof LoopIterationCompleted.Type

/** @since 0.1.0 @category events */
export const ParallelStarted = Schema.TaggedStruct("ParallelStarted", {
  ...base,
  stepName: Schema.String,
  branches: Schema.Array(Schema.String)
})
/** @since 0.1.0 @category events */
export type ParallelStarted = typeof ParallelStarted.Type

/** @since 0.1.0 @category events */
export const ParallelCompleted = Schema.TaggedStruct("ParallelCompleted", {
  ...base,
  stepName: Schema.String
})
/** @since 0.1.0 @category events */
export type ParallelCompleted = typeof ParallelCompleted.Type

/**
 * The session state changed; `changes` says where and how.
 *
 * @since 0.1.0
 * @category events
 */
export const StateChanged = Schema.TaggedStruct("StateChanged", {
  ...base,
  changes: Schema.Array(StateChange)
})
/** @since 0.1.0 @category events */
export type StateChanged = typeof StateChanged.Type

/**
 * A piece of text streamed by a model or by a streaming executor.
 *
 * @since 0.1.0
 * @category events
 */
export const TextDelta = Schema.TaggedStruct("TextDelta", {
  ...base,
  delta: Schema.String
})
/** @since 0.1.0 @category events */
export type TextDelta = typeof TextDelta.Type

/** @since 0.1.0 @category events */
export const ToolCallStarted = Schema.TaggedStruct("ToolCallStarted", {
  ...base,
  toolCallId: Schema.String,
  toolName: Schema.String,
  arguments: Schema.Unknown
})
/** @since 0.1.0 @category events */
export type ToolCallStarted = typeof ToolCallStarted.Type

/** @since 0.1.0 @category events */
export const ToolCallCompleted = Schema.TaggedStruct("ToolCallCompleted", {
  ...base,
  toolCallId: Schema.String,
  toolName: Schema.String,
  result: Schema.Unknown,
  isError: Schema.Boolean
})
/** @since 0.1.0 @category events */
export type ToolCallCompleted = typeof ToolCallCompleted.Type

/**
 * A line of text a step, condition, router or tool wants to show in the run's
 * transcript (see {@link log}).
 *
 * @since 0.1.0
 * @category events
 */
export const Log = Schema.TaggedStruct("Log", {
  ...base,
  message: Schema.String
})
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
  Log
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
 * Where the events of the current run go. Installed by `Workflow.run` and
 * `Workflow.stream` for the fibers of a run.
 *
 * @since 0.1.0
 * @category models
 */
export interface Emitter {
  /** false when nobody listens (`Workflow.run`): emitters may skip work. */
  readonly enabled: boolean
  readonly emit: (payload: Payload, path: ReadonlyArray<string>) => Effect.Effect<void>
}

/**
 * The emitter used outside of any run: drops everything.
 *
 * @since 0.1.0
 * @category constructors
 */
export const noopEmitter: Emitter = { enabled: false, emit: () => Effect.void }

/**
 * The current run's emitter.
 *
 * @since 0.1.0
 * @category fiber refs
 */
export const currentEmitter: FiberRef.FiberRef<Emitter> = FiberRef.unsafeMake(noopEmitter)

/**
 * The path of the step being executed (outermost first).
 *
 * @since 0.1.0
 * @category fiber refs
 */
export const currentPath: FiberRef.FiberRef<ReadonlyArray<string>> = FiberRef.unsafeMake<ReadonlyArray<string>>([])

/**
 * Emits an event of the current run at the current step path. Outside a run,
 * or when nobody consumes the run's events, it does nothing. Streaming
 * executors, agents and tools use it to publish their own events.
 *
 * @since 0.1.0
 * @category emitting
 */
export const emit = (payload: Payload): Effect.Effect<void> =>
  Effect.flatMap(
    FiberRef.get(currentEmitter),
    (emitter) => emitter.enabled ? Effect.flatMap(FiberRef.get(currentPath), (path) => emitter.emit(payload, path)) : Effect.void
  )

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
export const log = (message: string): Effect.Effect<void> =>
  Effect.flatMap(isEnabled, (enabled) => (enabled ? emit({ _tag: "Log", message }) : Effect.logInfo(message)))

/**
 * Whether the current run's events are being consumed; lets producers skip
 * building expensive payloads.
 *
 * @since 0.1.0
 * @category emitting
 */
export const isEnabled: Effect.Effect<boolean> = Effect.map(FiberRef.get(currentEmitter), (e) => e.enabled)

/**
 * Runs `self` one level deeper in the step path.
 *
 * @since 0.1.0
 * @category emitting
 */
export const withPathSegment: {
  (segment: string): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, segment: string): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, segment: string): Effect.Effect<A, E, R> =>
    Effect.flatMap(FiberRef.get(currentPath), (path) => Effect.locally(self, currentPath, [...path, segment]))
)

/**
 * Renders an event as one readable line (used by logs and the CLI's plain
 * output).
 *
 * @since 0.1.0
 * @category formatting
 */
export const format = (event: WorkflowEvent): string => {
  const where = event.path.length > 0 ? ` [${event.path.join(" > ")}]` : ""
  switch (event._tag) {
    case "RunStarted":
      return `run started: ${event.workflowName} (session ${event.sessionId})`
    case "RunCompleted":
      return `run completed: ${preview(event.content)}`
    case "RunFailed":
      return `run failed: ${event.error}`
    case "RunCancelled":
      return `run cancelled`
    case "RunPaused":
      return `⏸ run paused at ${event.stepPath.join(" > ")}: ${preview(event.payload)}`
    case "RunResumed":
      return `▶ run ${event.reason} from step ${event.fromStep + 1}`
    case "StepStarted":
      return `▶ ${event.kind} ${event.stepName}${where}`
    case "StepCompleted":
      return `${event.success ? "✓" : "✗"} ${event.stepName}: ${preview(event.content)}`
    case "StepFailed":
      return `✗ ${event.stepName} failed: ${event.error}`
    case "ConditionEvaluated":
      return `? ${event.stepName} → ${event.result} (${event.branch})`
    case "RouterSelected":
      return `↪ ${event.stepName} → ${event.selected.join(", ")}`
    case "LoopIterationStarted":
      return `↻ ${event.stepName} iteration ${event.iteration}`
    case "LoopIterationCompleted":
      return `↻ ${event.stepName} iteration ${event.iteration} done${
        event.exhausted ? " (loop ends: maxIterations reached before its end condition)" : event.done ? " (loop ends)" : ""
      }`
    case "ParallelStarted":
      return `⇉ ${event.stepName}: ${event.branches.join(", ")}`
    case "ParallelCompleted":
      return `⇉ ${event.stepName} done`
    case "StateChanged":
      return `state: ${event.changes.map(formatChange).join("; ")}`
    case "TextDelta":
      return event.delta
    case "ToolCallStarted":
      return `🔧 ${event.toolName}(${preview(event.arguments)})`
    case "ToolCallCompleted":
      return `🔧 ${event.toolName} → ${event.isError ? "error: " : ""}${preview(event.result)}`
    case "Log":
      return event.message
  }
}

/**
 * Renders one state change, e.g. `shopping_list += ["milk"]`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatChange = (change: StateChange): string => {
  const at = change.path.length === 0 ? "(state)" : change.path.join(".")
  switch (change.op) {
    case "set":
      return `${at} = ${preview(change.value)}`
    case "delete":
      return `${at} deleted`
    case "append":
      return `${at} += ${preview(change.items)}`
  }
}

const preview = (u: unknown): string => {
  if (u === undefined) return "(no content)"
  const s = typeof u === "string" ? u : safeJson(u)
  return s.length > 200 ? `${s.slice(0, 197)}...` : s
}

const safeJson = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}
