/**
 * The implementation of `WorkflowServer`: the served workflows with their
 * layers, the endpoint handlers, the middlewares, and the layers that mount
 * them on an `HttpLayerRouter`.
 *
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiSwagger from "@effect/platform/HttpApiSwagger"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpMethod from "@effect/platform/HttpMethod"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as OpenApi from "@effect/platform/OpenApi"
import {
  DurableRuns,
  Placement,
  Schedules,
  SessionStore,
  Workflow,
  WorkflowError,
  type WorkflowEvent
} from "@sessionflow/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { createRequire } from "node:module"
import * as Api from "../WorkflowApi.js"
import type * as WorkflowServer from "../WorkflowServer.js"
import * as errors from "./errors.js"
import * as events from "./events.js"
import * as guard from "./guard.js"
import * as health from "./health.js"
import * as json from "./json.js"
import * as page from "./page.js"
import * as paging from "./paging.js"

// -----------------------------------------------------------------------------
// options
// -----------------------------------------------------------------------------

/** @internal */
const MountedTypeId: unique symbol = Symbol.for("@sessionflow/server/Mounted")

/** A workflow with the layer its runs and sessions need. @internal */
export interface Mounted<out R, out E> {
  readonly [MountedTypeId]: { readonly _R: (_: never) => R; readonly _E: (_: never) => E }
  readonly workflow: Workflow.Any
  readonly layer: Layer.Layer<unknown, E, unknown>
  /** its URL-safe id (default: made from its name) */
  readonly id: string | undefined
}

/** @internal */
export type Entry = Workflow.Any | Mounted<any, any>

/** @internal */
export type EntryContext<X> = X extends Mounted<infer R, infer _E> ? R : X extends Workflow.Any ? Workflow.Context<X>
: never

/** @internal */
export type EntryError<X> = X extends Mounted<infer _R, infer E> ? E : never

/** @internal */
export const withLayer = <W extends Workflow.Any, ROut, E, RIn>(
  workflow: W,
  layer: Layer.Layer<ROut, E, RIn>,
  options?: { readonly id?: string | undefined }
): Mounted<Exclude<Workflow.Context<W>, ROut> | RIn, E> => ({
  [MountedTypeId]: { _R: (_) => _, _E: (_) => _ },
  workflow,
  layer: layer as Layer.Layer<unknown, E, unknown>,
  id: options?.id
})

/** A URL-safe id made from a display name: lower-case letters and digits, words joined with `-`. @internal */
const slug = (name: string): string =>
  name.normalize("NFKD").toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 64) || "workflow"

const idPattern = /^[a-z0-9][a-z0-9-]{0,63}$/

const isMounted = (entry: Entry): entry is Mounted<any, any> =>
  typeof entry === "object" && entry !== null && MountedTypeId in entry

/** @internal */
export type Authenticate = WorkflowServer.Authenticate

/** @internal */
export type Options = WorkflowServer.Options<ReadonlyArray<Entry>>

/** @internal */
const defaults = {
  maxBodySize: 1024 * 1024,
  runTimeout: Duration.minutes(10),
  heartbeat: Duration.seconds(15),
  maxStreamBuffer: 1024 * 1024
} as const

/** @internal */
export const bearerTokens = (tokens: Readonly<Record<string, string>>): Authenticate => {
  const users = new Map(Object.entries(tokens))
  return (request) => {
    const header = request.headers["authorization"]
    if (header === undefined || header.trim() === "") return Effect.succeed(undefined)
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
    if (match === null) {
      return Effect.fail(new Api.Unauthorized({ message: "The Authorization header is not a bearer token" }))
    }
    const userId = users.get(match[1]!)
    return userId === undefined
      ? Effect.fail(new Api.Unauthorized({ message: "Unknown bearer token" }))
      : Effect.succeed(userId)
  }
}

// -----------------------------------------------------------------------------
// the served workflows
// -----------------------------------------------------------------------------

interface Served {
  readonly workflow: Workflow.Any
  /** the server's context with the workflow's own layer built over it */
  readonly context: Context.Context<never>
  readonly info: Api.WorkflowInfo
}

const jsonSchema = (schema: Schema.Schema.All | undefined): unknown => {
  if (schema === undefined) return undefined
  try {
    return JSONSchema.make(schema as Schema.Schema<unknown, unknown>)
  } catch {
    return undefined
  }
}

const describe = (workflow: Workflow.Any, id: string): Api.WorkflowInfo => {
  const input = jsonSchema(workflow.input)
  const state = jsonSchema(workflow.state?.schema)
  return {
    id,
    name: workflow.name,
    ...(workflow.description === undefined ? {} : { description: workflow.description }),
    steps: workflow.steps.map((step) => step.name),
    ...(input === undefined ? {} : { input }),
    ...(state === undefined ? {} : { state })
  }
}

/** Builds every mounted layer once, in the server's scope, over the server's context. */
const makeRegistry = (entries: ReadonlyArray<Entry>) =>
  Effect.gen(function*() {
    const base = yield* Effect.context<never>()
    const scope = yield* Effect.scope
    const served = new Map<string, Served>()
    const byId = new Map<string, Served>()
    for (const entry of entries) {
      const workflow = isMounted(entry) ? entry.workflow : entry
      if (served.has(workflow.name)) {
        return yield* Effect.dieMessage(`WorkflowServer: two workflows are named '${workflow.name}'`)
      }
      const context = isMounted(entry)
        ? Context.merge(
          base,
          yield* (Layer.buildWithScope(
            Layer.provide(entry.layer, Layer.succeedContext(base)),
            scope
          ) as unknown as Effect.Effect<
            Context.Context<never>,
            unknown
          >)
        )
        : base
      const id = (isMounted(entry) ? entry.id : undefined) ?? slug(workflow.name)
      if (!idPattern.test(id)) {
        return yield* Effect.dieMessage(
          `WorkflowServer: the id '${id}' of '${workflow.name}' is not URL-safe ([a-z0-9-], at most 64)`
        )
      }
      if (byId.has(id)) {
        return yield* Effect.dieMessage(`WorkflowServer: two workflows have the id '${id}'`)
      }
      const entryServed: Served = { workflow, context, info: describe(workflow, id) }
      served.set(workflow.name, entryServed)
      byId.set(id, entryServed)
    }
    return { served, byId }
  })

