/**
 * The in-memory `SessionStore` backend.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import type * as SessionStore from "../../SessionStore.js"
import * as WorkflowError from "../../WorkflowError.js"
import type * as WorkflowEvent from "../../WorkflowEvent.js"
import * as ids from "../ids.js"
import { applyChanges, type Change, copyIfJson, copyJson } from "../json.js"
import * as rules from "./rules.js"

interface MemorySession {
  info: SessionStore.SessionInfo
  /** a private copy of the committed JSON value: never handed out, only copies of it */
  state: unknown
  /** the run whose commit made the current version */
  lastRunId: string | undefined
  /** run records as JSON text, like a database keeps them, by run id, in the order of the history */
  runs: Map<string, string>
  /** the kept versions, oldest first (their states are committed states: never mutated) */
  versions: Array<MemoryVersion>
}

interface MemoryVersion {
  readonly info: SessionStore.VersionInfo
  readonly state: unknown
}

/** A run's stored events (JSON text), in order, and when the run ended (epoch millis). */
interface EventLog {
  readonly events: Array<{ readonly seq: number; readonly json: string }>
  endedAt: number | undefined
}

const serialise = (method: string, what: string, value: unknown) =>
  Effect.try({
    try: () => {
      const json = JSON.stringify(value)
      if (json === undefined) throw new Error(`the ${what} is not JSON-serialisable`)
      return json
    },
    catch: (cause) =>
      new WorkflowError.SessionStoreError({ method, description: `cannot serialise the ${what} as JSON`, cause })
  })

const parse = <A>(json: string): A => JSON.parse(json) as A

/** Larger `at` first, then by id in code point order: the order of every listing. */
const byKey = (a: readonly [number, string], b: readonly [number, string]): number =>
  b[0] - a[0] || ids.compare(a[1], b[1])

/**
 * The page of `items` (with their keys) after `after`, at most `limit` long,
 * in the listing's order, and where the next page starts when one does.
 */
const pageOf = <A>(
  items: ReadonlyArray<readonly [readonly [number, string], A]>,
  after: readonly [number, string] | undefined,
  limit: number | undefined
): { readonly items: ReadonlyArray<A>; readonly next: readonly [number, string] | undefined } => {
  const rest = items.filter(([key]) => after === undefined || byKey(key, after) > 0).sort((a, b) => byKey(a[0], b[0]))
  const taken = limit === undefined ? rest : rest.slice(0, limit)
  return {
    items: taken.map(([, item]) => item),
    next: taken.length < rest.length ? taken[taken.length - 1]![0] : undefined
  }
}

const owned = (userId: string | undefined, filter: string | null | undefined) =>
  filter === undefined || userId === (filter ?? undefined)

const checkOwner = (sessionId: string, ownerId: string | undefined, userId: string | undefined) =>
  ownerId === undefined || ownerId === userId
    ? Effect.void
    : Effect.fail(
      new WorkflowError.SessionOwnershipError({ sessionId, ownerId, ...(userId === undefined ? {} : { userId }) })
    )

/**
 * A private copy of a state, as a JSON round trip would give it back: plain
 * JSON is copied directly, anything else (a `Date`, a `toJSON`) goes through
 * the JSON text.
 */
const store = (method: string, value: unknown) => {
  const copied = copyIfJson(value)
  return copied !== undefined
    ? Effect.succeed(copied.copy)
    : Effect.map(serialise(method, "state", value), (json) => JSON.parse(json) as unknown)
}

/**
 * A committed state change, published to the backend's watchers (the
 * session's private state, which a later commit replaces and never mutates:
 * each watcher gets its own copy).
 */
interface Published {
  readonly info: SessionStore.SessionInfo
  readonly state: unknown
  readonly runId: string | undefined
}

const toChange = (published: Published, skipped: number): SessionStore.SessionChange => ({
  sessionId: published.info.sessionId,
  workflowName: published.info.workflowName,
  version: published.info.version,
  skipped,
  state: copyJson(published.state),
  runId: published.runId,
  updatedAt: published.info.updatedAt
})

/** The summary of a new session's first version: the keys of its state. */
const createdKeys = (state: unknown) => rules.changedKeys(rules.diffStates({}, state))

/** The info of a version, without the fields it does not have. */
const versionInfo = (
  version: number,
  runId: string | undefined,
  committedAt: number,
  changed: ReadonlyArray<string> | undefined
): SessionStore.VersionInfo => ({
  version,
  ...(runId === undefined ? {} : { runId }),
  committedAt,
  ...(changed === undefined ? {} : { changed })
})

