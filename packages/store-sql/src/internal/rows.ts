/**
 * The rows the SQL store keeps sessions, runs and unfinished runs in, their
 * conversions to and from the models of `SessionStore`, the JSON columns, the
 * validation of table names, and the errors a rejected write or an unreadable
 * row fails with. Only Schemas and pure functions: no SQL.
 *
 * @internal
 */
import { SessionStore, WorkflowError } from "@sessionflow/core"
import type { WorkflowEvent } from "@sessionflow/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { TableNames } from "../SqlSessionStore.js"

type StateChange = WorkflowEvent.StateChange

// -----------------------------------------------------------------------------
// table names
// -----------------------------------------------------------------------------

/**
 * The session table used when no `table` option is given.
 */
export const defaultTable = "sessionflow_sessions"

const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * The longest `table` option (the derived names add up to 11 characters).
 */
const maxTableLength = 48

/**
 * Checks a name the store puts into SQL as an identifier: 1 to `maxLength`
 * letters (lowercase ones only with `lowercase`), digits and underscores, not
 * starting with a digit or with the database's `reservedPrefix`; else a
 * `SessionStoreError` naming `what` ("table", "schema").
 */
export const checkIdentifier = (
  what: string,
  name: string,
  options: { readonly reservedPrefix: string; readonly maxLength: number; readonly lowercase?: boolean | undefined }
): Effect.Effect<string, WorkflowError.SessionStoreError> =>
  identifier.test(name) && name.length <= options.maxLength && !name.toLowerCase().startsWith(options.reservedPrefix) &&
    (options.lowercase !== true || name === name.toLowerCase())
    ? Effect.succeed(name)
    : Effect.fail(
      new WorkflowError.SessionStoreError({
        method: "make",
        description: `invalid ${what} name ${JSON.stringify(name)}: use 1 to ${options.maxLength} ${
          options.lowercase === true ? "lowercase " : ""
        }letters, digits and underscores, not starting with a digit or "${options.reservedPrefix}"`
      })
    )

/**
 * Validates a `table` option (see {@link checkIdentifier}) and derives the
 * names of the runs, unfinished runs and migrations tables from it.
 */
export const tableNames = (
  table: string,
  options: { readonly reservedPrefix: string; readonly lowercase?: boolean | undefined }
): Effect.Effect<TableNames, WorkflowError.SessionStoreError> =>
  Effect.map(
    checkIdentifier("table", table, { ...options, maxLength: maxTableLength }),
    (table) => ({
      sessions: table,
      runs: `${table}_runs`,
      active: `${table}_active`,
      changes: `${table}_changes`,
      events: `${table}_events`,
      queue: `${table}_queue`,
      versions: `${table}_versions`,
      signals: `${table}_signals`,
      schedules: `${table}_schedules`,
      migrations: `${table}_migrations`
    })
  )

// -----------------------------------------------------------------------------
// rows
// -----------------------------------------------------------------------------

/**
 * The data of an unfinished run that has no column of its own, kept as JSON.
 */
const ActiveData = Schema.Struct({
  input: Schema.Unknown,
  additionalData: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  initialState: Schema.optional(Schema.Unknown),
  journal: Schema.optional(SessionStore.Journal),
  pause: Schema.optional(SessionStore.Pause),
  shape: Schema.optional(SessionStore.WorkflowShape),
  startedWith: Schema.optional(SessionStore.StartedWith)
})

/**
 * An integer column: a number, or the text PostgreSQL returns a BIGINT as
 * (it may not fit a JS number; ours always do).
 */
export const Integer = Schema.Union(Schema.Number, Schema.NumberFromString)

/**
 * The Schemas of the rows the store reads.
 *
 * - sessions: `session_id`, `workflow_name`, `user_id`, `session_name`,
 *   `state` (JSON text), `version`, `created_at`, `updated_at` (epoch ms);
 *   `paused_run_id` is selected from the unfinished runs.
 * - runs: one row per run, `input` and `content` as JSON text (NULL for none).
 * - unfinished runs: the indexed columns, the rest as JSON in `data`.
 * - a change (what a watcher sees): the session's version, state, the run
 *   that made it (`last_run_id`) and `updated_at`.
 */