type Registry = Effect.Effect.Success<ReturnType<typeof makeRegistry>>

/** Runs `effect` with the workflow's context (its requirements are in that context). */
const within = <A, E>(served: Served, effect: Effect.Effect<A, E, any>): Effect.Effect<A, E> =>
  Effect.provide(effect, served.context) as Effect.Effect<A, E>

/** The same for a stream. */
const withinStream = <A, E>(served: Served, stream: Stream.Stream<A, E, any>): Stream.Stream<A, E> =>
  Stream.provideContext(stream as Stream.Stream<A, E>, served.context)

/** A served workflow by its id or its name. */
const lookup = (registry: Registry, name: string): Effect.Effect<Served, Api.NotFound> => {
  const served = registry.byId.get(name) ?? registry.served.get(name)
  return served === undefined ? Effect.fail(errors.workflowNotFound(name)) : Effect.succeed(served)
}

/** The user whose ownership counts: the caller, else the workflow's default user (as the engine does). */
const effectiveUser = (served: Served, userId: string | undefined) => userId ?? served.workflow.userId

/**
 * The server's ownership rule, stricter than the engine's: a session or run is
 * its creator's only. One created by an anonymous caller is open to anonymous
 * callers only, so a user who later picks the same id gets a 404 instead of
 * writing into (and exposing runs through) a session others can read.
 */
const mayUse = (served: Served, ownerId: string | undefined, userId: string | undefined) =>
  ownerId === effectiveUser(served, userId)

/** The same rule as a store's listing filter: the caller's rows, or (`null`) the ownerless ones. */
const ownerFilter = (served: Served, userId: string | undefined): string | null => effectiveUser(served, userId) ?? null

/**
 * Fails unless the session exists, belongs to this workflow and may be used
 * by the caller; all three read as a missing session.
 */
const visibleSession = (served: Served, sessionId: string, userId: string | undefined) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const info = yield* store.info(sessionId)
    if (
      Option.isNone(info) || info.value.workflowName !== served.workflow.name ||
      !mayUse(served, info.value.userId, userId)
    ) {
      return yield* Effect.fail(errors.sessionNotFound(sessionId))
    }
    return info.value
  })

const sessionInfo = (info: SessionStore.SessionInfo): Api.SessionInfo => ({
  sessionId: info.sessionId,
  workflowName: info.workflowName,
  ...(info.userId === undefined ? {} : { userId: info.userId }),
  ...(info.name === undefined ? {} : { name: info.name }),
  version: info.version,
  createdAt: info.createdAt,
  updatedAt: info.updatedAt
})

/** The state Schema of a workflow (an untyped state is any JSON object). */
const stateSchema = (workflow: Workflow.Any): Schema.Schema<unknown, unknown> =>
  (workflow.state?.schema ?? Api.JsonObject) as Schema.Schema<unknown, unknown>

const encodeState = (served: Served, sessionId: string, state: unknown) =>
  Schema.encodeUnknown(stateSchema(served.workflow))(state).pipe(
    Effect.mapError((error) =>
      new Api.InternalError({
        message: `The state of session '${sessionId}' cannot be encoded: ${errors.parseMessage(error)}`
      })
    ),
    Effect.map((encoded) => encoded as Record<string, unknown>)
  )

const badInput = (what: "input" | "state", workflow: string) => (error: ParseResult.ParseError) =>
  new Api.BadRequest({
    reason: what,
    message: `The ${what} does not fit the ${what} schema of workflow '${workflow}': ${errors.parseMessage(error)}`
  })

// -----------------------------------------------------------------------------
// handlers
// -----------------------------------------------------------------------------

type Api = ReturnType<typeof Api.WorkflowApi.prefix>

const workflowsGroup = (api: Api, registry: Registry) =>
  HttpApiBuilder.group(api, "workflows", (handlers) =>
    handlers
      .handle("list", () => Effect.succeed(Array.from(registry.byId.values(), (served) => served.info)))
      .handle("get", ({ path }) => Effect.map(lookup(registry, path.name), (served) => served.info))
      .handle(
        "graph",
        ({ path }) => Effect.map(lookup(registry, path.name), (served) => Workflow.describeSteps(served.workflow))
      )
      .handle(
        "schedules",
        ({ path }) => onWorkflow(registry, path.name, (served) => Schedules.list(served.workflow.name))
      ))

/** A workflow endpoint: the workflow, the caller (as authenticated), `f` in the workflow's context, errors mapped. */
const onWorkflow = <A, E>(
  registry: Registry,
  name: string,
  f: (served: Served, userId: string | undefined) => Effect.Effect<A, E, any>,
  carriedState = false
): Effect.Effect<A, errors.CommonError, Api.CurrentUser> =>
  Effect.gen(function*() {
    const { userId } = yield* Api.CurrentUser
    const served = yield* lookup(registry, name)
    return yield* within(served, f(served, userId))
  }).pipe(Effect.mapError(errors.sessionError(carriedState)), errors.catchDefects)

