/**
 * Replay tests: re-execute recorded runs against the current workflow code,
 * with the models' recorded replies, and check that they take the same step
 * path, produce the same outputs and commit the same state.
 *
 * A run records when it runs under {@link record} (or {@link layerRecord})
 * with its events stored (`events: "stored"`): its event log then also holds
 * the state it started from (`RunRecording`) and every model reply
 * (`ModelReplied`). {@link fromStore} reads such runs back; the CLI's
 * `sessionflow export-runs` writes them to a file ({@link RecordedRuns}), for a
 * test to replay with {@link replayAll}:
 *
 * ```ts
 * // production (or a staging run): record
 * Workflow.run(orders, input, { events: "stored", eventRetention: { keepFor: "30 days" } }).pipe(Replay.record)
 *
 * // a test: the current code must take the recorded runs the same way
 * const file = Replay.decodeFile(JSON.parse(fs.readFileSync("orders.runs.json", "utf8")))
 * yield* Replay.replayAll(orders, file.runs) // fails with ReplayMismatch at the first difference
 * ```
 *
 * A replay runs in a fresh in-memory store, from the state the run started
 * from, with the recorded input. Every agent's model calls (the context's
 * model or an agent's own) are answered with the recorded replies, in order.
 * Everything else runs for real: tools and steps that reach other services
 * need those services (or test layers for them) provided. An agent's
 * `history` reads the replay's store, which holds no earlier runs; parallel
 * branches must complete in the recorded order. Runs that paused or were
 * carried on after a crash (their logs hold `RunPaused` or `RunResumed`) are
 * not replayed: {@link fromStore} leaves them out.
 *
 * Recording costs one event per model call (its reply, usage included) and
 * one per attempt (the start state) in the run's stored log, which keeps them
 * as long as its `eventRetention` says (default one hour after the run).
 *
 * @since 0.1.0
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as json from "./internal/json.js"
import * as recording from "./internal/record.js"
import * as SessionStore from "./SessionStore.js"
import * as TestModel from "./TestModel.js"
import * as Workflow from "./Workflow.js"
import * as WorkflowError from "./WorkflowError.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * Runs `self` with recording on: every run it makes whose events are stored
 * (`events: "stored"`) or streamed also emits the state it starts from
 * (`RunRecording`) and each model reply (`ModelReplied`).
 *
 * @since 0.1.0
 * @category recording
 */
export const record = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(self, recording.recording, true)

/**
 * {@link record} as a layer: the runs of whatever it is provided to record
 * (e.g. a server's or a worker's runs).
 *
 * @since 0.1.0
 * @category recording
 */
export const layerRecord: Layer.Layer<never> = Layer.locallyScoped(recording.recording, true)

/**
 * A recorded run: its ids, input, the (encoded) state it started from, how it
 * ended (`completed` or `error`) and its events from the start of its last
 * attempt (text deltas left out), model replies included.
 *
 * @since 0.1.0
 * @category models
 */
export const RecordedRun = Schema.Struct({
  runId: Schema.String,
  sessionId: Schema.String,
  workflowName: Schema.String,
  userId: Schema.optional(Schema.String),
  status: Schema.Literal("completed", "error"),
  input: Schema.Unknown,
  state: Schema.Unknown,
  /** epoch milliseconds */
  startedAt: Schema.Number,
  events: Schema.Array(WorkflowEvent.WorkflowEvent)
}).annotations({ identifier: "RecordedRun" })

/**
 * @since 0.1.0
 * @category models
 */
export type RecordedRun = typeof RecordedRun.Type

/**
 * The format name of a file of recorded runs.
 *
 * @since 0.1.0
 * @category files
 */
export const fileFormat = "sessionflow.recorded-runs/1" as const

/**
 * A file of recorded runs, as `sessionflow export-runs` writes it.
 *
 * @since 0.1.0
 * @category files
 */
export const RecordedRuns = Schema.Struct({
  format: Schema.Literal(fileFormat),
  workflowName: Schema.String,
  /** epoch milliseconds */
  exportedAt: Schema.Number,
  runs: Schema.Array(RecordedRun)
}).annotations({ identifier: "RecordedRuns" })

/**
 * @since 0.1.0
 * @category files
 */
export type RecordedRuns = typeof RecordedRuns.Type

/**
 * The JSON Schema of a file of recorded runs.
 *
 * @since 0.1.0
 * @category files
 */
export const jsonSchema: JSONSchema.JsonSchema7Root = JSONSchema.make(RecordedRuns)

/**
 * Decodes a file of recorded runs (parsed JSON); a file that does not fit is
 * a `ParseError` naming where.
 *
 * @since 0.1.0
 * @category files
 */
