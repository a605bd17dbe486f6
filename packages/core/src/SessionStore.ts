/**
 * Persistence of sessions: their state, name, owner and run history.
 *
 * A backend implements a few primitives ({@link Backend}); {@link make} adds
 * per-session serialisation inside the process. Across processes, backends
 * use optimistic concurrency: every state commit names the version it was
 * based on, and a commit based on a stale version fails with
 * `SessionConflict` and writes nothing.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { SessionConflict, SessionOwnershipError, StateDecodeError } from "./WorkflowError.js"
import * as WorkflowError from "./WorkflowError.js"

/**
 * @since 0.1.0
 * @category models
 */
export const RunStatus = Schema.Literal("completed", "error", "cancelled")

/**
 * @since 0.1.0
 * @category models
 */
export type RunStatus = typeof RunStatus.Type

/**
 * One run of a session, as kept in its history.
 *
 * @since 0.1.0
 * @category models
 */
export const RunRecord = Schema.Struct({
  runId: Schema.String,
  sessionId: Schema.String,
  workflowName: Schema.String,
  userId: Schema.optional(Schema.String),
  status: RunStatus,
  input: Schema.Unknown,
  content: Schema.optional(Schema.Unknown),
  error: Schema.optional(Schema.String),
  /** epoch milliseconds */
  startedAt: Schema.Number,
  /** epoch milliseconds */
  completedAt: Schema.Number
})

/**
 * @since 0.1.0
 * @category models
 */
export type RunRecord = typeof RunRecord.Type

/**
 * What a store knows of a session, without its state.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionInfo {
  readonly sessionId: string
  readonly workflowName: string
  readonly userId: string | undefined
  readonly name: string | undefined
  /** incremented by every committed state change; 1 after the first commit */
  readonly version: number
  readonly createdAt: number
  readonly updatedAt: number
}

/**
 * A session with its state (parsed JSON, not yet decoded with a Schema).
 *
 * @since 0.1.0
 * @category models
 */
export interface StoredSession extends SessionInfo {
  readonly state: unknown
}

/**
 * One atomic write to a session.
 *
 * - `state` present: the new state (JSON-serialisable). It is written only if
 *   the stored version still equals `expectedVersion` (0 = the session must
 *   not exist yet), else `SessionConflict`.
 * - `state` absent: the state is left alone (no version check); the session
 *   must exist.
 * - `run` present: the run record is appended to the session's history.
 * - A session owned by a user accepts commits from that user only.
 *
 * @since 0.1.0
 * @category models
 */
export interface Commit {
  readonly sessionId: string
  readonly workflowName: string
  readonly userId?: string | undefined
  readonly expectedVersion: number
  readonly state?: unknown
  readonly run?: RunRecord | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ListFilter {
  readonly workflowName?: string | undefined
  readonly userId?: string | undefined
}

/**
 * A session a store cannot read (e.g. a row whose version is not a number),
 * reported by {@link Backend.list} instead of failing the whole listing.
 *
 * @since 0.1.0
 * @category models
 */
export interface BrokenSession {
  readonly sessionId: string
  readonly error: WorkflowError.SessionStoreError
}

/**
 * The sessions a listing found: the readable ones, most recently updated
 * first, and the broken ones.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionListing {
  readonly sessions: ReadonlyArray<SessionInfo>
  readonly broken: ReadonlyArray<BrokenSession>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RunsOptions {
  /** only the most recent `limit` runs (still oldest first), counted after the `status` filter */
  readonly limit?: number | undefined
  /** only runs with this status */
  readonly status?: RunStatus | undefined
}

/**
 * One exchange of a conversation: a completed run's input and output.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChatTurn {
  readonly runId: string
  /** the run's input, as stored */
  readonly input: unknown
  /** the run's content (its last step's output), as stored */
  readonly output: unknown
  /** epoch milliseconds */
  readonly completedAt: number
}

/**
 * The conversation of a session so far: its completed runs' inputs and
 * outputs, oldest first; `lastRuns` keeps only the most recent ones (failed
 * and cancelled runs are left out before counting).
 *
 * @since 0.1.0
 * @category history
 */
export const chatHistory = (
  store: Backend,
  sessionId: string,
  options?: { readonly lastRuns?: number | undefined }
): Effect.Effect<ReadonlyArray<ChatTurn>, WorkflowError.SessionStoreError> =>
  options?.lastRuns !== undefined && options.lastRuns <= 0
    ? Effect.succeed([])
    : Effect.map(
      store.runs(sessionId, { status: "completed", limit: options?.lastRuns }),
      (runs) => runs.map((run) => ({ runId: run.runId, input: run.input, output: run.content, completedAt: run.completedAt }))
    )