/** A session endpoint: the same, with the session checked and the effective user given to `f`. */
const onSession = <A, E>(
  registry: Registry,
  path: { readonly name: string; readonly sessionId: string },
  f: (served: Served, userId: string | undefined) => Effect.Effect<A, E, any>,
  carriedState = false
): Effect.Effect<A, errors.CommonError, Api.CurrentUser> =>
  onWorkflow(
    registry,
    path.name,
    (served, userId) =>
      Effect.zipRight(visibleSession(served, path.sessionId, userId), f(served, effectiveUser(served, userId))),
    carriedState
  )

/** What every listing of a page is given: the workflow, the caller's rows only, the page's size. */
const listed = (served: Served, userId: string | undefined, limit: number | undefined) => ({
  workflowName: served.workflow.name,
  userId: ownerFilter(served, userId),
  limit: limit ?? paging.defaultLimit
})

const sessionsGroup = (api: Api, registry: Registry, settings: Settings) =>
  HttpApiBuilder.group(api, "sessions", (handlers) =>
    handlers
      .handle("list", ({ path, urlParams }) =>
        onWorkflow(registry, path.name, (served, userId) =>
          Effect.gen(function*() {
            const store = yield* SessionStore.SessionStore
            const start = yield* paging.decode(urlParams.cursor)
            // the caller's sessions, one page (the store reads only the page, the search in its query)
            const listing = yield* store.list({
              ...listed(served, userId, urlParams.limit),
              updatedSince: urlParams.updatedSince,
              search: urlParams.q,
              after: start && { updatedAt: start[0], sessionId: start[1] }
            })
            return {
              sessions: listing.sessions.map(sessionInfo),
              // the rows the store cannot read, on the page they fall in
              broken: listing.broken.map((b) => ({ sessionId: b.sessionId, error: b.error.message })),
              ...(listing.next === undefined
                ? {}
                : { next: SessionStore.encodeCursor([listing.next.updatedAt, listing.next.sessionId]) })
            }
          })))
      .handle("get", ({ path }) =>
        onSession(registry, path, (served, userId) =>
          Effect.gen(function*() {
            const session = yield* Workflow.getSession(served.workflow, path.sessionId, { userId })
            const state = yield* encodeState(served, path.sessionId, session.state)
            return { ...sessionInfo(session), state }
          })))
      .handle("getState", ({ path }) =>
        onSession(registry, path, (served, userId) =>
          Effect.gen(function*() {
            const state = yield* Workflow.getSessionState(served.workflow, path.sessionId, { userId })
            return { state: yield* encodeState(served, path.sessionId, state) }
          })))
      .handle("setState", ({ path, payload }) =>
        onSession(registry, path, (served, userId) =>
          Effect.gen(function*() {
            const decoded = yield* Schema.decodeUnknown(stateSchema(served.workflow))(payload.state).pipe(
              Effect.mapError(badInput("state", served.workflow.name))
            )
            const state = yield* Workflow.updateSessionState(served.workflow, path.sessionId, () =>
              decoded, { userId })
            return { state: yield* encodeState(served, path.sessionId, state) }
          }), true))
      .handle("rename", ({ path, payload }) =>
        onSession(registry, path, (served, userId) =>
          Effect.map(
            Workflow.setSessionName(
              served.workflow,
              path.sessionId,
              "name" in payload ? payload.name : { autogenerate: true },
              { userId }
            ),
            (name) => ({ name })
          )))
      .handle("delete", ({ path }) =>
        onSession(registry, path, (served, userId) =>
          Workflow.deleteSession(served.workflow, path.sessionId, { userId })))
      .handle("runs", ({ path, urlParams }) =>
        onSession(registry, path, (served, userId) =>
          Workflow.getRunHistory(served.workflow, path.sessionId, {
            userId,
            limit: urlParams.limit,
            status: urlParams.status
          })))
      .handle("watch", ({ path }) =>
        onSession(registry, path, (served, userId) =>
          Effect.succeed(events.eventStreamResponse(withinStream(
            served,
            events.watchResponse(
              Workflow.watch(served.workflow, path.sessionId, { userId }).pipe(
                Stream.mapEffect((update) =>
                  Effect.map(encodeState(served, update.sessionId, update.state), (state): Api.SessionUpdate => ({
                    sessionId: update.sessionId,
                    version: update.version,
                    state,
                    ...(update.runId === undefined ? {} : { runId: update.runId }),
                    updatedAt: update.updatedAt
                  }))
                )
              ),
              {
                heartbeat: settings.heartbeat,
                message: (error) =>
                  errors.publicRunMessage(error, undefined)
              }
            )
          )))))
      .handle("versions", ({ path }) =>
        onSession(registry, path, (served, userId) =>
          Workflow.sessionVersions(served.workflow, path.sessionId, { userId })))
      .handle("version", ({ path }) =>
        onSession(registry, path, (served, userId) =>
          Effect.gen(function*() {
            const state = yield* Workflow.getSessionState(served.workflow, path.sessionId, {
              userId,
              version: path.version
            })
            return { version: path.version, state: yield* encodeState(served, path.sessionId, state) }
          })))
      .handle("fork", ({ path, payload }) =>
        onSession(registry, path, (served, userId) =>
          Effect.map(
            Workflow.fork(served.workflow, path.sessionId, {
              userId,
              atVersion: payload.atVersion,
              newSessionId: payload.newSessionId,
              atRun: payload.atRun
            }),
            (forked): Api.ForkResult => ({
              sessionId: forked.sessionId,
              version: forked.version,
              ...(forked.runId === undefined ? {} : { runId: forked.runId })
            })
          )))
      .handle("chat", ({ path, urlParams }) =>
        onSession(registry, path, (served, userId) =>
          Workflow.getChatHistory(served.workflow, {
            sessionId: path.sessionId,
            userId,
            lastRuns: urlParams.lastRuns
          }))))

const wantsEvents = (accept: string | undefined) => accept !== undefined && /\btext\/event-stream\b/i.test(accept)