export const decodeFile: (u: unknown) => RecordedRuns = Schema.decodeUnknownSync(RecordedRuns)

/**
 * A file of recorded runs, ready for `JSON.stringify`.
 *
 * @since 0.1.0
 * @category files
 */
export const encodeFile = (workflowName: string, runs: ReadonlyArray<RecordedRun>, exportedAt: number): unknown =>
  Schema.encodeSync(RecordedRuns)({ format: fileFormat, workflowName, exportedAt, runs })

/**
 * A recorded run from its record and its stored events, when they hold a
 * recording from the run's start: none for a run that did not record, whose
 * log is gone, that did not complete or fail, or that paused or was carried on.
 *
 * @since 0.1.0
 * @category reading
 */
export const fromEvents = (
  record: SessionStore.RunRecord,
  events: ReadonlyArray<WorkflowEvent.WorkflowEvent>
): Option.Option<RecordedRun> => {
  if (record.status !== "completed" && record.status !== "error") return Option.none()
  if (events.some((e) => e.path.length === 0 && (e._tag === "RunPaused" || e._tag === "RunResumed"))) {
    return Option.none()
  }
  const start = lastIndex(events, (e) => e._tag === "RunRecording")
  if (start === -1) return Option.none()
  const recordedStart = events[start] as WorkflowEvent.RunRecording
  const kept = events.slice(start + 1).filter((e) => e._tag !== "TextDelta")
  if (!kept.some(SessionStore.isFinalEvent)) return Option.none()
  return Option.some({
    runId: record.runId,
    sessionId: record.sessionId,
    workflowName: record.workflowName,
    ...(record.userId === undefined ? {} : { userId: record.userId }),
    status: record.status,
    input: record.input,
    state: recordedStart.state,
    startedAt: record.startedAt,
    events: kept
  })
}

const lastIndex = <A>(items: ReadonlyArray<A>, f: (a: A) => boolean): number => {
  for (let i = items.length - 1; i >= 0; i--) if (f(items[i]!)) return i
  return -1
}

/**
 * @since 0.1.0
 * @category reading
 */
export interface FromStoreOptions {
  /** only this session's runs (else the workflow's, most recent first) */
  readonly sessionId?: string | undefined
  /** only these runs */
  readonly runIds?: ReadonlyArray<string> | undefined
  /** at most this many of the most recent runs looked at (default 100) */
  readonly limit?: number | undefined
}

/**
 * The recorded runs of a workflow in the store, oldest first: its most
 * recent runs (of one session, or the given ones) whose stored events hold a
 * recording (see {@link fromEvents}); runs without one are left out.
 *
 * @since 0.1.0
 * @category reading
 */
export const fromStore = Effect.fn("Replay.fromStore")(function*(
  self: Workflow.Any,
  options?: FromStoreOptions
) {
  const store = yield* SessionStore.SessionStore
  const limit = options?.limit ?? 100
  let records: ReadonlyArray<SessionStore.RunRecord>
  if (options?.runIds !== undefined) {
    const found = yield* Effect.forEach(options.runIds, (id) => store.getRun(id))
    records = found.flatMap((r) => (Option.isSome(r) && r.value._tag === "Recorded" ? [r.value.record] : []))
  } else if (options?.sessionId !== undefined) {
    records = yield* store.runs(options.sessionId, { limit })
  } else {
    const listing = yield* store.listRuns({ workflowName: self.name, limit })
    records = listing.runs.flatMap((r) => (r._tag === "Recorded" ? [r.record] : [])).reverse()
  }
  const runs: Array<RecordedRun> = []
  for (const record of records) {
    if (record.workflowName !== self.name) continue
    const recorded = fromEvents(record, yield* readAll(store, record.runId))
    if (Option.isSome(recorded)) runs.push(recorded.value)
  }
  return runs as ReadonlyArray<RecordedRun>
})

const readAll = (store: SessionStore.Backend, runId: string) =>
  Effect.gen(function*() {
    const all: Array<WorkflowEvent.WorkflowEvent> = []
    while (true) {
      const page = yield* store.readEvents(runId, { after: all.at(-1)?.seq, limit: 1000 })
      all.push(...page)
      if (page.length < 1000) return all
    }
  })

/**
 * What a replay found the same: how many steps ran and model calls were
 * answered.
 *
 * @since 0.1.0
 * @category models
 */
export interface Replayed {
  readonly runId: string
  readonly steps: number
  readonly modelCalls: number
}