/**
 * The primitives a backend implements.
 *
 * @since 0.1.0
 * @category models
 */
export interface Backend {
  /** None when the session does not exist; `StateDecodeError` (corrupt) when its state is not JSON. */
  readonly load: (
    sessionId: string
  ) => Effect.Effect<Option.Option<StoredSession>, WorkflowError.SessionStoreError | StateDecodeError>
  /** What the store knows of a session without its state (its state is not read, so a corrupt one does not matter). */
  readonly info: (sessionId: string) => Effect.Effect<Option.Option<SessionInfo>, WorkflowError.SessionStoreError>
  /** Returns the session's version after the commit. */
  readonly commit: (
    commit: Commit
  ) => Effect.Effect<
    number,
    WorkflowError.SessionStoreError | SessionConflict | SessionOwnershipError | WorkflowError.SessionNotFound
  >
  /** Most recently updated first; rows that cannot be read are listed apart, in `broken`. */
  readonly list: (filter: ListFilter) => Effect.Effect<SessionListing, WorkflowError.SessionStoreError>
  /** The session, its name and its history; false when it did not exist. */
  readonly remove: (sessionId: string) => Effect.Effect<boolean, WorkflowError.SessionStoreError>
  readonly setName: (
    sessionId: string,
    name: string
  ) => Effect.Effect<void, WorkflowError.SessionStoreError | WorkflowError.SessionNotFound>
  /** Oldest first. */
  readonly runs: (
    sessionId: string,
    options: RunsOptions
  ) => Effect.Effect<ReadonlyArray<RunRecord>, WorkflowError.SessionStoreError>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Service extends Backend {
  /**
   * Runs `self` while holding this process's lock on the session, so runs on
   * one session in one process happen one after the other. Taking the lock
   * again from inside `self` (a step running its own session) is a defect
   * with a clear message, not a deadlock.
   */
  readonly withSessionLock: (
    sessionId: string
  ) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class SessionStore extends Context.Tag("@sessionflow/core/SessionStore")<SessionStore, Service>() {}

/**
 * Builds a store from a backend's primitives, adding per-session
 * serialisation within the process.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (backend: Backend): Service => {
  const locks = new Map<string, { readonly semaphore: Effect.Semaphore; users: number }>()
  const acquire = (sessionId: string) =>
    Effect.sync(() => {
      let entry = locks.get(sessionId)
      if (entry === undefined) {
        entry = { semaphore: Effect.unsafeMakeSemaphore(1), users: 0 }
        locks.set(sessionId, entry)
      }
      entry.users++
      return entry
    })
  const release = (sessionId: string, entry: { users: number }) =>
    Effect.sync(() => {
      entry.users--
      if (entry.users === 0) locks.delete(sessionId)
    })
  // the sessions whose lock the current fiber (or one of its ancestors) holds:
  // taking such a lock again would wait for ever, so it is refused instead
  const held = FiberRef.unsafeMake<ReadonlySet<string>>(new Set())
  return {
    ...backend,
    withSessionLock: (sessionId) => (self) =>
      Effect.flatMap(FiberRef.get(held), (sessions) =>
        sessions.has(sessionId)
          ? Effect.dieMessage(
            `SessionStore.withSessionLock: session '${sessionId}' is already locked by this run ` +
              "(a step ran a workflow or changed the session it is running in); use another session"
          )
          : Effect.acquireUseRelease(
            acquire(sessionId),
            (entry) => entry.semaphore.withPermits(1)(Effect.locally(self, held, new Set([...sessions, sessionId]))),
            (entry) => release(sessionId, entry)
          ))
  }
}

/**
 * Checks that `userId` may use a session owned by `ownerId`.
 *
 * @since 0.1.0
 * @category ownership
 */
export const checkOwner = (
  sessionId: string,
  ownerId: string | undefined,
  userId: string | undefined
): Effect.Effect<void, SessionOwnershipError> =>
  ownerId === undefined || ownerId === userId
    ? Effect.void
    : Effect.fail(new WorkflowError.SessionOwnershipError({ sessionId, ownerId, ...(userId === undefined ? {} : { userId }) }))

/**
 * Parses a stored state: JSON text, else a `StateDecodeError` (`corrupt`)
 * naming the session. Backends use it so that corrupt rows fail the same way
 * everywhere.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseState = (sessionId: string, raw: unknown): Effect.Effect<unknown, StateDecodeError> =>
  typeof raw === "string"
    ? Effect.try({
      try: () => JSON.parse(raw) as unknown,
      catch: (cause) =>
        new WorkflowError.StateDecodeError({ sessionId, reason: "corrupt", description: "stored state is not valid JSON", cause })
    })
    : Effect.fail(
      new WorkflowError.StateDecodeError({
        sessionId,
        reason: "corrupt",
        description: `stored state is not JSON text (found ${raw === null ? "NULL" : typeof raw})`
      })
    )

interface MemorySession {
  info: SessionInfo
  state: string
  /** run records as JSON text, like a database keeps them */
  runs: Array<string>
}

/**
 * An in-memory backend. States are kept as JSON text, exactly as a database
 * would keep them, so no caller can mutate a stored state by accident.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemoryBackend = (): Backend => {
  const sessions = new Map<string, MemorySession>()
  const serialise = (method: string, what: string, value: unknown) =>
    Effect.try({
      try: () => {
        const json = JSON.stringify(value)
        if (json === undefined) throw new Error(`the ${what} is not JSON-serialisable`)
        return json
      },
      catch: (cause) => new WorkflowError.SessionStoreError({ method, description: `cannot serialise the ${what} as JSON`, cause })
    })
  return {
    load: (sessionId) =>
      Effect.suspend(() => {
        const s = sessions.get(sessionId)
        if (s === undefined) return Effect.succeed(Option.none())
        return Effect.map(parseState(sessionId, s.state), (state) => Option.some({ ...s.info, state }))
      }),
    info: (sessionId) => Effect.sync(() => Option.fromNullable(sessions.get(sessionId)?.info)),
    commit: (commit) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const state = commit.state === undefined ? undefined : yield* serialise("commit", "state", commit.state)
        const run = commit.run === undefined ? undefined : yield* serialise("commit", "run record", commit.run)
        const existing = sessions.get(commit.sessionId)
        if (existing === undefined) {
          if (state === undefined) {
            return yield* Effect.fail(new WorkflowError.SessionNotFound({ sessionId: commit.sessionId }))
          }
          if (commit.expectedVersion !== 0) {
            return yield* Effect.fail(
              new WorkflowError.SessionConflict({
                sessionId: commit.sessionId,
                expectedVersion: commit.expectedVersion,
                actualVersion: 0
              })
            )
          }
          sessions.set(commit.sessionId, {
            info: {
              sessionId: commit.sessionId,
              workflowName: commit.workflowName,
              userId: commit.userId,
              name: undefined,
              version: 1,
              createdAt: now,
              updatedAt: now
            },
            state,
            runs: run === undefined ? [] : [run]
          })
          return 1
        }
        yield* checkOwner(commit.sessionId, existing.info.userId, commit.userId)
        if (state !== undefined && existing.info.version !== commit.expectedVersion) {
          return yield* Effect.fail(
            new WorkflowError.SessionConflict({
              sessionId: commit.sessionId,
              expectedVersion: commit.expectedVersion,
              actualVersion: existing.info.version
            })
          )
        }
        if (state !== undefined) {
          existing.state = state
          existing.info = { ...existing.info, version: existing.info.version + 1, updatedAt: now }
        } else {
          existing.info = { ...existing.info, updatedAt: now }
        }
        if (run !== undefined) existing.runs.push(run)
        return existing.info.version
      }),
    list: (filter) =>
      Effect.sync(() => ({
        sessions: Array.from(sessions.values(), (s) => s.info)
          .filter((info) =>
            (filter.workflowName === undefined || info.workflowName === filter.workflowName) &&
            (filter.userId === undefined || info.userId === filter.userId)
          )
          .sort(byRecency),
        broken: []
      })),
    remove: (sessionId) => Effect.sync(() => sessions.delete(sessionId)),
    setName: (sessionId, name) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const s = sessions.get(sessionId)
        if (s === undefined) return Effect.fail(new WorkflowError.SessionNotFound({ sessionId }))
        s.info = { ...s.info, name, updatedAt: now }
        return Effect.void
      }),
    runs: (sessionId, options) =>
      Effect.sync(() => {
        const all = (sessions.get(sessionId)?.runs ?? []).map((json) => JSON.parse(json) as RunRecord)
        const runs = options.status === undefined ? all : all.filter((run) => run.status === options.status)
        return options.limit === undefined ? runs : runs.slice(Math.max(0, runs.length - options.limit))
      })
  }
}

/**
 * Most recently updated first; ties by session id.
 *
 * @since 0.1.0
 * @category ordering
 */
export const byRecency = (a: SessionInfo, b: SessionInfo): number =>
  b.updatedAt - a.updatedAt || (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0)

/**
 * A fresh in-memory store each time the layer is built.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<SessionStore> = Layer.sync(SessionStore, () => make(makeMemoryBackend()))