/**
 * What can be refused before a run starts, so that even a streamed run gets
 * a status code for it: an input that does not fit the workflow's input
 * Schema (400), a session of another user (404), a session of another
 * workflow or with a paused run (409), and a run id taken by a run the caller
 * may not see (404) or one that runs or waits (409). Gives the session id the
 * run is on, if any, with the session as read for these checks, for the run
 * to start from (`SessionStore.readSession`).
 */
const precheck = (served: Served, payload: Api.RunRequest, userId: string | undefined, streamed: boolean) =>
  Effect.gen(function*() {
    if (served.workflow.input !== undefined) {
      yield* Schema.decodeUnknown(served.workflow.input as Schema.Schema<unknown, unknown>)(payload.input).pipe(
        Effect.mapError(badInput("input", served.workflow.name))
      )
    }
    const store = yield* SessionStore.SessionStore
    let sessionId = payload.sessionId ?? served.workflow.sessionId
    if (payload.runId !== undefined) {
      const known = yield* store.getRun(payload.runId)
      if (Option.isSome(known)) {
        const run = known.value._tag === "Active" ? known.value.run : known.value.record
        // a run id of another workflow, user or session reads as unknown (the engine would name them)
        if (
          run.workflowName !== served.workflow.name || !mayUse(served, run.userId, userId) ||
          (sessionId !== undefined && known.value._tag === "Recorded" && known.value.record.status === "completed" &&
            run.sessionId !== sessionId)
        ) {
          return yield* Effect.fail(errors.runNotFound(payload.runId))
        }
        // a retry that names the run only is a retry on the run's session
        sessionId = sessionId ?? run.sessionId
        if (streamed && known.value._tag === "Active") {
          const active = known.value.run
          if (active.status === "paused") {
            return yield* Effect.fail(
              new Api.Conflict({
                reason: "run-paused",
                sessionId: active.sessionId,
                runId: active.runId,
                message: `Run '${active.runId}' is waiting for a response: continue or cancel it`
              })
            )
          }
          // an abandoned run (its lease expired, or its process is gone) is resumed by the run
          if (!SessionStore.isAbandoned(active, yield* Clock.currentTimeMillis)) {
            return yield* Effect.fail(
              new WorkflowError.RunInProgress({
                runId: active.runId,
                sessionId: active.sessionId,
                owner: active.owner,
                leaseExpiresAt: active.leaseExpiresAt
              })
            )
          }
        }
      }
    }
    if (sessionId === undefined) return undefined
    // one read: the session, or a new session's first runs; the run is given it (it does not read it again)
    const read = yield* SessionStore.readSession(store, sessionId, { state: false })
    const found = read.found
    if (found._tag === "New") {
      // a new session whose first run is still unfinished (running, or paused for a person) is that run's
      // user's: to anyone else it does not exist, and no conflict names the run
      if (found.runs.some((run) => run.workflowName !== served.workflow.name || !mayUse(served, run.userId, userId))) {
        return yield* Effect.fail(errors.sessionNotFound(sessionId))
      }
    } else {
      if (!mayUse(served, found.session.userId, userId)) return yield* Effect.fail(errors.sessionNotFound(sessionId))
      if (found.session.workflowName !== served.workflow.name) {
        return yield* Effect.fail(
          new Api.Conflict({
            reason: "other-workflow",
            sessionId,
            message: `Session '${sessionId}' belongs to workflow '${found.session.workflowName}'`
          })
        )
      }
    }
    if (streamed && (payload.onBusy ?? "reject") === "reject") {
      // the engine refuses it too, but a stream would have started by then
      const paused = found._tag === "Stored"
        ? found.session.pausedRunId
        : found.runs.find((run) => run.status === "paused" && run.runId !== payload.runId)?.runId
      if (paused !== undefined && paused !== payload.runId) {
        return yield* Effect.fail(new WorkflowError.SessionPaused({ sessionId, runId: paused }))
      }
    }
    return { sessionId, ahead: read.ahead }
  })

/**
 * What `find` finds of `runId` in the store, a run of this workflow the
 * caller may see; else 404 (a run of another workflow, or of another user,
 * does not exist).
 */
const visibleIn = <P extends SessionStore.RunPlace>(
  served: Served,
  runId: string,
  userId: string | undefined,
  find: (store: SessionStore.Service) => Effect.Effect<Option.Option<P>, WorkflowError.SessionStoreError>
) =>
  Effect.gen(function*() {
    const known = yield* find(yield* SessionStore.SessionStore)
    const run = Option.map(known, runOf)
    if (
      Option.isNone(known) || Option.isNone(run) || run.value.workflowName !== served.workflow.name ||
      !mayUse(served, run.value.userId, userId)
    ) {
      return yield* Effect.fail(errors.runNotFound(runId))
    }
    return known.value
  })

/** `runId`, a run (unfinished or ended) of this workflow the caller may see; else 404. */
const visibleRunOf = (served: Served, runId: string, userId: string | undefined) =>
  visibleIn(served, runId, userId, (store) => store.getRun(runId))

/**
 * Fails unless `runId` is an unfinished run of this workflow the caller may
 * see: 404 when it is not one the caller may see (the same for all: another
 * user's run stays invisible), `RunEnded` (409 `run-ended`) when it has ended.
 */
const visibleRun = (served: Served, runId: string, userId: string | undefined) =>
  Effect.flatMap(
    visibleRunOf(served, runId, userId),
    (known) => known._tag === "Recorded" ? Effect.fail(SessionStore.runEnded(known.record)) : Effect.succeed(known.run)
  )