/**
 * Replays a recorded run against `self` (see the module's description) and
 * fails with `ReplayMismatch` at the first difference: a step that started,
 * completed or failed elsewhere than recorded, a different step output, a
 * condition or router that chose otherwise, a model call the recording has
 * no reply for (or from another agent), another outcome or content, another
 * final state. A run recorded from another workflow (by name) is a mismatch
 * too. The workflow's own services but the model must be provided.
 *
 * @since 0.1.0
 * @category replaying
 */
export const replay = <W extends Workflow.Any>(
  self: W,
  run: RecordedRun
): Effect.Effect<Replayed, WorkflowError.ReplayMismatch, Exclude<Workflow.Context<W>, LanguageModel.LanguageModel>> =>
  Effect.gen(function*() {
    const mismatch = (kind: WorkflowError.ReplayMismatch["kind"], at: string, expected: string, actual: string) =>
      new WorkflowError.ReplayMismatch({ runId: run.runId, workflowName: self.name, kind, at, expected, actual })
    if (run.workflowName !== self.name) {
      return yield* mismatch("outcome", "run", `a run of workflow '${run.workflowName}'`, `workflow '${self.name}'`)
    }
    const replies = run.events.filter((e): e is WorkflowEvent.ModelReplied => e._tag === "ModelReplied")
    let modelProblem: WorkflowError.ReplayMismatch | undefined
    let calls = 0
    const script: TestModel.Responder = (request) => {
      calls++
      const recorded = replies[request.index]
      if (recorded === undefined) {
        modelProblem ??= mismatch(
          "model",
          `model call #${request.index + 1}`,
          `${replies.length} model call${replies.length === 1 ? "" : "s"}`,
          `a call${request.agent === undefined ? "" : ` from agent '${request.agent}'`}`
        )
        return TestModel.fail(`the recording has no reply for model call #${request.index + 1}`)
      }
      if (recorded.agent !== undefined && request.agent !== undefined && recorded.agent !== request.agent) {
        modelProblem ??= mismatch(
          "model",
          `model call #${request.index + 1}`,
          `agent '${recorded.agent}'`,
          `agent '${request.agent}'`
        )
      }
      return toTestReply(recorded.reply)
    }
    const { model } = yield* TestModel.make(script)
    const replayed: Array<WorkflowEvent.WorkflowEvent> = []
    const exit = yield* Workflow.stream(self, run.input as never, {
      sessionId: run.sessionId,
      userId: run.userId,
      sessionState: run.state as never,
      overwriteDbSessionState: true
    }).pipe(
      Stream.runForEach((event) => Effect.sync(() => replayed.push(event))),
      Effect.exit,
      Effect.provide(SessionStore.layerMemory),
      Effect.provideService(LanguageModel.LanguageModel, model),
      Effect.locally(recording.modelOverride, model),
      Effect.locally(recording.recording, false)
    )
    if (modelProblem !== undefined) return yield* modelProblem
    const found = compare(run, replayed, exit, mismatch)
    if (found !== undefined) return yield* found
    if (calls < replies.length) {
      return yield* mismatch(
        "model",
        `model call #${calls + 1}`,
        `${replies.length} model calls`,
        `${calls} model calls`
      )
    }
    return { runId: run.runId, steps: replayed.filter((e) => e._tag === "StepStarted").length, modelCalls: calls }
  }) as never

/**
 * Replays recorded runs one after the other (see {@link replay}), failing at
 * the first run that replays differently.
 *
 * @since 0.1.0
 * @category replaying
 */
export const replayAll = <W extends Workflow.Any>(
  self: W,
  runs: ReadonlyArray<RecordedRun>
): Effect.Effect<
  ReadonlyArray<Replayed>,
  WorkflowError.ReplayMismatch,
  Exclude<Workflow.Context<W>, LanguageModel.LanguageModel>
> => Effect.forEach(runs, (run) => replay(self, run))

const toTestReply = (reply: WorkflowEvent.RecordedReply): TestModel.Reply => {
  switch (reply._tag) {
    case "Fail":
      return TestModel.fail(reply.error)
    case "Text": {
      const text = TestModel.text(reply.text)
      return reply.usage === undefined ? text : TestModel.withUsage(text, reply.usage)
    }
    case "ToolCalls":
      return {
        _tag: "ToolCalls",
        calls: reply.calls,
        text: reply.text,
        ...(reply.usage === undefined ? {} : { usage: reply.usage })
      }
  }
}

/** A milestone of a run: what is compared, one event at a time. */
interface Milestone {
  readonly kind: "step" | "output" | "decision"
  readonly at: string
  /** what must be the same, as text */
  readonly key: string
  /** the output compared once the key is the same */
  readonly value?: unknown
}

/** a step's events carry its path, its own name last */
const stepAt = (event: { readonly path: ReadonlyArray<string> }) => event.path.join("/")