export const rowSchemas = (() => {
  const integer = Integer
  const SessionInfoRow = Schema.Struct({
    session_id: Schema.String,
    workflow_name: Schema.String,
    user_id: Schema.NullOr(Schema.String),
    session_name: Schema.NullOr(Schema.String),
    version: integer,
    created_at: integer,
    updated_at: integer
  })
  const SessionRow = Schema.Struct({
    ...SessionInfoRow.fields,
    state: Schema.Unknown,
    paused_run_id: Schema.NullOr(Schema.String),
    pending_changes: Schema.optional(Schema.NullOr(Schema.String))
  })
  const ActiveRow = Schema.Struct({
    run_id: Schema.String,
    session_id: Schema.String,
    workflow_name: Schema.String,
    user_id: Schema.NullOr(Schema.String),
    status: SessionStore.ActiveStatus,
    owner: Schema.String,
    lease_expires_at: integer,
    base_version: integer,
    durability: Schema.Literal("run", "step"),
    data: Schema.parseJson(ActiveData),
    started_at: integer,
    updated_at: integer
  })
  const RunRow = Schema.Struct({
    run_id: Schema.String,
    session_id: Schema.String,
    workflow_name: Schema.String,
    user_id: Schema.NullOr(Schema.String),
    status: SessionStore.RunStatus,
    input: Schema.NullOr(Schema.String),
    content: Schema.NullOr(Schema.String),
    error: Schema.NullOr(Schema.String),
    usage: Schema.NullOr(Schema.String),
    started_at: integer,
    completed_at: integer
  })
  const OwnerRow = Schema.Struct({ user_id: Schema.NullOr(Schema.String), version: integer })
  const VersionRow = Schema.Struct({ version: integer })
  const ChangeRow = Schema.Struct({
    session_id: Schema.String,
    workflow_name: Schema.String,
    version: integer,
    state: Schema.Unknown,
    last_run_id: Schema.NullOr(Schema.String),
    updated_at: integer,
    pending_changes: Schema.optional(Schema.NullOr(Schema.String))
  })
  /** what a commit's first statement returns: the new version and the session's sizes after it */
  const WrittenRow = Schema.Struct({
    version: integer,
    state_size: Schema.optional(integer),
    base_size: Schema.optional(integer),
    changes_size: Schema.optional(integer)
  })
  return { SessionInfoRow, SessionRow, ActiveRow, RunRow, OwnerRow, VersionRow, ChangeRow, WrittenRow } as const
})()

export interface SessionInfoRow {
  readonly session_id: string
  readonly workflow_name: string
  readonly user_id: string | null
  readonly session_name: string | null
  readonly version: number
  readonly created_at: number
  readonly updated_at: number
}

export interface SessionRow extends SessionInfoRow {
  readonly state: unknown
  readonly paused_run_id: string | null
  /** see {@link PendingChanges} */
  readonly pending_changes?: string | null | undefined
}

/**
 * The changes a store keeps after a session's last whole state (see
 * `SessionStore.Commit`'s `changes`), as one row column: the JSON text of an
 * array of the commits' change arrays, oldest first (SQLite:
 * `'[' || group_concat(changes, ',' ORDER BY version) || ']'`, PostgreSQL:
 * the same with `string_agg`), or NULL when
 * there are none. Selected in the same statement as the state, so the two are
 * one snapshot.
 */
type PendingChanges = string | null | undefined

/**
 * How many characters of changes a store keeps after a session's whole state
 * at least, before it writes the whole state again: the changes are kept
 * until they outweigh the state or reach this size, whichever is larger. (So
 * a load reads at most about twice the state, and a commit's cost does not
 * grow with the state: the whole state is written once per as many
 * characters of changes as it has.)
 */
export const minPendingChanges = 65_536

/**
 * Whether a session's kept changes (`changesSize` characters in all) outweigh
 * its whole state (`stateSize` characters) by {@link minPendingChanges}'s
 * rule, so that the store writes the whole state instead.
 */
export const changesOutweighState = (stateSize: number, changesSize: number): boolean =>
  changesSize > Math.max(stateSize, minPendingChanges)

/**
 * Whether a commit's changes start by setting the whole state (path `[]`):
 * what a run sends that did not have the stored state to start from.
 */
export const setsWholeState = (changes: ReadonlyArray<StateChange>): boolean =>
  changes.length > 0 && changes[0]!.op === "set" && changes[0]!.path.length === 0