/** An unfinished run's state and, when it has them, its wake time, signal and timeout. */
const unfinished = (run: SessionStore.ActiveRun) => {
  const pause = run.pause
  return {
    state: SessionStore.runState(run),
    ...(pause?.wakeAt === undefined ? {} : { wakeAt: pause.wakeAt }),
    ...(pause?.signal === undefined ? {} : { signal: pause.signal }),
    ...(pause?.timeoutAt === undefined ? {} : { timeoutAt: pause.timeoutAt })
  }
}

const pausedRun = (run: SessionStore.ActiveRun): Api.PausedRun => ({
  runId: run.runId,
  sessionId: run.sessionId,
  workflowName: run.workflowName,
  ...(run.userId === undefined ? {} : { userId: run.userId }),
  input: run.input,
  pause: run.pause?.key ?? "",
  path: run.pause?.path ?? [],
  payload: run.pause?.payload,
  startedAt: run.startedAt,
  pausedAt: run.pause?.pausedAt ?? run.updatedAt,
  ...unfinished(run)
})

/**
 * The session a listing of unfinished runs is asked for: 404 when it is
 * another workflow's or another user's. A new session has no row yet (its
 * first run paused or queued): only an existing one is checked.
 */
const listedSession = (served: Served, sessionId: string | undefined, userId: string | undefined) =>
  Effect.gen(function*() {
    if (sessionId === undefined) return
    const info = yield* (yield* SessionStore.SessionStore).info(sessionId)
    if (
      Option.isSome(info) &&
      (info.value.workflowName !== served.workflow.name || !mayUse(served, info.value.userId, userId))
    ) {
      return yield* Effect.fail(errors.sessionNotFound(sessionId))
    }
  })

const queuedRun = (run: SessionStore.QueuedRun): Api.QueuedRun => ({
  runId: run.runId,
  sessionId: run.sessionId,
  workflowName: run.workflowName,
  ...(run.userId === undefined ? {} : { userId: run.userId }),
  input: run.input,
  status: run.status,
  ticket: run.ticket,
  enqueuedAt: run.enqueuedAt
})

/** The run a lookup found: unfinished, recorded or queued. */
const runOf = (place: SessionStore.RunPlace) =>
  place._tag === "Active" || place._tag === "Queued" ? place.run : place.record

/** A run as a resource, from what the store knows of it. */
const runInfo = (known: SessionStore.RunPlace): Api.RunInfo => {
  const run = runOf(known)
  const ids = {
    runId: run.runId,
    sessionId: run.sessionId,
    workflowName: run.workflowName,
    ...(run.userId === undefined ? {} : { userId: run.userId }),
    input: run.input
  }
  if (known._tag === "Queued") {
    return { ...ids, status: "queued", queuedAt: known.run.enqueuedAt, position: known.position }
  }
  const started = known._tag === "Active" ? known.run : known.record
  const common = { ...ids, status: started.status, startedAt: started.startedAt }
  if (known._tag === "Active") {
    const { journal, pause } = known.run
    const usage = {
      ...common,
      ...unfinished(known.run),
      ...(journal?.usage === undefined ? {} : { usage: journal.usage })
    }
    return pause === undefined
      ? usage
      : { ...usage, pause: { path: pause.path, payload: pause.payload, pausedAt: pause.pausedAt } }
  }
  const record = known.record
  return {
    ...common,
    ...(record.content === undefined ? {} : { content: record.content }),
    ...(record.error === undefined ? {} : { error: record.error }),
    ...(record.usage === undefined ? {} : { usage: record.usage }),
    completedAt: record.completedAt
  }
}

const isRunPaused = (error: unknown): error is WorkflowError.RunPaused =>
  WorkflowError.isWorkflowError(error) && error._tag === "RunPaused"

/**
 * A run (started or carried on) answered as JSON: its `RunOutput`, or 202 with
 * the question when it paused; interrupted after the run timeout.
 */
const runJson = <K extends Api.SignalKept = never>(
  served: Served,
  settings: Settings,
  run: Effect.Effect<Workflow.RunOutput<unknown, unknown> | K, unknown, any>,
  carriedState: boolean
) =>
  Effect.gen(function*() {
    const timeoutMillis = Duration.toMillis(settings.runTimeout)
    const output = yield* within(
      served,
      run.pipe(
        Effect.timeoutFail({
          duration: settings.runTimeout,
          onTimeout: () =>
            new Api.RunTimeout({
              timeoutMillis,
              message: `The run took longer than ${timeoutMillis} ms: it was cancelled and committed nothing`
            })
        }),
        Effect.map((output) => ({ _tag: "Completed" as const, output })),
        Effect.catchIf(isRunPaused, (paused) => Effect.succeed({ _tag: "Paused" as const, paused }))
      )
    ).pipe(
      // here, in the request's fiber (the timeout runs the run in another one)
      errors.withRetryAfter,
      Effect.mapError(errors.runError(carriedState))
    )
    if (output._tag === "Paused") {
      const { key, path, payload, runId, sessionId } = output.paused
      return { status: "paused" as const, runId, sessionId, pause: key, path, payload }
    }
    // a signal kept for the run's wait: nothing ran
    if (output.output.status === "kept") return output.output as K
    const { content, runId, sessionId, state, stepOutputs, usage, userId, workflowName } = output.output
    return {
      runId,
      sessionId,
      ...(userId === undefined ? {} : { userId }),
      workflowName,
      status: "completed" as const,
      content,
      stepOutputs,
      state: yield* encodeState(served, sessionId, state),
      ...(usage === undefined ? {} : { usage })
    }
  })

/** Whether a request's `Prefer` header asks for an asynchronous answer (RFC 7240 `respond-async`). */
const prefersAsync = (prefer: string | undefined) =>
  prefer !== undefined &&
  prefer.split(",").some((preference) => preference.split(";")[0]!.trim().toLowerCase() === "respond-async")