/**
 * Adds a session's new version (its current state) to its kept versions and
 * drops those past `keep`; the summary comes from `changes` when they name
 * their keys, else from the version before, when it is kept.
 */
const keepVersion = (
  session: MemorySession,
  keep: number,
  committedAt: number,
  changes: ReadonlyArray<Change> | undefined,
  previous: MemoryVersion | undefined
) => {
  const version = session.info.version
  if (keep > 0) {
    const named = changes === undefined ? undefined : rules.changedKeys(changes)
    const changed = version === 1
      ? createdKeys(session.state)
      : named ??
        (previous === undefined
          ? undefined
          : rules.changedKeys(rules.diffStates(previous.state, session.state)))
    session.versions.push({ info: versionInfo(version, session.lastRunId, committedAt, changed), state: session.state })
  }
  const oldest = version - keep + 1
  if (session.versions.length > 0 && session.versions[0]!.info.version < oldest) {
    session.versions = session.versions.filter((kept) => kept.info.version >= oldest)
  }
}

/** @internal */
export const makeMemoryBackend = (options?: SessionStore.MemoryOptions): SessionStore.Backend => {
  const keepRuns = Effect.runSync(Effect.either(rules.checkKeepRuns("makeMemoryBackend", options?.keepRuns)))
  if (keepRuns._tag === "Left") throw new RangeError(keepRuns.left.description)
  const keep = keepRuns.right
  const storeHistory = options?.history
  const keepOf = (commit: { readonly history?: SessionStore.HistoryOptions | undefined }) =>
    rules.keptVersions(commit.history ?? storeHistory)
  const sessions = new Map<string, MemorySession>()
  const changes = Effect.runSync(PubSub.unbounded<Published>())
  const publish = (session: MemorySession) =>
    PubSub.publish(changes, { info: session.info, state: session.state, runId: session.lastRunId })
  /** unfinished runs as JSON text, by run id */
  const active = new Map<string, string>()
  /** the event logs of runs, by run id */
  const logs = new Map<string, EventLog>()
  /** the signals of unfinished runs (values as JSON text), by run id, in `seq` order */
  const signals = new Map<
    string,
    Array<{ readonly seq: number; readonly name: string; readonly json: string; readonly createdAt: number }>
  >()
  /** removes an unfinished run, with its signals */
  const endActive = (runId: string) => {
    active.delete(runId)
    signals.delete(runId)
  }
  /** the run ids events were appended to, for `watchEvents` */
  const appended = Effect.runSync(PubSub.unbounded<string>())
  /** queued runs (JSON text) by run id, and the last ticket given */
  const queue = new Map<string, string>()
  let lastTicket = 0
  /** schedules as JSON text, by workflow name and schedule name */
  const scheduleTable = new Map<string, string>()
  const scheduleKey = (workflowName: string, name: string) => JSON.stringify([workflowName, name])
  /** the sessions a run left the queue of, for `watchQueue` */
  const dequeued = Effect.runSync(PubSub.unbounded<string>())
  const queuedOf = (sessionId: string | undefined) =>
    Array.from(queue.values(), (json) => parse<SessionStore.QueuedRun>(json))
      .filter((run) => sessionId === undefined || run.sessionId === sessionId)
      .sort((a, b) => a.ticket - b.ticket)

  const recordOf = (runId: string): SessionStore.RunRecord | undefined => {
    for (const session of sessions.values()) {
      const json = session.runs.get(runId)
      if (json !== undefined) return parse<SessionStore.RunRecord>(json)
    }
    return undefined
  }
  const activeRun = (runId: string): SessionStore.ActiveRun | undefined => {
    const json = active.get(runId)
    return json === undefined ? undefined : parse<SessionStore.ActiveRun>(json)
  }
  const pausedRunOf = (sessionId: string): string | undefined => {
    for (const json of active.values()) {
      const run = parse<SessionStore.ActiveRun>(json)
      if (run.sessionId === sessionId && run.status === "paused") return run.runId
    }
    return undefined
  }
  /** a stored session as a load reads it: without its state when it is still at `knownVersion` */
  const storedOf = (s: MemorySession, knownVersion: number | undefined): SessionStore.StoredSession => {
    const pausedRunId = pausedRunOf(s.info.sessionId)
    const unchanged = knownVersion === s.info.version
    return {
      ...s.info,
      state: unchanged ? undefined : copyJson(s.state),
      ...(unchanged ? { unchanged } : {}),
      ...(pausedRunId === undefined ? {} : { pausedRunId })
    }
  }
  /** unfinished runs, oldest first */
  const unfinishedRuns = (filter: SessionStore.ActiveFilter): Array<SessionStore.ActiveRun> =>
    Array.from(active.values(), (json) => parse<SessionStore.ActiveRun>(json))
      .filter((run) =>
        (filter.sessionId === undefined || run.sessionId === filter.sessionId) &&
        (filter.workflowName === undefined || run.workflowName === filter.workflowName) &&
        (filter.status === undefined || run.status === filter.status) &&
        (filter.dueBy === undefined ||
          (run.status === "paused" && run.pause?.wakeAt !== undefined && run.pause.wakeAt <= filter.dueBy))
      )
      .sort((a, b) => a.startedAt - b.startedAt || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0))
  /**
   * appends a record; one with the same run id (there is none: an
   * ended run never runs again) is replaced, as the SQL stores do
   */
  const append = (session: MemorySession, runId: string, json: string) => {
    session.runs.delete(runId)
    session.runs.set(runId, json)
  }
  /** removes records (oldest first) and their event logs; how many of each went */
  const removeRecords = (session: MemorySession, runIds: Iterable<string>) => {
    let runs = 0
    let events = 0
    for (const runId of [...runIds]) {
      if (!session.runs.delete(runId)) continue
      runs++
      events += logs.get(runId)?.events.length ?? 0
      logs.delete(runId)
    }
    return { runs, events }
  }
  /** the records of a session beyond its most recent `keep`, oldest first */
  const beyond = (session: MemorySession, keep: number) =>
    [...session.runs.keys()].slice(0, Math.max(0, session.runs.size - keep))
  const appendEvents = (
    runId: string,
    events: ReadonlyArray<WorkflowEvent.WorkflowEvent>,
    retention: SessionStore.EventRetention
  ) =>
    Effect.gen(function*() {
      if (events.length === 0) return
      const encoded = yield* Effect.forEach(events, rules.encodeEvent)
      const now = yield* Clock.currentTimeMillis
      const log: EventLog = logs.get(runId) ?? { events: [], endedAt: undefined }
      logs.set(runId, log)
      let last = log.events.at(-1)?.seq ?? -1
      events.forEach((event, i) => {
        // a log ends with its terminal event: nothing is appended after it
        if (event.seq <= last || log.endedAt !== undefined) return
        last = event.seq
        log.events.push({ seq: event.seq, json: encoded[i]! })
        if (rules.isFinalEvent(event)) log.endedAt = now
      })
      const beyond = log.events.length - retention.maxEvents
      if (beyond > 0) log.events.splice(0, beyond)
      if (log.endedAt === now && events.some(rules.isFinalEvent)) {
        for (const [id, other] of logs) {
          if (other.endedAt !== undefined && other.endedAt < now - retention.keepFor) logs.delete(id)
        }
      }
      yield* PubSub.publish(appended, runId)
    })

  /** the terminal event of a queued run dropped from its queue, in its log if it keeps one (see `droppedEvent`) */
  const endDroppedLog = (run: SessionStore.QueuedRun, record: SessionStore.RunRecord) => {
    const dropped = rules.droppedEvent(run, record, (logs.get(run.runId)?.events.at(-1)?.seq ?? -1) + 1)
    return dropped === undefined ? Effect.void : appendEvents(run.runId, [dropped.event], dropped.retention)
  }

  /**
   * Appends the record of a run that ended without a commit to its session,
   * creating the session from the run's initial state when it does not exist
   * yet (its version 1 is then a state change, without a run that made it).
   */
  const recordEnded = (
    run: {
      readonly runId: string
      readonly sessionId: string
      readonly workflowName: string
      readonly userId?: string | undefined
      readonly initialState?: unknown
    },
    json: string,
    now: number
  ) =>
    Effect.gen(function*() {
      const existing = sessions.get(run.sessionId)
      if (existing !== undefined) {
        existing.info = { ...existing.info, updatedAt: now }
        append(existing, run.runId, json)
        return
      }
      const session: MemorySession = {
        info: {
          sessionId: run.sessionId,
          workflowName: run.workflowName,
          userId: run.userId,
          name: undefined,
          version: 1,
          createdAt: now,
          updatedAt: now
        },
        state: yield* store("endRun", run.initialState ?? {}),
        lastRunId: undefined,
        runs: new Map(),
        versions: []
      }
      keepVersion(session, keepOf({}), now, undefined, undefined)
      sessions.set(run.sessionId, session)
      append(session, run.runId, json)
      yield* publish(session)
    })
  /** whether a queued run never started: it has no unfinished run and no record (else those tell what became of it) */
  const neverStarted = (runId: string) => !active.has(runId) && recordOf(runId) === undefined
  const lost = (runId: string, description: string) => Effect.fail(new WorkflowError.RunLost({ runId, description }))
  const checkRunOwner = (runId: string, owner: string) => {
    const run = activeRun(runId)
    if (run === undefined) {
      return lost(runId, "the run is no longer unfinished (it was cancelled or finished elsewhere)")
    }
    if (run.owner !== owner) {
      return lost(runId, `the run is now owned by ${run.owner === "" ? "nobody (paused)" : run.owner}`)
    }
    return Effect.succeed(run)
  }

  return {
    load: (sessionId, options) =>
      Effect.sync(() => {
        const s = sessions.get(sessionId)
        return s === undefined ? Option.none() : Option.some(storedOf(s, options?.knownVersion))
      }),
    findSession: (sessionId, options) =>
      Effect.sync((): SessionStore.SessionFound => {
        const s = sessions.get(sessionId)
        // the run of the session's queue that has its turn holds the session too
        const turn = queuedOf(sessionId).filter((run) => run.status === "running").map((
          { leaseExpiresAt, owner, runId }
        ) => ({
          runId,
          owner,
          leaseExpiresAt,
          queued: true as const
        }))
        if (s === undefined) {
          const runs = unfinishedRuns({ sessionId })
          return turn.length === 0 ? { _tag: "New", runs } : { _tag: "New", runs, running: turn }
        }
        const stored = storedOf(s, options?.state === false ? s.info.version : options?.knownVersion)
        const running = [
          ...unfinishedRuns({ sessionId, status: "running" }).map(({ leaseExpiresAt, owner, runId }) => ({
            runId,
            owner,
            leaseExpiresAt
          })),
          ...turn
        ]
        return { _tag: "Stored", session: running.length === 0 ? stored : { ...stored, running } }
      }),
    info: (sessionId) => Effect.sync(() => Option.fromNullable(sessions.get(sessionId)?.info)),
    commit: (commit) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const existing = sessions.get(commit.sessionId)
        // with changes to the stored version, only they are copied and applied
        // (the objects and arrays on their paths copied, the rest shared)
        const changes = commit.changes === undefined || commit.state === undefined || existing === undefined ||
            existing.info.version !== commit.expectedVersion
          ? undefined
          : copyIfJson(commit.changes)
        const state = commit.state === undefined
          ? undefined
          : changes !== undefined
          ? yield* Effect.try({
            try: () => applyChanges(existing!.state, changes.copy as ReadonlyArray<Change>, { copy: true }),
            catch: (cause) =>
              new WorkflowError.SessionStoreError({
                method: "commit",
                description: "the changes do not fit the stored state",
                cause
              })
          })
          : yield* store("commit", commit.state)
        const run = commit.run === undefined ? undefined : yield* serialise("commit", "run record", commit.run)
        if (commit.ends !== undefined) yield* checkRunOwner(commit.ends.runId, commit.ends.owner)
        if (state !== undefined) {
          const paused = pausedRunOf(commit.sessionId)
          if (paused !== undefined && paused !== commit.ends?.runId) {
            return yield* new WorkflowError.SessionPaused({ sessionId: commit.sessionId, runId: paused })
          }
        }
        if (existing === undefined) {
          if (state === undefined) {
            return yield* new WorkflowError.SessionNotFound({ sessionId: commit.sessionId })
          }
          if (commit.expectedVersion !== 0) {
            return yield* new WorkflowError.SessionConflict({
              sessionId: commit.sessionId,
              expectedVersion: commit.expectedVersion,
              actualVersion: 0
            })
          }
          const created: MemorySession = {
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
            lastRunId: commit.run?.runId,
            runs: run === undefined ? new Map() : new Map([[commit.run!.runId, run]]),
            versions: []
          }
          keepVersion(created, keepOf(commit), now, undefined, undefined)
          sessions.set(commit.sessionId, created)
          if (commit.ends !== undefined) endActive(commit.ends.runId)
          yield* publish(created)
          return 1
        }
        yield* checkOwner(commit.sessionId, existing.info.userId, commit.userId)
        if (state !== undefined && existing.info.version !== commit.expectedVersion) {
          return yield* new WorkflowError.SessionConflict({
            sessionId: commit.sessionId,
            expectedVersion: commit.expectedVersion,
            actualVersion: existing.info.version
          })
        }
        if (state !== undefined) {
          const previous = existing.versions.at(-1)
          existing.state = state
          existing.lastRunId = commit.run?.runId
          existing.info = { ...existing.info, version: existing.info.version + 1, updatedAt: now }
          keepVersion(
            existing,
            keepOf(commit),
            now,
            commit.changes,
            previous?.info.version === commit.expectedVersion ? previous : undefined
          )
        } else {
          existing.info = { ...existing.info, updatedAt: now }
        }
        if (run !== undefined) append(existing, commit.run!.runId, run)
        if (state !== undefined && keep !== "all" && rules.trimsAt(keep, existing.info.version)) {
          removeRecords(existing, beyond(existing, keep))
        }
        if (commit.ends !== undefined) endActive(commit.ends.runId)
        if (state !== undefined) yield* publish(existing)
        return existing.info.version
      }),
    list: (filter) =>
      Effect.sync(() => {
        const search = filter.search === undefined ? undefined : rules.foldSearch(filter.search)
        const page = pageOf(
          Array.from(sessions.values(), (s) => s.info)
            .filter((info) =>
              (filter.workflowName === undefined || info.workflowName === filter.workflowName) &&
              owned(info.userId, filter.userId) &&
              (filter.updatedSince === undefined || info.updatedAt >= filter.updatedSince) &&
              (search === undefined || rules.foldSearch(info.sessionId).includes(search) ||
                rules.foldSearch(info.name ?? "").includes(search))
            )
            .map((info) => [[info.updatedAt, info.sessionId], info] as const),
          filter.after === undefined ? undefined : [filter.after.updatedAt, filter.after.sessionId],
          filter.limit
        )
        return {
          sessions: page.items,
          broken: [],
          ...(page.next === undefined ? {} : { next: { updatedAt: page.next[0], sessionId: page.next[1] } })
        }
      }),
    listRuns: (filter) =>
      Effect.sync(() => {
        const matches = (
          run: {
            readonly workflowName: string
            readonly userId?: string | undefined
            readonly sessionId: string
            readonly status: string
          }
        ) =>
          (filter.workflowName === undefined || run.workflowName === filter.workflowName) &&
          owned(run.userId, filter.userId) &&
          (filter.sessionId === undefined || run.sessionId === filter.sessionId) &&
          (filter.status === undefined || run.status === filter.status)
        const found: Array<readonly [readonly [number, string], SessionStore.RunLookup]> = []
        for (const json of active.values()) {
          const run = parse<SessionStore.ActiveRun>(json)
          if (matches(run)) found.push([[run.startedAt, run.runId], { _tag: "Active", run }])
        }
        for (const session of sessions.values()) {
          for (const json of session.runs.values()) {
            const record = parse<SessionStore.RunRecord>(json)
            if (matches(record)) found.push([[record.startedAt, record.runId], { _tag: "Recorded", record }])
          }
        }
        const page = pageOf(
          found,
          filter.after === undefined ? undefined : [filter.after.startedAt, filter.after.runId],
          filter.limit
        )
        return {
          runs: page.items,
          ...(page.next === undefined ? {} : { next: { startedAt: page.next[0], runId: page.next[1] } })
        }
      }),
    remove: (sessionId) =>
      Effect.sync(() => {
        for (const [runId, json] of active) {
          if (parse<SessionStore.ActiveRun>(json).sessionId === sessionId) endActive(runId)
        }
        return sessions.delete(sessionId)
      }),
    setName: (sessionId, name) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const s = sessions.get(sessionId)
        if (s === undefined) return Effect.fail(new WorkflowError.SessionNotFound({ sessionId }))
        s.info = { ...s.info, name, updatedAt: now }
        return Effect.void
      }),
    runs: (sessionId, options) =>
      Effect.sync(() => {
        const all = Array.from(sessions.get(sessionId)?.runs.values() ?? [], (json) =>
          parse<SessionStore.RunRecord>(json))
        const runs = options.status === undefined ? all : all.filter((run) =>
          run.status === options.status
        )
        return options.limit === undefined ? runs : runs.slice(Math.max(0, runs.length - options.limit))
      }),
    versions: (sessionId) => Effect.sync(() => (sessions.get(sessionId)?.versions ?? []).map((kept) => kept.info)),
    loadVersion: (sessionId, version) =>
      Effect.sync(() => {
        const kept = sessions.get(sessionId)?.versions.find((row) => row.info.version === version)
        return kept === undefined ? Option.none() : Option.some(copyJson(kept.state))
      }),
    fork: (request) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const source = sessions.get(request.sessionId)
        if (source === undefined) return yield* new WorkflowError.SessionNotFound({ sessionId: request.sessionId })
        const at = source.versions.find((row) => row.info.version === request.version)
        if (at === undefined) {
          return yield* rules.versionNotFound(request.sessionId, request.version, source.info.version)
        }
        if (sessions.has(request.newSessionId)) {
          return yield* new WorkflowError.SessionExists({ sessionId: request.newSessionId })
        }
        const forked: MemorySession = {
          info: {
            sessionId: request.newSessionId,
            workflowName: source.info.workflowName,
            userId: request.userId,
            name: undefined,
            version: request.version,
            createdAt: now,
            updatedAt: now
          },
          state: at.state,
          lastRunId: at.info.runId,
          runs: new Map(),
          versions: source.versions.filter((row) => row.info.version <= request.version)
        }
        sessions.set(request.newSessionId, forked)
        yield* publish(forked)
        return forked.info
      }),
    watch: (sessionId) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        // subscribed before the current version is read, so no commit falls in between
        const subscription = yield* PubSub.subscribe(changes)
        const current = sessions.get(sessionId)
        // the last version emitted: the starting point's versions before it are not skipped ones
        let last = current?.info.version ?? 0
        const later = (published: Published) => {
          if (published.info.sessionId !== sessionId || published.info.version <= last) return Option.none()
          // every commit is published: none is coalesced (a session removed and made anew restarts below `last`)
          const skipped = published.info.version - last - 1
          last = published.info.version
          return Option.some(toChange(published, skipped))
        }
        const start = current === undefined
          ? []
          : [toChange({ info: current.info, state: current.state, runId: current.lastRunId }, 0)]
        return Stream.concat(Stream.fromIterable(start), Stream.fromQueue(subscription).pipe(Stream.filterMap(later)))
      })),
    appendEvents,
    readEvents: (runId, options) =>
      Effect.suspend(() => {
        const after = options?.after ?? -1
        const limit = options?.limit ?? 1000
        const kept = logs.get(runId)?.events ?? []
        const from = kept.findIndex((event) => event.seq > after)
        const above = from < 0 ? [] : kept.slice(from)
        const found = options?.latest === true ? above.slice(Math.max(0, above.length - limit)) : above.slice(0, limit)
        return Effect.forEach(found, (event) => rules.decodeEvent(runId, event.json))
      }),
    watchEvents: (runId) =>
      Stream.unwrapScoped(Effect.map(PubSub.subscribe(appended), (subscription) =>
        Stream.concat(
          Stream.make(undefined),
          Stream.fromQueue(subscription).pipe(Stream.filter((id) => id === runId), Stream.as(undefined))
        ))),
    putSchedule: (schedule) =>
      Effect.gen(function*() {
        const key = scheduleKey(schedule.workflowName, schedule.name)
        const json = scheduleTable.get(key)
        const stored = json === undefined ? undefined : parse<SessionStore.StoredSchedule>(json)
        if (stored !== undefined && stored.cron === schedule.cron) return stored
        const next: SessionStore.StoredSchedule = {
          workflowName: schedule.workflowName,
          name: schedule.name,
          cron: schedule.cron,
          nextTick: schedule.nextTick,
          ...(stored?.lastFiredAt === undefined ? {} : { lastFiredAt: stored.lastFiredAt }),
          updatedAt: schedule.now
        }
        scheduleTable.set(key, yield* serialise("putSchedule", "schedule", next))
        return next
      }),
    claimScheduleTick: (workflowName, name, claim) =>
      Effect.gen(function*() {
        const key = scheduleKey(workflowName, name)
        const json = scheduleTable.get(key)
        const stored = json === undefined ? undefined : parse<SessionStore.StoredSchedule>(json)
        if (stored === undefined || stored.nextTick !== claim.tick) return false
        const next = { ...stored, nextTick: claim.next, lastFiredAt: claim.now, updatedAt: claim.now }
        scheduleTable.set(key, yield* serialise("claimScheduleTick", "schedule", next))
        return true
      }),
    schedules: (filter) =>
      Effect.sync(() =>
        [...scheduleTable.values()].map((json) => parse<SessionStore.StoredSchedule>(json))
          .filter((schedule) => filter.workflowName === undefined || schedule.workflowName === filter.workflowName)
          .sort((a, b) => ids.compare(a.workflowName, b.workflowName) || ids.compare(a.name, b.name))
      ),
    enqueueRun: (run) =>
      Effect.gen(function*() {
        if (queue.has(run.runId)) {
          return yield* new WorkflowError.SessionStoreError({
            method: "enqueueRun",
            description: `run '${run.runId}' is queued already`
          })
        }
        const ticket = ++lastTicket
        queue.set(run.runId, yield* serialise("enqueueRun", "queued run", { ...run, ticket, status: "waiting" }))
        return ticket
      }),
    takeQueueTurn: (sessionId, runId, turn) =>
      Effect.gen(function*() {
        const json = queue.get(runId)
        const mine = json === undefined ? undefined : parse<SessionStore.QueuedRun>(json)
        if (mine === undefined || mine.sessionId !== sessionId || mine.owner !== turn.owner) return "lost" as const
        let dropped = false
        for (const other of queuedOf(mine.sessionId)) {
          if (other.runId !== runId && other.leaseExpiresAt < turn.now) {
            // a background run that never started waits to be taken over (adoptQueued)
            if (other.carry !== undefined && neverStarted(other.runId)) continue
            queue.delete(other.runId)
            if (neverStarted(other.runId) && sessions.has(other.sessionId)) {
              const ended = rules.droppedRecord(other, turn.now)
              yield* recordEnded(other, yield* serialise("takeQueueTurn", "run record", ended), turn.now)
              yield* endDroppedLog(other, ended)
            }
            dropped = true
          }
        }
        if (dropped) yield* PubSub.publish(dequeued, mine.sessionId)
        // the turn waits for the runs queued before it, and for any other unfinished run of the session
        const ahead = queuedOf(mine.sessionId).some((other) =>
          other.runId !== runId && (other.status === "running" || other.ticket < mine.ticket)
        ) || unfinishedRuns({ sessionId }).some((other) =>
          other.runId !== runId
        )
        const status = mine.status === "running" || !ahead ? "running" as const : "waiting" as const
        queue.set(
          runId,
          yield* serialise("takeQueueTurn", "queued run", { ...mine, status, leaseExpiresAt: turn.leaseExpiresAt })
        )
        return status === "running" ? "taken" as const : "waiting" as const
      }),
    leaveQueue: (sessionId, runId, owner, ended) =>
      Effect.gen(function*() {
        const json = queue.get(runId)
        const run = json === undefined ? undefined : parse<SessionStore.QueuedRun>(json)
        if (run === undefined || run.sessionId !== sessionId || (owner !== undefined && run.owner !== owner)) {
          return false
        }
        const record = ended === undefined ? undefined : yield* serialise("leaveQueue", "run record", ended)
        queue.delete(runId)
        if (record !== undefined && neverStarted(runId) && sessions.has(sessionId)) {
          const now = yield* Clock.currentTimeMillis
          yield* recordEnded(run, record, now)
          if (ended !== undefined) yield* endDroppedLog(run, ended)
        }
        yield* PubSub.publish(dequeued, sessionId)
        return true
      }),
    adoptQueued: (sessionId, runId, adopt) =>
      Effect.gen(function*() {
        const json = queue.get(runId)
        const run = json === undefined ? undefined : parse<SessionStore.QueuedRun>(json)
        if (
          run === undefined || run.sessionId !== sessionId || run.carry === undefined || run.owner !== adopt.from ||
          (adopt.gone !== true && run.leaseExpiresAt >= adopt.now)
        ) return Option.none()
        const taken: SessionStore.QueuedRun = { ...run, owner: adopt.owner, leaseExpiresAt: adopt.leaseExpiresAt }
        queue.set(runId, yield* serialise("adoptQueued", "queued run", taken))
        return Option.some(taken)
      }),
    queuedRuns: (filter) =>
      Effect.sync(() =>
        queuedOf(filter.sessionId).filter((run) =>
          (filter.workflowName === undefined || run.workflowName === filter.workflowName) &&
          (filter.runId === undefined || run.runId === filter.runId)
        )
      ),
    watchQueue: (sessionId) =>
      Stream.unwrapScoped(Effect.map(PubSub.subscribe(dequeued), (subscription) =>
        Stream.concat(
          Stream.make(undefined),
          Stream.fromQueue(subscription).pipe(Stream.filter((id) => id === sessionId), Stream.as(undefined))
        ))),
    startRun: (run) =>
      Effect.gen(function*() {
        const json = yield* serialise("startRun", "run", run)
        const unfinished = activeRun(run.runId)
        if (unfinished !== undefined) return Option.some({ _tag: "Active" as const, run: unfinished })
        const record = recordOf(run.runId)
        if (record !== undefined) {
          return Option.some({ _tag: "Recorded" as const, record })
        }
        active.set(run.runId, json)
        return Option.none()
      }),
    getRun: (runId) =>
      Effect.sync(() => {
        const run = activeRun(runId)
        if (run !== undefined) return Option.some({ _tag: "Active" as const, run })
        const record = recordOf(runId)
        return record === undefined ? Option.none() : Option.some({ _tag: "Recorded" as const, record })
      }),
    updateRun: (runId, owner, update) =>
      Effect.gen(function*() {
        const run = yield* checkRunOwner(runId, owner)
        const now = yield* Clock.currentTimeMillis
        // `null` removes a field (the pause, the journal), `undefined` leaves it
        const next: Record<string, unknown> = { ...run, updatedAt: now }
        for (const [key, value] of Object.entries(update)) {
          if (value === null) delete next[key]
          else if (value !== undefined) next[key] = value
        }
        active.set(runId, yield* serialise("updateRun", "run", next))
      }),
    claimRun: (runId, claim) =>
      Effect.gen(function*() {
        const run = activeRun(runId)
        if (run === undefined) {
          return yield* new WorkflowError.RunNotFound({ runId, description: "no unfinished run has this id" })
        }
        if (claim.pause !== undefined && run.status === "paused" && run.pause?.key !== claim.pause) {
          return yield* new WorkflowError.PauseMismatch({ runId, expected: claim.pause, current: run.pause?.key })
        }
        // a running run whose owner is gone is taken from that owner only (one of several such claims
        // wins); by a continue only while that owner was continuing from the pause it answers
        const fromGone = claim.from !== undefined && run.status === "running" && run.owner === claim.from &&
          (claim.pause === undefined || run.pause?.key === claim.pause)
        if (run.status === "running" && run.leaseExpiresAt >= claim.now && !fromGone) {
          return yield* new WorkflowError.RunInProgress({
            runId,
            sessionId: run.sessionId,
            owner: run.owner,
            leaseExpiresAt: run.leaseExpiresAt
          })
        }
        if (claim.pause !== undefined && run.status !== "paused" && !fromGone) {
          return yield* new WorkflowError.PauseMismatch({ runId, expected: claim.pause })
        }
        const next: SessionStore.ActiveRun = {
          ...run,
          status: "running",
          owner: claim.owner,
          leaseExpiresAt: claim.leaseExpiresAt,
          updatedAt: claim.now
        }
        active.set(runId, yield* serialise("claimRun", "run", next))
        return next
      }),
    activeRuns: (filter) => Effect.sync(() => unfinishedRuns(filter)),
    prune: (request) =>
      Effect.sync(() => {
        let runs = 0
        let events = 0
        if (request.endedBefore === undefined && request.keepLast === undefined) return { runs, events }
        for (const session of sessions.values()) {
          if (request.sessionId !== undefined && session.info.sessionId !== request.sessionId) continue
          // the workflow's records of the session, oldest first
          const records = Array.from(session.runs.values(), (json) => parse<SessionStore.RunRecord>(json))
            .filter((record) => request.workflowName === undefined || record.workflowName === request.workflowName)
          const removed = removeRecords(
            session,
            records.filter((record, i) =>
              (request.keepLast !== undefined && i < records.length - request.keepLast) ||
              (request.endedBefore !== undefined && record.completedAt < request.endedBefore)
            ).map((record) => record.runId)
          )
          runs += removed.runs
          events += removed.events
        }
        return { runs, events }
      }),
    addSignal: (runId, name, value) =>
      Effect.gen(function*() {
        const json = yield* serialise("addSignal", "signal value", value)
        if (!active.has(runId)) {
          return yield* new WorkflowError.RunNotFound({ runId, description: "no unfinished run has this id" })
        }
        const now = yield* Clock.currentTimeMillis
        const kept = signals.get(runId) ?? []
        signals.set(runId, kept)
        const seq = (kept.at(-1)?.seq ?? 0) + 1
        kept.push({ seq, name, json, createdAt: now })
        return seq
      }),
    signals: (runId, options) =>
      Effect.sync(() =>
        (signals.get(runId) ?? [])
          .filter((signal) => options?.name === undefined || signal.name === options.name)
          .map((signal) => ({
            runId,
            seq: signal.seq,
            name: signal.name,
            value: parse<unknown>(signal.json),
            createdAt: signal.createdAt
          }))
      ),
    endRun: (runId, record, owner) =>
      Effect.gen(function*() {
        const run = activeRun(runId)
        if (run === undefined) {
          return yield* new WorkflowError.RunNotFound({ runId, description: "no unfinished run has this id" })
        }
        if (owner !== undefined) yield* checkRunOwner(runId, owner)
        const json = yield* serialise("endRun", "run record", record)
        const now = yield* Clock.currentTimeMillis
        endActive(runId)
        yield* recordEnded(run, json, now)
      })
  }
}
