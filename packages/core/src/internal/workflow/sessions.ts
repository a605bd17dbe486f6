/**
 * The session API of a workflow: read, change, name, watch, list and delete
 * its sessions, and read their history, each for the session's owner.
 * `Workflow` declares them.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as SessionNamer from "../../SessionNamer.js"
import * as SessionStore from "../../SessionStore.js"
import type {
  Any,
  ChatHistoryOptions,
  ForkOptions,
  ForkResult,
  ListSessionsOptions,
  SessionOptions,
  SessionUpdate,
  State,
  StateOptions,
  WatchError,
  WatchOptions
} from "../../Workflow.js"
import * as WorkflowError from "../../WorkflowError.js"
import { checkJson } from "../run/model.js"
import * as runner from "../run/runner.js"
import * as internal from "./model.js"

const resolveSessionId = (self: Any, sessionId: string | undefined, method: string) => {
  const id = sessionId ?? self.sessionId
  return id === undefined
    ? Effect.fail(new WorkflowError.SessionIdRequired({ workflowName: self.name, method }))
    : runner.checkSessionId(id)
}

const owned = <S extends SessionStore.SessionInfo, E>(
  self: Any,
  sessionId: string,
  options: SessionOptions | undefined,
  read: (store: SessionStore.Service) => Effect.Effect<Option.Option<S>, E>
) =>
  Effect.gen(function*() {
    const found = yield* read(yield* SessionStore.SessionStore)
    if (Option.isNone(found)) return yield* Effect.fail(new WorkflowError.SessionNotFound({ sessionId }))
    yield* SessionStore.checkOwner(sessionId, found.value.userId, options?.userId ?? self.userId)
    return found.value
  })

/** The session with its (parsed, not yet decoded) state, for its owner. */
const loadSession = (self: Any, sessionId: string, options: SessionOptions | undefined) =>
  owned(self, sessionId, options, (store) => store.load(sessionId))

/** The session without its state (so a corrupt state does not get in the way), for its owner. */
const sessionInfo = (self: Any, sessionId: string, options: SessionOptions | undefined) =>
  owned(self, sessionId, options, (store) => store.info(sessionId))

/** @internal */
export const getSessionState = Effect.fn(
  "Workflow.getSessionState"
)(
  function*<W extends Any>(self: W, sessionId?: string | undefined, options?: StateOptions) {
    const id = yield* resolveSessionId(self, sessionId, "getSessionState")
    if (options?.version === undefined) {
      const stored = yield* loadSession(self, id, options)
      return (yield* internal.decodeState(self, id, stored.state)) as State<W>
    }
    return (yield* stateAt(self, id, options.version, options)).state as State<W>
  }
)

/** The decoded state of a kept version of a session, for its owner. */
const stateAt = (self: Any, sessionId: string, version: number, options: SessionOptions | undefined) =>
  Effect.gen(function*() {
    const info = yield* sessionInfo(self, sessionId, options)
    const found = yield* (yield* SessionStore.SessionStore).loadVersion(sessionId, version)
    if (Option.isNone(found)) return yield* SessionStore.versionNotFound(sessionId, version, info.version)
    return { info, state: yield* internal.decodeState(self, sessionId, found.value) }
  })

/** @internal */
export const sessionVersions = Effect.fn("Workflow.sessionVersions")(
  function*<W extends Any>(self: W, sessionId?: string | undefined, options?: SessionOptions) {
    const id = yield* resolveSessionId(self, sessionId, "sessionVersions")
    yield* sessionInfo(self, id, options)
    return yield* (yield* SessionStore.SessionStore).versions(id)
  }
)