/**
 * A run started in the background, in the server's scope (`Workflow.start`):
 * 202 with its ids once it is registered, `Location` its status. Its events
 * are stored unless the server stores none. A run refused before it is
 * registered answers as a run would (a run id that waits for a response: 202
 * with the question).
 */
const startInBackground = (
  served: Served,
  settings: Settings,
  payload: Api.RunRequest,
  options: Workflow.RunOptions<unknown>
) =>
  Effect.gen(function*() {
    const started = yield* within(
      served,
      Workflow.start(served.workflow, payload.input, {
        ...options,
        runId: options.runId ?? crypto.randomUUID(),
        events: settings.events === "none" ? "none" : "stored"
      }).pipe(
        Effect.provideService(Scope.Scope, settings.scope),
        Effect.map((run) => ({ _tag: "Started" as const, run })),
        Effect.catchIf(isRunPaused, (paused) => Effect.succeed({ _tag: "Paused" as const, paused }))
      )
    ).pipe(errors.withRetryAfter, Effect.mapError(errors.runError(payload.sessionState !== undefined)))
    if (started._tag === "Paused") {
      const { key, path, payload: question, runId, sessionId } = started.paused
      return HttpServerResponse.unsafeJson(
        { status: "paused", runId, sessionId, pause: key, path, payload: question } satisfies Api.PausedRunOutput,
        { status: 202 }
      )
    }
    const { runId, sessionId } = started.run
    return HttpServerResponse.unsafeJson({ status: "started", runId, sessionId } satisfies Api.StartedRun, {
      status: 202,
      headers: {
        location: `${settings.prefix}/workflows/${served.info.id}/runs/${encodeURIComponent(runId)}`,
        "preference-applied": "respond-async"
      }
    })
  })

/** A run's events as a server-sent event response. */
const runEvents = (
  served: Served,
  settings: Settings,
  stream: Stream.Stream<WorkflowEvent.WorkflowEvent, unknown, any>,
  sessionId: string | undefined,
  cancelOnDisconnect: boolean
) =>
  events.eventStreamResponse(withinStream(
    served,
    events.response(stream, {
      timeout: settings.runTimeout,
      heartbeat: settings.heartbeat,
      sessionId,
      maxBuffered: settings.maxStreamBuffer,
      scope: settings.scope,
      cancelOnDisconnect
    })
  ))

/** Whether a run's events are stored: a streamed one unless `events: "none"`, a JSON one with `events: "all"`. */
const storedEvents = (settings: Settings, streamed: boolean): "stored" | "none" =>
  settings.events === "all" || (streamed && settings.events === "streamed") ? "stored" : "none"

/**
 * `?cancelOnDisconnect=true` on a streamed run: a client that goes away
 * interrupts the run (else it goes on). Read from the request's URL, beside
 * the endpoint's declared parameters.
 */
const cancelOnDisconnect = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  const query = request.url.indexOf("?")
  return query >= 0 && new URLSearchParams(request.url.slice(query + 1)).get("cancelOnDisconnect") === "true"
})

/**
 * The `seq` a client of a run's event log has seen last: `Last-Event-ID`
 * (the `id:` of an event: decimal digits, as the server sent it), else
 * `?after=`, else none (-1).
 */
const lastSeen = (header: string | undefined, after: number | undefined): Effect.Effect<number, Api.BadRequest> => {
  if (header === undefined || header.trim() === "") return Effect.succeed(after ?? -1)
  const text = header.trim()
  const seq = /^[0-9]{1,16}$/.test(text) ? Number(text) : Number.NaN
  return Number.isSafeInteger(seq)
    ? Effect.succeed(seq)
    : Effect.fail(new Api.BadRequest({ reason: "last-event-id", message: "Last-Event-ID is not the seq of an event" }))
}