/**
 * The JSON text of the changes a store may keep for `commit` instead of its
 * state, or null when it writes the whole state: a commit without changes,
 * without a state, or creating the session.
 */
export const changesJson = (
  method: string,
  commit: SessionStore.Commit
): Effect.Effect<string | null, WorkflowError.SessionStoreError> =>
  commit.changes !== undefined && commit.state !== undefined && commit.expectedVersion > 0
    ? toJson(method, "changes", commit.changes)
    : Effect.succeed(null)

/**
 * A stored state with the pending changes folded in (`StateDecodeError`,
 * `corrupt`, when they are not JSON or do not fit the state).
 */
const foldPending = (
  sessionId: string,
  state: unknown,
  pending: PendingChanges
): Effect.Effect<unknown, WorkflowError.StateDecodeError> =>
  pending === null || pending === undefined
    ? Effect.succeed(state)
    : Effect.flatMap(
      Effect.try({
        try: () => JSON.parse(pending) as ReadonlyArray<ReadonlyArray<StateChange>>,
        catch: (cause) =>
          new WorkflowError.StateDecodeError({
            sessionId,
            reason: "corrupt",
            description: "the stored changes are not valid JSON",
            cause
          })
      }),
      (commits) => SessionStore.applyChanges(sessionId, state, commits.flat())
    )

export interface ActiveRow {
  readonly run_id: string
  readonly session_id: string
  readonly workflow_name: string
  readonly user_id: string | null
  readonly status: SessionStore.ActiveStatus
  readonly owner: string
  readonly lease_expires_at: number
  readonly base_version: number
  readonly durability: "run" | "step"
  readonly data: typeof ActiveData.Type
  readonly started_at: number
  readonly updated_at: number
}

/**
 * A run's row as read (also as written, with `session_id` the session's).
 */
export type RunRow = {
  readonly run_id: string
  readonly session_id: string
  readonly workflow_name: string
  readonly user_id: string | null
  readonly status: SessionStore.RunStatus
  readonly input: string | null
  readonly content: string | null
  readonly error: string | null
  /** the run's token usage (`SessionStore.RunUsage`) as JSON */
  readonly usage: string | null
  readonly started_at: number
  readonly completed_at: number
}