/** @internal */
export const fork = Effect.fn("Workflow.fork")(
  function*<W extends Any>(self: W, sessionId: string | undefined, options?: ForkOptions) {
    const id = yield* resolveSessionId(self, sessionId, "fork")
    const newSessionId = yield* runner.checkSessionId(options?.newSessionId ?? crypto.randomUUID())
    const userId = options?.userId ?? self.userId
    const store = yield* SessionStore.SessionStore
    const info = yield* sessionInfo(self, id, options)
    const paused = options?.atRun === undefined ? undefined : yield* pausedRunOf(self, id, options.atRun)
    const version = paused?.baseVersion ?? options?.atVersion ?? info.version
    if (paused !== undefined && options?.atVersion !== undefined && options.atVersion !== paused.baseVersion) {
      return yield* new WorkflowError.RunNotFound({
        runId: paused.runId,
        description:
          `the paused run started from version ${paused.baseVersion}, not ${options.atVersion}: fork at its version`
      })
    }
    const forked = yield* store.fork({ sessionId: id, version, newSessionId, userId })
    if (paused === undefined) return { sessionId: forked.sessionId, version: forked.version } satisfies ForkResult
    // the paused run, carried over: the fork's copy waits at the same question, under a new id
    const now = yield* Clock.currentTimeMillis
    const runId = crypto.randomUUID()
    yield* store.startRun({
      ...paused,
      runId,
      sessionId: newSessionId,
      ...(userId === undefined ? { userId: undefined } : { userId }),
      status: "paused",
      owner: "",
      leaseExpiresAt: 0,
      baseVersion: forked.version,
      startedAt: now,
      updatedAt: now
    })
    return { sessionId: forked.sessionId, version: forked.version, runId } satisfies ForkResult
  }
)

/** The paused run `runId` of this workflow on the session, else `RunNotFound`. */
const pausedRunOf = (self: Any, sessionId: string, runId: string) =>
  Effect.gen(function*() {
    const found = yield* (yield* SessionStore.SessionStore).getRun(runId)
    const run = Option.isSome(found) && found.value._tag === "Active" ? found.value.run : undefined
    if (run === undefined || run.sessionId !== sessionId || run.workflowName !== self.name || run.status !== "paused") {
      return yield* new WorkflowError.RunNotFound({
        runId,
        description: `no paused run of workflow '${self.name}' on session '${sessionId}' has this id`
      })
    }
    return run
  })

/** @internal */
export const updateSessionState = Effect.fn("Workflow.updateSessionState")(
  function*<W extends Any>(
    self: W,
    sessionId: string | undefined,
    f: (state: State<W>) => State<W>,
    options?: SessionOptions
  ) {
    const id = yield* resolveSessionId(self, sessionId, "updateSessionState")
    const store = yield* SessionStore.SessionStore
    return yield* store.withSessionLock(id)(Effect.gen(function*() {
      const stored = yield* loadSession(self, id, options)
      const next = f((yield* internal.decodeState(self, id, stored.state)) as State<W>)
      const encoded = yield* internal.encodeState(self, id, next)
      // what a run would refuse to store is refused here too
      yield* checkJson(id, "state", encoded)
      yield* store.commit({
        sessionId: id,
        workflowName: stored.workflowName,
        userId: options?.userId ?? self.userId,
        expectedVersion: stored.version,
        state: encoded,
        history: self.history
      }).pipe(Effect.catchTag("RunLost", (error) => Effect.die(error)))
      return next
    }))
  }
)

/** @internal */
export const setSessionName = Effect.fn("Workflow.setSessionName")(
  function*<W extends Any>(
    self: W,
    sessionId: string | undefined,
    name: string | { readonly autogenerate: true },
    options?: SessionOptions
  ) {
    const id = yield* resolveSessionId(self, sessionId, "setSessionName")
    const store = yield* SessionStore.SessionStore
    const info = yield* sessionInfo(self, id, options)
    const chosen = typeof name === "string" ? name : yield* autogenerateName(self, info)
    yield* store.setName(id, chosen)
    return chosen
  }
)

const autogenerateName = (self: Any, stored: SessionStore.SessionInfo) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const [first] = yield* SessionStore.chatHistory(store, stored.sessionId)
    const request: SessionNamer.Request = {
      workflowName: self.name,
      description: self.description,
      sessionId: stored.sessionId,
      firstInput: first?.input,
      firstOutput: first?.output,
      createdAt: stored.createdAt
    }
    const namer = yield* Effect.serviceOption(SessionNamer.SessionNamer)
    if (Option.isNone(namer) || first === undefined) return SessionNamer.fallbackName(request)
    return yield* namer.value.name(request).pipe(
      Effect.map((name) => name.trim()),
      Effect.filterOrFail((name) => name.length > 0, () => "empty name"),
      Effect.catchAll((error) =>
        Effect.as(
          Effect.logWarning("sessionflow: session namer failed; using the fallback name", error),
          SessionNamer.fallbackName(request)
        )
      )
    )
  })