const runsGroup = (api: Api, registry: Registry, settings: Settings) =>
  HttpApiBuilder.group(api, "runs", (handlers) =>
    handlers
      .handle("start", ({ headers, path, payload }) =>
        Effect.gen(function*() {
          const { userId } = yield* Api.CurrentUser
          const served = yield* lookup(registry, path.name)
          const streamed = wantsEvents(headers.accept) && !prefersAsync(headers.prefer)
          const checked = yield* within(served, precheck(served, payload, userId, streamed)).pipe(
            errors.withRetryAfter,
            Effect.mapError(errors.sessionError(false))
          )
          const sessionId = checked?.sessionId
          const options: Workflow.RunOptions<unknown> = {
            sessionId,
            userId,
            sessionState: payload.sessionState,
            overwriteDbSessionState: payload.overwriteDbSessionState,
            runId: payload.runId,
            onBusy: payload.onBusy,
            events: storedEvents(settings, streamed)
          }
          if (prefersAsync(headers.prefer)) return yield* startInBackground(served, settings, payload, options)
          return streamed
            ? runEvents(
              served,
              settings,
              Workflow.stream(served.workflow, payload.input, options),
              sessionId,
              yield* cancelOnDisconnect
            )
            : yield* runJson<never>(
              served,
              settings,
              // the run starts from the session as the checks read it, unless it waits first (its
              // queue, or the runs it interrupts) and the session may change meanwhile
              checked === undefined || (payload.onBusy ?? "reject") !== "reject"
                ? Workflow.run(served.workflow, payload.input, options)
                : checked.ahead(Workflow.run(served.workflow, payload.input, options)),
              payload.sessionState !== undefined
            )
        }).pipe(errors.catchDefects))
      .handle("status", ({ path }) =>
        onWorkflow(registry, path.name, (served, userId) =>
          Effect.map(
            visibleIn(served, path.runId, userId, (store) => SessionStore.findRun(store, path.runId)),
            runInfo
          )))
      .handle("get", ({ path }) =>
        Effect.gen(function*() {
          const { userId } = yield* Api.CurrentUser
          const store = yield* SessionStore.SessionStore
          const known = yield* SessionStore.findRun(store, path.runId)
          const run = Option.map(known, runOf)
          // a run of a workflow not served here, or of another user, does not exist
          const served = Option.flatMap(run, (r) => Option.fromNullable(registry.served.get(r.workflowName)))
          if (
            Option.isNone(known) || Option.isNone(run) || Option.isNone(served) ||
            !mayUse(served.value, run.value.userId, userId)
          ) {
            return yield* Effect.fail(errors.runNotFound(path.runId))
          }
          return runInfo(known.value)
        }).pipe(Effect.mapError(errors.sessionError(false)), errors.catchDefects))
      .handle("list", ({ path, urlParams }) =>
        onWorkflow(registry, path.name, (served, userId) =>
          Effect.gen(function*() {
            const store = yield* SessionStore.SessionStore
            const after = yield* paging.decode(urlParams.cursor)
            // the caller's runs only, a page at a time (the store reads only the page)
            const listing = yield* store.listRuns({
              ...listed(served, userId, urlParams.limit),
              sessionId: urlParams.sessionId,
              status: urlParams.status,
              after: after && { startedAt: after[0], runId: after[1] }
            })
            return {
              runs: listing.runs.map(runInfo),
              ...(listing.next === undefined
                ? {}
                : { next: SessionStore.encodeCursor([listing.next.startedAt, listing.next.runId]) })
            }
          })))
      .handle("paused", ({ path, urlParams }) =>
        onWorkflow(registry, path.name, (served, userId) =>
          Effect.gen(function*() {
            const sessionId = urlParams.sessionId
            yield* listedSession(served, sessionId, userId)
            const runs = yield* Workflow.pausedRuns(served.workflow, { sessionId })
            return runs.filter((run) =>
              mayUse(served, run.userId, userId)
            ).map(pausedRun)
          })))
      .handle("queued", ({ path, urlParams }) =>
        onWorkflow(registry, path.name, (served, userId) =>
          Effect.gen(function*() {
            const sessionId = urlParams.sessionId
            yield* listedSession(served, sessionId, userId)
            const runs = yield* Workflow.queuedRuns(served.workflow, { sessionId })
            return runs.filter((run) =>
              mayUse(served, run.userId, userId)
            ).map(queuedRun)
          })))
      .handle("continue", ({ headers, path, payload }) =>
        Effect.gen(function*() {
          const { userId } = yield* Api.CurrentUser
          const served = yield* lookup(registry, path.name)
          const run = yield* within(served, visibleRun(served, path.runId, userId)).pipe(
            Effect.mapError(errors.sessionError(false))
          )
          // a run that a process of this host that died was continuing is carried on by the continue
          if (!SessionStore.awaitsAnswer(run)) {
            return yield* Effect.fail(
              new Api.Conflict({
                reason: "run-in-progress",
                sessionId: run.sessionId,
                runId: run.runId,
                message: `Run '${run.runId}' is running, not waiting for a response`
              })
            )
          }
          const streamed = wantsEvents(headers.accept)
          const options: Workflow.ContinueOptions = {
            userId,
            events: storedEvents(settings, streamed),
            ...(payload.pause === undefined ? {} : { pause: payload.pause })
          }
          return streamed
            ? runEvents(
              served,
              settings,
              Workflow.continueStream(served.workflow, path.runId, payload.response, options),
              run.sessionId,
              yield* cancelOnDisconnect
            )
            : yield* runJson<never>(
              served,
              settings,
              Workflow.continue(served.workflow, path.runId, payload.response, options),
              false
            )
        }).pipe(errors.catchDefects))
      .handle("signal", ({ path, payload }) =>
        Effect.gen(function*() {
          const { userId } = yield* Api.CurrentUser
          const served = yield* lookup(registry, path.name)
          // another user's run, or one of another workflow, does not exist
          yield* within(served, visibleRun(served, path.runId, userId)).pipe(
            Effect.mapError(errors.sessionError(false))
          )
          return yield* runJson<Api.SignalKept>(
            served,
            settings,
            Effect.map(
              Workflow.signal(served.workflow, path.runId, path.signal, payload.value, { userId }),
              (result): Workflow.RunOutput<unknown, unknown> | Api.SignalKept =>
                result._tag === "Delivered"
                  ? result.output
                  : { status: "kept", runId: result.runId, signal: result.signal, seq: result.seq }
            ),
            false
          )
        }).pipe(errors.catchDefects))
      .handle("events", ({ headers, path, urlParams }) =>
        Effect.gen(function*() {
          const { userId } = yield* Api.CurrentUser
          const served = yield* lookup(registry, path.name)
          const after = yield* lastSeen(headers["last-event-id"], urlParams.after)
          const known = yield* within(served, visibleRunOf(served, path.runId, userId)).pipe(
            Effect.mapError(errors.sessionError(false))
          )
          const run = known._tag === "Active" ? known.run : known.record
          return events.eventStreamResponse(withinStream(
            served,
            events.logResponse(
              Workflow.events(served.workflow, path.runId, { after, userId: run.userId }),
              {
                heartbeat: settings.heartbeat,
                message: (error) =>
                  errors.publicRunMessage(error, undefined)
              }
            )
          ))
        }).pipe(errors.catchDefects))
      .handle("cancel", ({ path }) =>
        onWorkflow(registry, path.name, (served, userId) =>
          Effect.gen(function*() {
            yield* visibleRun(served, path.runId, userId)
            yield* Workflow.cancel(served.workflow, path.runId, { userId })
            const ended = yield* (yield* SessionStore.SessionStore).getRun(path.runId)
            if (Option.isNone(ended) || ended.value._tag !== "Recorded") {
              return yield* Effect.dieMessage(`the cancelled run '${path.runId}' has no record`)
            }
            return ended.value.record
          }))))