export const toInfo = (row: SessionInfoRow): SessionStore.SessionInfo => ({
  sessionId: row.session_id,
  workflowName: row.workflow_name,
  userId: row.user_id ?? undefined,
  name: row.session_name ?? undefined,
  version: row.version,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

/**
 * A session's row with its state parsed (`StateDecodeError` when the state is
 * not JSON text).
 */
export const toStoredSession = (
  row: SessionRow,
  knownVersion?: number | null | undefined
): Effect.Effect<SessionStore.StoredSession, WorkflowError.StateDecodeError> => {
  const unchanged = knownVersion !== undefined && knownVersion !== null && row.version === knownVersion
  return Effect.map(
    unchanged
      ? Effect.succeed(undefined)
      : Effect.flatMap(
        SessionStore.parseState(row.session_id, row.state),
        (state) => foldPending(row.session_id, state, row.pending_changes)
      ),
    (state) => ({
      ...toInfo(row),
      state,
      ...(unchanged ? { unchanged } : {}),
      ...(row.paused_run_id === null ? {} : { pausedRunId: row.paused_run_id })
    })
  )
}

/**
 * A session's row as a watcher sees it.
 */
export interface ChangeRow {
  readonly session_id: string
  readonly workflow_name: string
  readonly version: number
  readonly state: unknown
  readonly last_run_id: string | null
  readonly updated_at: number
  /** see {@link PendingChanges} */
  readonly pending_changes?: string | null | undefined
}

/**
 * A change, with its state parsed (`StateDecodeError` when it is not JSON text);
 * `skipped` is 0 (the watch stream counts the versions it coalesced).
 */
const toChange = (row: ChangeRow): Effect.Effect<SessionStore.SessionChange, WorkflowError.StateDecodeError> =>
  Effect.map(
    Effect.flatMap(
      SessionStore.parseState(row.session_id, row.state),
      (state) => foldPending(row.session_id, state, row.pending_changes)
    ),
    (state) => ({
      sessionId: row.session_id,
      workflowName: row.workflow_name,
      version: row.version,
      skipped: 0,
      state,
      runId: row.last_run_id ?? undefined,
      updatedAt: row.updated_at
    })
  )

/**
 * One read of a watched session: its change when its version went above
 * `last` (`readVersion` first, the whole row only when the version changed).
 */
export const changeAbove = <E, R>(
  last: number,
  readVersion: Effect.Effect<Option.Option<{ readonly version: number }>, E, R>,
  readChange: Effect.Effect<Option.Option<ChangeRow>, E, R>
): Effect.Effect<Option.Option<SessionStore.SessionChange>, E | WorkflowError.StateDecodeError, R> =>
  Effect.gen(function*() {
    const version = yield* readVersion
    if (Option.isNone(version) || version.value.version <= last) return Option.none()
    const row = yield* readChange
    // removed (or removed and created again below `last`) since the version was read
    if (Option.isNone(row) || row.value.version <= last) return Option.none()
    return Option.some(yield* toChange(row.value))
  })

/**
 * A watch's `pollInterval`, checked: a positive, finite duration, else a
 * `SessionStoreError` saying so.
 */
export const pollInterval = (
  requested: Duration.DurationInput
): Effect.Effect<Duration.Duration, WorkflowError.SessionStoreError> => {
  const interval = Duration.decodeUnknown(requested)
  return Option.isNone(interval) || !Duration.isFinite(interval.value) || Duration.isZero(interval.value)
    ? Effect.fail(
      new WorkflowError.SessionStoreError({
        method: "watch",
        description: `invalid pollInterval ${String(requested)}: use a positive, finite duration (e.g. "250 millis")`
      })
    )
    : Effect.succeed(interval.value)
}

/**
 * A watch stream: reads the session (`read`, with the last version emitted)
 * at once and on every wake-up, and emits what it finds above that version,
 * with the versions in between that it did not emit counted as `skipped`
 * (none for the first read's starting point).
 */
export const watchStream = <E, R, E2, R2>(
  wakeUps: Stream.Stream<unknown, E2, R2>,
  read: (last: number) => Effect.Effect<Option.Option<SessionStore.SessionChange>, E, R>
): Stream.Stream<SessionStore.SessionChange, E | E2, R | R2> =>
  Stream.suspend(() => {
    let last = 0
    let first = true
    const poll = Effect.map(
      Effect.suspend(() => read(last)),
      (found) => {
        const starting = first
        first = false
        return Option.map(found, (change) => {
          const skipped = starting ? 0 : change.version - last - 1
          last = change.version
          return { ...change, skipped }
        })
      }
    )
    return Stream.concat(Stream.make(undefined), wakeUps).pipe(
      Stream.mapEffect(() => poll),
      Stream.filterMap((change) => change)
    )
  })

export const toActiveRun = (row: ActiveRow): SessionStore.ActiveRun => ({
  runId: row.run_id,
  sessionId: row.session_id,
  workflowName: row.workflow_name,
  ...(row.user_id === null ? {} : { userId: row.user_id }),
  status: row.status,
  owner: row.owner,
  leaseExpiresAt: row.lease_expires_at,
  baseVersion: row.base_version,
  durability: row.durability,
  ...row.data,
  startedAt: row.started_at,
  updatedAt: row.updated_at
})

/**
 * The `data` column of an unfinished run: what has no column of its own, as JSON.
 */
export const activeData = (run: SessionStore.ActiveRun): string =>
  JSON.stringify({
    input: run.input,
    ...(run.additionalData === undefined ? {} : { additionalData: run.additionalData }),
    ...(run.initialState === undefined ? {} : { initialState: run.initialState }),
    ...(run.journal === undefined ? {} : { journal: run.journal }),
    ...(run.pause === undefined ? {} : { pause: run.pause }),
    ...(run.shape === undefined ? {} : { shape: run.shape }),
    ...(run.startedWith === undefined ? {} : { startedWith: run.startedWith })
  })

/**
 * The `wake_at` column of an unfinished run: when a paused run is due to
 * wake by itself (NULL while it runs, or when it waits with no time).
 */
export const wakeAtOf = (run: SessionStore.ActiveRun): number | null =>
  run.status === "paused" && run.pause?.wakeAt !== undefined ? run.pause.wakeAt : null

/**
 * An unfinished run with `update` applied (`pause: null` removes its pause, `journal: null` its journal).
 */
export const applyRunUpdate = (
  current: SessionStore.ActiveRun,
  update: SessionStore.RunUpdate,
  now: number
): SessionStore.ActiveRun => {
  const next: Record<string, unknown> = { ...current, updatedAt: now }
  for (const [key, value] of Object.entries(update)) {
    if (value === null) delete next[key]
    else if (value !== undefined) next[key] = value
  }
  return next as SessionStore.ActiveRun
}

/**
 * JSON text, or NULL for `undefined` (so that `null` and `undefined` stay apart).
 */
export const toJson = (
  method: string,
  what: string,
  value: unknown
): Effect.Effect<string | null, WorkflowError.SessionStoreError> =>
  Effect.try({
    try: () => (value === undefined ? null : JSON.stringify(value) ?? null),
    catch: (cause) =>
      new WorkflowError.SessionStoreError({ method, description: `cannot serialise the ${what} as JSON`, cause })
  })

/**
 * A new state as JSON text: a value JSON cannot represent is a `SessionStoreError`.
 */
export const stateJson = (method: string, state: unknown): Effect.Effect<string, WorkflowError.SessionStoreError> =>
  Effect.flatMap(toJson(method, "state", state), (json) =>
    json === null
      ? Effect.fail(new WorkflowError.SessionStoreError({ method, description: "cannot serialise the state as JSON" }))
      : Effect.succeed(json))

/**
 * The row a run record is written as, in `sessionId`'s history.
 */
export const toRunRow = (
  method: string,
  sessionId: string,
  run: SessionStore.RunRecord
): Effect.Effect<RunRow, WorkflowError.SessionStoreError> =>
  Effect.gen(function*() {
    return {
      run_id: run.runId,
      session_id: sessionId,
      workflow_name: run.workflowName,
      user_id: run.userId ?? null,
      status: run.status,
      input: yield* toJson(method, "run input", run.input),
      content: yield* toJson(method, "run content", run.content),
      error: run.error ?? null,
      usage: run.usage === undefined ? null : JSON.stringify(run.usage),
      started_at: run.startedAt,
      completed_at: run.completedAt
    }
  })

const fromJson = (text: string | null): unknown => (text === null ? undefined : JSON.parse(text))

const decodeUsage = Schema.decodeSync(Schema.parseJson(SessionStore.RunUsage))

const toRunRecord = (row: RunRow): SessionStore.RunRecord => {
  const content = fromJson(row.content)
  return {
    runId: row.run_id,
    sessionId: row.session_id,
    workflowName: row.workflow_name,
    ...(row.user_id === null ? {} : { userId: row.user_id }),
    status: row.status,
    input: fromJson(row.input),
    ...(content === undefined ? {} : { content }),
    ...(row.error === null ? {} : { error: row.error }),
    ...(row.usage === null ? {} : { usage: decodeUsage(row.usage) }),
    startedAt: row.started_at,
    completedAt: row.completed_at
  }
}

/**
 * The records of run rows; a row whose input or content is not JSON fails
 * with a `SessionStoreError` saying `what` (e.g. "a stored run of session 's'").
 */
export const toRunRecords = (
  method: string,
  what: string,
  rows: ReadonlyArray<RunRow>
): Effect.Effect<Array<SessionStore.RunRecord>, WorkflowError.SessionStoreError> =>
  Effect.try({
    try: () => rows.map(toRunRecord),
    catch: (cause) => new WorkflowError.SessionStoreError({ method, description: `${what} is not valid JSON`, cause })
  })

/**
 * What a store knows of a run id (`Backend.getRun`), from its two reads: the
 * unfinished run with that id, else the record with that id.
 */
export const lookupRun = <E, R>(
  runId: string,
  reads: {
    readonly active: Effect.Effect<Option.Option<SessionStore.ActiveRun>, E, R>
    readonly record: Effect.Effect<Option.Option<RunRow>, E, R>
  }
): Effect.Effect<Option.Option<SessionStore.RunLookup>, E | WorkflowError.SessionStoreError, R> =>
  Effect.flatMap(reads.active, (active) =>
    Option.isSome(active)
      ? Effect.succeed(Option.some<SessionStore.RunLookup>({ _tag: "Active", run: active.value }))
      : Effect.flatMap(reads.record, (row) =>
        Option.isNone(row)
          ? Effect.succeed(Option.none())
          : Effect.map(
            toRunRecords("getRun", `the stored run '${runId}'`, [row.value]),
            (records) =>
              Option.map(Option.fromNullable(records[0]), (record) => ({ _tag: "Recorded" as const, record }))
          )))

/**
 * A `runs` limit read like an array slice: NaN and Infinity mean all runs
 * (`undefined`), 0 or less none, fractions round up.
 */
export const runsLimit = (limit: number | undefined): number | undefined =>
  limit === undefined || Number.isNaN(limit) || limit === Infinity ? undefined : Math.max(0, Math.ceil(limit))

/**
 * Reads each session row on its own: a damaged one is reported in `broken`,
 * the others listed (most recently updated first, ties ordered as in every
 * store).
 */
export const toListing = <I>(
  rows: ReadonlyArray<unknown>,
  Row: Schema.Schema<SessionInfoRow, I>
): SessionStore.SessionListing => {
  const decode = Schema.decodeUnknownEither(Row)
  const found: Array<SessionStore.SessionInfo> = []
  const broken: Array<SessionStore.BrokenSession> = []
  for (const row of rows) {
    const decoded = decode(row)
    if (decoded._tag === "Right") {
      found.push(toInfo(decoded.right))
    } else {
      const sessionId = String((row as { readonly session_id?: unknown }).session_id)
      broken.push({
        sessionId,
        error: new WorkflowError.SessionStoreError({
          method: "list",
          description: `session '${sessionId}' has an unreadable row: ${
            ParseResult.TreeFormatter.formatErrorSync(decoded.left)
          }`,
          cause: decoded.left
        })
      })
    }
  }
  return { sessions: found.sort(SessionStore.byRecency), broken }
}

// -----------------------------------------------------------------------------
// errors
// -----------------------------------------------------------------------------

/**
 * The store's tables are not (fully) migrated.
 */
export class MigrationsPending extends Schema.TaggedError<MigrationsPending>()("MigrationsPending", {}) {}

/**
 * What a store operation can fail with inside: the database's error
 * (`SqlError`), a row that does not decode, tables not migrated.
 */
export type StoreFailure =
  | { readonly _tag: "SqlError"; readonly message: string; readonly cause?: unknown }
  | ParseResult.ParseError
  | MigrationsPending

/**
 * A failure in words; `database` names the database's kind ("SQLite", "PostgreSQL").
 */
export const describeFailure = (database: string, error: StoreFailure): string => {
  switch (error._tag) {
    case "SqlError": {
      const cause = Predicate.hasProperty(error.cause, "message") ? `: ${String(error.cause.message)}` : ""
      return `${database} failed: ${error.message}${cause}`
    }
    case "ParseError":
      return `unexpected row in the database: ${error.message}`
    case "MigrationsPending":
      return "the tables are not migrated"
  }
}

/**
 * The message at the end of a chain of causes (the database's own words).
 */
export const innermostMessage = (error: unknown): string => {
  let message = String(error)
  for (let current = error, depth = 0; depth < 8 && Predicate.hasProperty(current, "message"); depth++) {
    message = String(current.message)
    current = Predicate.hasProperty(current, "cause") ? current.cause : undefined
  }
  return message
}

/**
 * Why a conditional state write touched no row, given what the store holds
 * of the session now (its owner and version, none when it does not exist):
 * missing (`SessionNotFound` for a commit without state, else a conflict with
 * version 0), someone else's, or at another version.
 */
export const rejected = (
  commit: SessionStore.Commit,
  existing: Option.Option<{ readonly user_id: string | null; readonly version: number }>
): Effect.Effect<
  never,
  WorkflowError.SessionNotFound | WorkflowError.SessionConflict | WorkflowError.SessionOwnershipError
> =>
  Option.match(existing, {
    onNone: () =>
      commit.state === undefined
        ? Effect.fail(new WorkflowError.SessionNotFound({ sessionId: commit.sessionId }))
        : Effect.fail(
          new WorkflowError.SessionConflict({
            sessionId: commit.sessionId,
            expectedVersion: commit.expectedVersion,
            actualVersion: 0
          })
        ),
    onSome: (row) =>
      Effect.zipRight(
        SessionStore.checkOwner(commit.sessionId, row.user_id ?? undefined, commit.userId),
        Effect.fail(
          new WorkflowError.SessionConflict({
            sessionId: commit.sessionId,
            expectedVersion: commit.expectedVersion,
            actualVersion: row.version
          })
        )
      )
  })

/**
 * `RunLost`, given the unfinished run with that id now (if any).
 */
export const runLost = (runId: string, active: Option.Option<SessionStore.ActiveRun>): WorkflowError.RunLost =>
  new WorkflowError.RunLost({
    runId,
    description: Option.isNone(active)
      ? "the run is no longer unfinished (it was cancelled or finished elsewhere)"
      : `the run is now owned by ${active.value.owner === "" ? "nobody (paused)" : active.value.owner}`
  })

/**
 * `RunNotFound`: no unfinished run has this id.
 */
export const runNotFound = (runId: string): WorkflowError.RunNotFound =>
  new WorkflowError.RunNotFound({ runId, description: "no unfinished run has this id" })

/**
 * Why a claim failed, given the unfinished run with that id now (if any) and
 * the pause the claim answers (if it names one): `RunNotFound`,
 * `PauseMismatch` (paused elsewhere, or not paused and not running), or
 * `RunInProgress` naming its owner.
 */
export const claimRejected = (
  runId: string,
  existing: Option.Option<SessionStore.ActiveRun>,
  pause: string | undefined,
  now: number
): WorkflowError.RunNotFound | WorkflowError.RunInProgress | WorkflowError.PauseMismatch =>
  Option.isNone(existing)
    ? runNotFound(runId)
    : pause !== undefined && (existing.value.status === "paused" || existing.value.leaseExpiresAt < now)
    ? new WorkflowError.PauseMismatch({
      runId,
      expected: pause,
      ...(existing.value.status === "paused" && existing.value.pause !== undefined
        ? { current: existing.value.pause.key }
        : {})
    })
    : new WorkflowError.RunInProgress({
      runId,
      sessionId: existing.value.sessionId,
      owner: existing.value.owner,
      leaseExpiresAt: existing.value.leaseExpiresAt
    })

// -----------------------------------------------------------------------------
// queued runs
// -----------------------------------------------------------------------------

/** A row of the queue table (`input` as JSON text, NULL for none). */
export const QueueRow = Schema.Struct({
  ticket: Integer,
  run_id: Schema.String,
  session_id: Schema.String,
  workflow_name: Schema.String,
  user_id: Schema.NullOr(Schema.String),
  input: Schema.NullOr(Schema.String),
  status: SessionStore.QueueStatus,
  owner: Schema.String,
  lease_expires_at: Integer,
  enqueued_at: Integer,
  /** JSON text (`SessionStore.QueuedCarry`), NULL for a run that is not a background run (migration 16) */
  carry: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  /** JSON text (`SessionStore.StartedWith`), NULL for none (migration 16) */
  started_with: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
})

/** A queued run from its row; an input that is not JSON fails with a `SessionStoreError`. */
export const toQueuedRun = (
  row: typeof QueueRow.Type
): Effect.Effect<SessionStore.QueuedRun, WorkflowError.SessionStoreError> =>
  Effect.try({
    try: () => ({
      runId: row.run_id,
      sessionId: row.session_id,
      workflowName: row.workflow_name,
      ...(row.user_id === null ? {} : { userId: row.user_id }),
      input: fromJson(row.input),
      ticket: row.ticket,
      status: row.status,
      owner: row.owner,
      leaseExpiresAt: row.lease_expires_at,
      enqueuedAt: row.enqueued_at,
      ...(row.carry === null ? {} : { carry: fromJson(row.carry) as SessionStore.QueuedCarry }),
      ...(row.started_with === null ? {} : { startedWith: fromJson(row.started_with) as SessionStore.StartedWith })
    }),
    catch: (cause) =>
      new WorkflowError.SessionStoreError({
        method: "queuedRuns",
        description: `the stored input of queued run '${row.run_id}' is not JSON`,
        cause
      })
  })

export const ScheduleRow = Schema.Struct({
  workflow_name: Schema.String,
  name: Schema.String,
  cron: Schema.String,
  next_tick: Integer,
  last_fired_at: Schema.NullOr(Integer),
  updated_at: Integer
})

/** A stored schedule from its row. */
export const toSchedule = (row: typeof ScheduleRow.Type): SessionStore.StoredSchedule => ({
  workflowName: row.workflow_name,
  name: row.name,
  cron: row.cron,
  nextTick: row.next_tick,
  ...(row.last_fired_at === null ? {} : { lastFiredAt: row.last_fired_at }),
  updatedAt: row.updated_at
})