/** @internal */
export const getSessionName = Effect.fn(
  "Workflow.getSessionName"
)(
  function*<W extends Any>(self: W, sessionId?: string | undefined, options?: SessionOptions) {
    const id = yield* resolveSessionId(self, sessionId, "getSessionName")
    const info = yield* sessionInfo(self, id, options)
    return Option.fromNullable(info.name)
  }
)

/** @internal */
export const getSession = Effect.fn("Workflow.getSession")(
  function*<W extends Any>(self: W, sessionId?: string | undefined, options?: SessionOptions) {
    const id = yield* resolveSessionId(self, sessionId, "getSession")
    const stored = yield* loadSession(self, id, options)
    const state = (yield* internal.decodeState(self, id, stored.state)) as State<W>
    return { ...stored, state }
  }
)

/** @internal */
export const watch = <W extends Any>(
  self: W,
  sessionId?: string | undefined,
  options?: WatchOptions
): Stream.Stream<SessionUpdate<State<W>>, WatchError, SessionStore.SessionStore> =>
  Stream.unwrap(Effect.gen(function*() {
    const id = yield* resolveSessionId(self, sessionId, "watch")
    const store = yield* SessionStore.SessionStore
    const userId = options?.userId ?? self.userId
    const toUpdate = (change: SessionStore.SessionChange) =>
      Effect.gen(function*() {
        // the owner is not part of a change: read it (a session removed since has none to give)
        const info = yield* store.info(id)
        if (Option.isNone(info)) return Option.none<SessionUpdate<State<W>>>()
        yield* SessionStore.checkOwner(id, info.value.userId, userId)
        const state = (yield* internal.decodeState(self, id, change.state)) as State<W>
        return Option.some<SessionUpdate<State<W>>>({
          sessionId: id,
          version: change.version,
          skipped: change.skipped,
          state,
          runId: change.runId,
          updatedAt: change.updatedAt
        })
      })
    return store.watch(id, { pollInterval: options?.pollInterval }).pipe(
      Stream.mapEffect(toUpdate),
      Stream.filterMap((update) => update)
    )
  })).pipe(Stream.withSpan("Workflow.watch"))

/** @internal */
export const listSessions = Effect.fn("Workflow.listSessions")(
  function*<W extends Any>(self: W, options?: ListSessionsOptions) {
    const store = yield* SessionStore.SessionStore
    return yield* store.list({
      workflowName: self.name,
      userId: options?.userId,
      updatedSince: options?.updatedSince,
      search: options?.search,
      limit: options?.limit,
      after: options?.after
    })
  }
)

/** @internal */
export const deleteSession = Effect.fn("Workflow.deleteSession")(
  function*<W extends Any>(self: W, sessionId?: string | undefined, options?: SessionOptions) {
    const id = yield* resolveSessionId(self, sessionId, "deleteSession")
    const store = yield* SessionStore.SessionStore
    yield* store.withSessionLock(id)(Effect.gen(function*() {
      yield* sessionInfo(self, id, options)
      yield* store.remove(id)
    }))
  }
)

/** @internal */
export const getRunHistory = Effect.fn(
  "Workflow.getRunHistory"
)(
  function*<W extends Any>(
    self: W,
    sessionId?: string | undefined,
    options?: SessionOptions & SessionStore.RunsOptions
  ) {
    const id = yield* resolveSessionId(self, sessionId, "getRunHistory")
    const store = yield* SessionStore.SessionStore
    yield* sessionInfo(self, id, options)
    return yield* store.runs(id, { limit: options?.limit, status: options?.status })
  }
)

/** @internal */
export const getChatHistory = Effect.fn(
  "Workflow.getChatHistory"
)(
  function*<W extends Any>(self: W, options?: ChatHistoryOptions) {
    const id = yield* resolveSessionId(self, options?.sessionId, "getChatHistory")
    const store = yield* SessionStore.SessionStore
    yield* sessionInfo(self, id, options)
    return yield* SessionStore.chatHistory(store, id, { lastRuns: options?.lastRuns })
  }
)