const milestoneOf = (event: WorkflowEvent.WorkflowEvent): Milestone | undefined => {
  switch (event._tag) {
    case "StepStarted":
      return { kind: "step", at: stepAt(event), key: `step '${stepAt(event)}' (${event.kind}) started` }
    case "StepCompleted":
      return {
        kind: "step",
        at: stepAt(event),
        key: `step '${stepAt(event)}' ${event.success ? "completed" : "completed unsuccessfully"}`,
        value: event.content
      }
    case "StepFailed":
      return { kind: "step", at: stepAt(event), key: `step '${stepAt(event)}' failed: ${event.error}` }
    case "ConditionEvaluated":
      return { kind: "decision", at: stepAt(event), key: `condition ${event.result} (${event.branch})` }
    case "RouterSelected":
      return { kind: "decision", at: stepAt(event), key: `router selected ${event.selected.join(", ")}` }
    default:
      return undefined
  }
}

/** A value as its stored JSON reads back (what a recording holds). */
const asStored = (value: unknown): unknown => {
  if (value === undefined) return undefined
  try {
    return JSON.parse(JSON.stringify(value))
  } catch {
    return value
  }
}

const show = (value: unknown) => WorkflowEvent.formatValue(value, 200)

const finalState = (start: unknown, events: ReadonlyArray<WorkflowEvent.WorkflowEvent>): unknown =>
  json.applyChanges(
    asStored(start),
    events.flatMap((
      e
    ) => (e._tag === "StateChanged" ? asStored(e.changes) as ReadonlyArray<WorkflowEvent.StateChange> : [])),
    { copy: true }
  )

const compare = (
  run: RecordedRun,
  replayed: ReadonlyArray<WorkflowEvent.WorkflowEvent>,
  exit: Exit.Exit<void, unknown>,
  mismatch: (
    kind: WorkflowError.ReplayMismatch["kind"],
    at: string,
    expected: string,
    actual: string
  ) => WorkflowError.ReplayMismatch
): WorkflowError.ReplayMismatch | undefined => {
  const expected = run.events.flatMap((e) => milestoneOf(e) ?? [])
  const actual = replayed.flatMap((e) => milestoneOf(e) ?? [])
  for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
    const e = expected[i]
    const a = actual[i]
    if (e === undefined) return mismatch(a!.kind, a!.at, "nothing more", a!.key)
    if (a === undefined) return mismatch(e.kind, e.at, e.key, "nothing more")
    if (e.key !== a.key) return mismatch(e.kind, e.at, e.key, a.key)
    if (!json.sameJson(asStored(e.value), asStored(a.value))) {
      return mismatch("output", e.at, show(e.value), show(asStored(a.value)))
    }
  }
  const endOf = (events: ReadonlyArray<WorkflowEvent.WorkflowEvent>) => {
    const at = lastIndex(events, SessionStore.isFinalEvent)
    return at === -1
      ? undefined
      : events[at] as WorkflowEvent.RunCompleted | WorkflowEvent.RunFailed | WorkflowEvent.RunCancelled
  }
  const recordedEnd = endOf(run.events)
  const replayedEnd = endOf(replayed) ?? (Exit.isFailure(exit)
    ? { _tag: "RunFailed" as const, error: Cause.pretty(exit.cause).split("\n")[0] ?? "" }
    : undefined)
  const outcome = (end: typeof replayedEnd) =>
    end === undefined
      ? "no end"
      : end._tag === "RunCompleted"
      ? "completed"
      : end._tag === "RunFailed"
      ? `failed: ${end.error}`
      : end._tag
  if (
    recordedEnd?._tag !== replayedEnd?._tag ||
    (recordedEnd?._tag === "RunFailed" && outcome(recordedEnd) !== outcome(replayedEnd))
  ) {
    return mismatch("outcome", "run", outcome(recordedEnd), outcome(replayedEnd))
  }
  if (recordedEnd?._tag === "RunCompleted" && replayedEnd?._tag === "RunCompleted") {
    if (!json.sameJson(asStored(recordedEnd.content), asStored(replayedEnd.content))) {
      return mismatch("output", "run", show(recordedEnd.content), show(asStored(replayedEnd.content)))
    }
    const before = finalState(run.state, run.events)
    const after = finalState(run.state, replayed)
    const first = json.diff(before, after)[0]
    if (first !== undefined) {
      const at = ["state", ...first.path].join(".")
      const get = (value: unknown) =>
        first.path.reduce<unknown>((v, k) => (v as Record<string | number, unknown> | undefined)?.[k], value)
      return mismatch("state", at, show(get(before)), show(get(after)))
    }
  }
  return undefined
}