// -----------------------------------------------------------------------------
// middlewares
// -----------------------------------------------------------------------------

const authenticationLayer = (authenticate: Authenticate, requireAuth: boolean) =>
  Layer.succeed(Api.Authentication, {
    bearer: () =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, authenticate).pipe(
        Effect.filterOrFail(
          (userId) => userId !== undefined || !requireAuth,
          () => new Api.Unauthorized({ message: "Authentication is required: send Authorization: Bearer <token>" })
        ),
        Effect.map((userId) => Api.CurrentUser.of({ userId }))
      )
  })

const tooLarge = (limit: number) =>
  new Api.PayloadTooLarge({ limit, message: `The request body is larger than ${limit} bytes` })

const isOverLimit = (error: unknown) =>
  typeof error === "object" && error !== null && "cause" in error && error.cause instanceof Error &&
  error.cause.message === "maxBytes exceeded"

const requestLimitsLayer = (limit: number) =>
  Layer.succeed(
    Api.RequestLimits,
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (!HttpMethod.hasBody(request.method)) return
      const declared = request.headers["content-length"]
      if (declared !== undefined && Number(declared) > limit) return yield* Effect.fail(tooLarge(limit))
      // read once, within the limit; the endpoint then decodes the same (cached) text
      const text = yield* request.text.pipe(
        Effect.provideService(HttpIncomingMessage.MaxBodySize, Option.some(FileSystem.Size(limit))),
        Effect.mapError((error) =>
          isOverLimit(error)
            ? tooLarge(limit)
            : new Api.BadRequest({ reason: "body", message: "The request body could not be read" })
        )
      )
      // the edge lets only JSON bodies through (415 otherwise)
      if (text.trim() !== "") {
        const value = yield* Effect.try({
          try: () => JSON.parse(text) as unknown,
          catch: (error) =>
            new Api.BadRequest({
              reason: "body",
              message: `The request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}`
            })
        })
        const problem = json.problem(value)
        if (problem !== undefined) return yield* Effect.fail(new Api.BadRequest({ reason: "body", message: problem }))
      }
    })
  )

// -----------------------------------------------------------------------------
// layers
// -----------------------------------------------------------------------------

interface Settings {
  readonly runTimeout: Duration.Duration
  readonly heartbeat: Duration.Duration
  readonly maxStreamBuffer: number
  /** the server's scope, where runs cut off from a slow client go on */
  readonly scope: Scope.Scope
  /** which runs' events are stored */
  readonly events: "streamed" | "all" | "none"
  /** the path the API is mounted under ("" at the root) */
  readonly prefix: string
}

/** The package's version, the `info.version` of `/openapi.json` (from `src/internal` or `dist/internal`). */
const version: string = createRequire(import.meta.url)("../../package.json").version

/** @internal */
/**
 * Resumes the abandoned runs of the served workflows in the background (see
 * `DurableRuns`): one supervisor per context, so the workflows served over the
 * server's store share one, and a mounted workflow (maybe with a store of its
 * own) has its own.
 */
const supervise = (registry: Registry, settings: WorkflowServer.SuperviseOptions, remoteToo: boolean) =>
  Effect.gen(function*() {
    const byContext = new Map<Context.Context<never>, Array<Workflow.Any>>()
    for (const served of registry.served.values()) {
      if (!remoteToo && Context.get(served.context, Placement.Placement)._tag === "Remote") continue
      byContext.set(served.context, [...(byContext.get(served.context) ?? []), served.workflow])
    }
    for (const [context, workflows] of byContext) {
      yield* Effect.forkScoped(
        Effect.provide(DurableRuns.supervise({ ...settings, workflows }), context) as Effect.Effect<never>
      )
    }
  })

export const layer = (options: Options) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const registry = yield* makeRegistry(options.workflows)
    const prefix = options.prefix ?? ""
    const api: Api = (options.prefix === undefined ? Api.WorkflowApi : Api.WorkflowApi.prefix(options.prefix))
      .annotate(OpenApi.Version, version)
    const settings: Settings = {
      runTimeout: Duration.decode(options.runTimeout ?? defaults.runTimeout),
      heartbeat: Duration.decode(options.heartbeat ?? defaults.heartbeat),
      maxStreamBuffer: options.maxStreamBuffer ?? defaults.maxStreamBuffer,
      scope: yield* Effect.scope,
      events: options.events ?? "streamed",
      prefix
    }
    if (options.supervise !== false) {
      yield* supervise(
        registry,
        options.supervise === true ? {} : options.supervise ?? {},
        options.supervise !== undefined
      )
    }
    const authenticate = options.authenticate ?? bearerTokens(options.tokens ?? {})
    const requireAuth = options.requireAuth === true
    const routes = HttpLayerRouter.addHttpApi(api, { openapiPath: `${prefix}/openapi.json` }).pipe(
      Layer.provide(Layer.mergeAll(
        workflowsGroup(api, registry),
        runsGroup(api, registry, settings),
        sessionsGroup(api, registry, settings)
      )),
      Layer.provide(Layer.mergeAll(
        authenticationLayer(authenticate, requireAuth),
        requestLimitsLayer(options.maxBodySize ?? defaults.maxBodySize)
      ))
    )
    return Layer.mergeAll(
      guard.layer({
        prefix,
        allowedOrigins: options.allowedOrigins ?? [],
        requestLogLevel: options.requestLogLevel ?? "Debug"
      }),
      routes,
      options.docs === false ? Layer.empty : HttpApiSwagger.layerHttpLayerRouter({ api, path: `${prefix}/docs` }),
      health.layer(prefix),
      options.page === false ? Layer.empty : page.layer(prefix)
    )
  }))
