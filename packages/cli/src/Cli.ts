/**
 * The `sessionflow` command: looks into the sessions, run histories and
 * states that `@sessionflow/store-sqlite` keeps in a SQLite file, or
 * `@sessionflow/store-pg` in PostgreSQL (`--url`, or the
 * `SESSIONFLOW_DATABASE_URL` environment variable).
 *
 * ```sh
 * sessionflow sessions list   --db app.db
 * sessionflow sessions show   --db app.db <sessionId>
 * sessionflow sessions rename --db app.db <sessionId> <name>
 * sessionflow sessions delete --db app.db <sessionId>
 * sessionflow state           --db app.db <sessionId> --json
 * sessionflow state           --db app.db <sessionId> --at 3
 * sessionflow versions        --db app.db <sessionId>
 * sessionflow fork            --db app.db <sessionId> --at 3 --to <newSessionId>
 * sessionflow runs list       --db app.db
 * sessionflow sessions list   --url postgres://app@db.internal:5432/app
 * sessionflow dev src/workflows.ts   # serve your workflows, reloading on a change (see Dev)
 * sessionflow init my-app            # write a new app (see Init)
 * ```
 *
 * The commands, options and help are declared with `@effect/cli`
 * ({@link command}); {@link CommandLine.run} runs them with one-line errors.
 * `list`, `show`, `state`, `versions` and `runs list` open the file
 * read-only; `rename` and `delete` change that one session, `fork` writes
 * the new one. No inspecting command creates,
 * migrates or alters a table: an unknown `--table`, or a file without
 * sessionflow tables, is an error. (`dev`, which runs your workflows, opens
 * its store as your app does: creating the tables on first use.)
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import { Replay, Schedules, SessionStore, Workflow, WorkflowError, WorkflowEvent } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as CommandLine from "./CommandLine.js"
import * as Dev from "./Dev.js"
import * as Init from "./Init.js"

// -----------------------------------------------------------------------------
// errors
// -----------------------------------------------------------------------------

/**
 * A command-line mistake (unknown option or command, missing argument): exit
 * code 2.
 *
 * @since 0.1.0
 * @category errors
 */
export const UsageError = CommandLine.UsageError

/**
 * @since 0.1.0
 * @category errors
 */
export type UsageError = CommandLine.UsageError

/**
 * A command that could not do its job (unknown session, missing file, …):
 * exit code 1.
 *
 * @since 0.1.0
 * @category errors
 */
export class CommandError extends Data.TaggedError("CommandError")<{ readonly message: string }> {}

// -----------------------------------------------------------------------------
// the database
// -----------------------------------------------------------------------------

/**
 * The environment variable holding the PostgreSQL URL used when neither
 * `--db` nor `--url` is given.
 *
 * @since 0.1.0
 * @category database
 */
export const databaseUrlVariable = "SESSIONFLOW_DATABASE_URL"

/**
 * Where the sessions are: a SQLite file or a PostgreSQL URL.
 *
 * @since 0.1.0
 * @category database
 */
export type Database =
  | { readonly _tag: "Sqlite"; readonly filename: string }
  | { readonly _tag: "Postgres"; readonly url: string }

/**
 * The database a command line names: `--db <file>` or `--url <url>` (not
 * both); with neither, the URL in `SESSIONFLOW_DATABASE_URL` if set, else
 * none.
 *
 * @since 0.1.0
 * @category database
 */
export const chooseDatabase = (
  given: { readonly db?: string | undefined; readonly url?: string | undefined },
  env: Readonly<Record<string, string | undefined>> = process.env
): Effect.Effect<Database | undefined, UsageError> => {
  if (given.db !== undefined && given.url !== undefined) {
    return Effect.fail(new UsageError({ message: "give --db <file> or --url <url>, not both" }))
  }
  const url = given.url ?? (given.db === undefined ? env[databaseUrlVariable] : undefined)
  if (url !== undefined && url !== "") {
    return /^postgres(ql)?:\/\//.test(url)
      ? Effect.succeed({ _tag: "Postgres", url })
      : Effect.fail(new UsageError({ message: `not a PostgreSQL URL (postgres://…): ${describeUrl(url)}` }))
  }
  return Effect.succeed(given.db === undefined ? undefined : { _tag: "Sqlite", filename: given.db })
}

const describeUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    parsed.password = ""
    return parsed.toString()
  } catch {
    return "(a URL that cannot be parsed)"
  }
}

/**
 * Where a database is, for messages: the file, or the URL without its password.
 *
 * @since 0.1.0
 * @category database
 */
export const describeDatabase = (database: Database): string =>
  database._tag === "Sqlite" ? database.filename : describeUrl(database.url)

/**
 * The option naming a database on a command line (`--db <file>` or `--url
 * <url>`, without the password), for hints.
 *
 * @since 0.1.0
 * @category database
 */
export const databaseOption = (database: Database): string =>
  database._tag === "Sqlite" ? `--db ${database.filename}` : `--url ${describeDatabase(database)}`

/**
 * The store on a database: SQLite (`readonly` opens an existing file for
 * inspection) or PostgreSQL (in `schema`). `migrate: false` creates and
 * changes no table.
 *
 * `@sessionflow/store-pg` is an optional peer dependency, imported only for
 * a PostgreSQL database: inspecting SQLite files needs neither it nor `pg`.
 *
 * @since 0.1.0
 * @category database
 */
export const storeLayer = (
  database: Database,
  options: {
    readonly table?: string | undefined
    readonly schema?: string | undefined
    readonly migrate?: boolean | undefined
    readonly readonly?: boolean | undefined
  } = {}
): Layer.Layer<SessionStore.SessionStore, WorkflowError.SessionStoreError> =>
  database._tag === "Sqlite"
    ? SqliteSessionStore.layer({
      filename: database.filename,
      table: options.table,
      readonly: options.readonly,
      migrate: options.migrate
    })
    : Layer.unwrapEffect(
      Effect.tryPromise({
        try: () => import("@sessionflow/store-pg"),
        catch: (cause) =>
          new WorkflowError.SessionStoreError({
            method: "open",
            description: "PostgreSQL needs @sessionflow/store-pg and @effect/sql-pg: " +
              "npm install @sessionflow/store-pg @effect/sql-pg",
            cause
          })
      }).pipe(Effect.map(({ PgSessionStore }) =>
        PgSessionStore.layer({
          url: database.url,
          schema: options.schema,
          table: options.table,
          migrate: options.migrate
        })
          .pipe(Layer.mapError((error) => options.schema === undefined ? suggestSchema(error) : error))
      ))
    )

/** A session table not found on the search_path may be in a schema: say how to look there. */
const suggestSchema = (error: WorkflowError.SessionStoreError): WorkflowError.SessionStoreError =>
  error.description.startsWith("there is no session table")
    ? new WorkflowError.SessionStoreError({
      method: error.method,
      description: `${error.description}; if the tables are in a schema, give it with --schema <name>`,
      ...(error.cause === undefined ? {} : { cause: error.cause })
    })
    : error

// -----------------------------------------------------------------------------
// options
// -----------------------------------------------------------------------------

/** A value that is not an option's name: `--db --json` is `--db` without its value. */
const value = (name: string, pseudoName: string, description: string) =>
  Options.text(name).pipe(
    Options.withPseudoName(pseudoName),
    Options.withDescription(description),
    Options.mapEffect((text) =>
      text === "" || text.startsWith("--")
        ? Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name} needs a value`)))
        : Effect.succeed(text)
    ),
    Options.optional,
    Options.map(Option.getOrUndefined)
  )

/** `--at <version>`: a session's version, a whole number from 1. */
const atOption = (description: string) =>
  Options.integer("at").pipe(
    Options.withPseudoName("version"),
    Options.withDescription(description),
    Options.mapEffect((n) =>
      n >= 1 ? Effect.succeed(n) : Effect.fail(ValidationError.invalidValue(HelpDoc.p("--at is a version: 1 or more")))
    ),
    Options.optional
  )

/**
 * The options naming a database, shared by every command that opens one:
 * `--db <file>`, `--url <url>`, `--schema <name>` and `--table <name>`.
 *
 * @since 0.1.0
 * @category options
 */
export const databaseOptions = {
  db: value("db", "file", "the SQLite file (written by @sessionflow/store-sqlite)"),
  url: value(
    "url",
    "url",
    "a PostgreSQL URL, postgres://user:password@host:5432/database (written by @sessionflow/store-pg); " +
      `without --db or --url, the URL in ${databaseUrlVariable}`
  ),
  schema: value("schema", "name", "PostgreSQL: the schema the tables are in (default: the search_path)"),
  table: value("table", "name", `the session table (default ${SqliteSessionStore.defaultTable})`)
}

/**
 * `--json`: JSON on stdout, for jq and scripts.
 *
 * @since 0.1.0
 * @category options
 */
export const jsonOption = Options.boolean("json").pipe(
  Options.withDescription("print JSON on stdout (for jq and scripts)")
)

/**
 * What the database options give: where to look, and in which table.
 *
 * @since 0.1.0
 * @category options
 */
export interface DatabaseOptions {
  readonly db: string | undefined
  readonly url: string | undefined
  readonly schema: string | undefined
  readonly table: string | undefined
}

/** A command's database, schema and table, and whether it prints JSON. */
interface Target {
  /** the command, for messages (`sessions list`) */
  readonly command: string
  readonly database: Database | undefined
  readonly schema: string | undefined
  readonly table: string | undefined
  readonly json: boolean
}

const target = (command: string, options: DatabaseOptions & { readonly json: boolean }) =>
  Effect.map(
    Effect.mapError(chooseDatabase(options), (error) => new UsageError({ message: error.message, command })),
    (database): Target => ({ command, database, schema: options.schema, table: options.table, json: options.json })
  )

// -----------------------------------------------------------------------------
// the store
// -----------------------------------------------------------------------------

const where = (target: Target) =>
  `${target.database === undefined ? "" : describeDatabase(target.database)}${
    target.schema === undefined ? "" : ` (schema ${target.schema})`
  }${target.table === undefined ? "" : ` (table ${target.table})`}`

/**
 * Runs `self` on the store in `--db` or `--url`: read-only for reading
 * commands (on SQLite), never migrating or creating anything.
 */
const withStore = (target: Target, access: "read" | "write") =>
<A, E>(
  self: Effect.Effect<A, E, SessionStore.SessionStore>
): Effect.Effect<A, E | UsageError | CommandError | WorkflowError.SessionStoreError> =>
  Effect.suspend((): Effect.Effect<A, E | UsageError | CommandError | WorkflowError.SessionStoreError> => {
    const database = target.database
    if (database === undefined) {
      return Effect.fail(
        new UsageError({
          message: `${target.command}: --db <file> or --url <url> is required ` +
            `(the SQLite file or PostgreSQL database to inspect)`,
          command: target.command
        })
      )
    }
    if (database._tag === "Sqlite" && database.filename !== ":memory:" && !fs.existsSync(database.filename)) {
      return Effect.fail(new CommandError({ message: `no database file '${database.filename}'` }))
    }
    return Effect.provide(
      self,
      storeLayer(database, { table: target.table, schema: target.schema, readonly: access === "read", migrate: false })
    )
  })

const notFound = (target: Target, sessionId: string) =>
  new CommandError({
    message: `no session '${sessionId}' in ${where(target)} (see: sessionflow sessions list${
      target.database === undefined ? "" : ` ${databaseOption(target.database)}`
    })`
  })

const infoOrFail = (target: Target, sessionId: string) =>
  Effect.flatMap(SessionStore.SessionStore, (store) => store.info(sessionId)).pipe(
    Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound(target, sessionId)), onSome: Effect.succeed }))
  )

// -----------------------------------------------------------------------------
// formatting
// -----------------------------------------------------------------------------

const say = (text: string = "") => Console.log(text)

const json = (value: unknown) => say(JSON.stringify(value, null, 2))

const date = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 19)

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

const oneLine = WorkflowEvent.formatLine

// -----------------------------------------------------------------------------
// sessions and state
// -----------------------------------------------------------------------------

/** How many sessions `sessions list` reads from the store at a time. */
const sessionPage = 100

/** Where the next page of `sessions list` starts, as it prints it (`--after`): the store's cursor. */
const encodeAfter = (cursor: SessionStore.SessionCursor): string =>
  SessionStore.encodeCursor([cursor.updatedAt, cursor.sessionId])

/** What `sessions list` reads: at most `limit` sessions (all without), after `after`. */
interface SessionsPage {
  readonly limit: number | undefined
  readonly after: SessionStore.SessionCursor | undefined
}

const listSessions = (target: Target, page: SessionsPage) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const sessions: Array<SessionStore.SessionInfo> = []
    let after = page.after
    let read = 0
    // the store's listing a page at a time (each read gives back only its page), up to `limit`
    do {
      const room = page.limit === undefined ? sessionPage : Math.min(sessionPage, page.limit - read)
      const listing = yield* store.list({ after, limit: room })
      after = listing.next
      read += listing.sessions.length + listing.broken.length
      sessions.push(...listing.sessions)
      // a row the store cannot read is reported, and the others are still listed
      for (const b of listing.broken) {
        yield* Console.error(`warning: session ${b.sessionId} cannot be read: ${describeError(b.error)}`)
      }
    } while (after !== undefined && (page.limit === undefined || read < page.limit))
    // where the rest starts, after a --limit that cut the listing short
    const more = after === undefined ? undefined : `more after them: --after ${encodeAfter(after)}`
    if (target.json) {
      yield* json(sessions)
      if (more !== undefined) yield* Console.error(more)
      return
    }
    if (sessions.length === 0 && more === undefined) {
      return yield* say(`No sessions in ${where(target)}${page.after === undefined ? "" : " after that one"}.`)
    }
    yield* say(`${plural(sessions.length, "session")} in ${where(target)}:\n`)
    for (const s of sessions) {
      const runs = yield* store.runs(s.sessionId, {})
      yield* say(`  ${s.sessionId}`)
      yield* say(`     workflow: ${s.workflowName}${s.name === undefined ? "" : `   name: ${s.name}`}`)
      yield* say(
        `     ${plural(runs.length, "run")}, version ${s.version}, updated ${date(s.updatedAt)}${
          s.userId === undefined ? "" : `, user ${s.userId}`
        }`
      )
    }
    if (more !== undefined) yield* say(`\n${more}`)
  }).pipe(withStore(target, "read"))

const showSession = (target: Target, id: string) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const info = yield* infoOrFail(target, id)
    const runs = yield* store.runs(id, {})
    // the history and metadata stay readable when the state is not
    const stored = yield* store.load(id).pipe(
      Effect.map((loaded) => ({ ok: true as const, state: Option.getOrUndefined(loaded)?.state })),
      Effect.catchTag("StateDecodeError", (error) => Effect.succeed({ ok: false as const, error: error.message }))
    )
    if (target.json) {
      yield* json({ ...info, ...(stored.ok ? { state: stored.state } : { stateError: stored.error }), runs })
    } else {
      yield* say(`Session ${info.sessionId}`)
      yield* say(`  workflow: ${info.workflowName}`)
      yield* say(`  name:     ${info.name ?? "(none)"}`)
      if (info.userId !== undefined) yield* say(`  user:     ${info.userId}`)
      yield* say(`  version:  ${info.version}`)
      yield* say(`  created:  ${date(info.createdAt)}   updated: ${date(info.updatedAt)}`)
      yield* say(`\nState:`)
      yield* say(
        stored.ok
          ? JSON.stringify(stored.state, null, 2).split("\n").map((l) => `  ${l}`).join("\n")
          : `  (cannot be read: ${stored.error})`
      )
      yield* say(`\nRuns (${runs.length}):`)
      for (const [i, run] of runs.entries()) {
        const mark = run.status === "completed" ? "✓" : run.status === "error" ? "✗" : "○"
        const took = ((run.completedAt - run.startedAt) / 1000).toFixed(1)
        yield* say(`  ${i + 1}. ${mark} ${run.status.padEnd(9)} ${date(run.startedAt)}  ${took}s  run ${run.runId}`)
        yield* say(`     » ${oneLine(run.input)}`)
        if (run.status === "completed") yield* say(`     ↳ ${oneLine(run.content)}`)
        if (run.error !== undefined) yield* say(`     ✗ ${oneLine(run.error)}`)
      }
    }
    if (!stored.ok) return yield* new CommandError({ message: stored.error })
  }).pipe(withStore(target, "read"))

const renameSession = (target: Target, id: string, words: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const name = words.join(" ").trim()
    if (name.length === 0) {
      return yield* new UsageError({
        message: "sessions rename: give the new name after the session id",
        command: target.command
      })
    }
    return yield* Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      yield* store.setName(id, name).pipe(Effect.catchTag("SessionNotFound", () => Effect.fail(notFound(target, id))))
      yield* target.json ? json({ sessionId: id, name }) : say(`Session ${id} is now named '${name}'.`)
    }).pipe(withStore(target, "write"))
  })

const deleteSession = (target: Target, id: string) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    if (!(yield* store.remove(id))) return yield* notFound(target, id)
    yield* target.json ? json({ sessionId: id, deleted: true }) : say(`Deleted session ${id} and its run history.`)
  }).pipe(withStore(target, "write"))

const printState = (target: Target, sessionId: string, at: Option.Option<number>) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    if (Option.isSome(at)) {
      const info = yield* infoOrFail(target, sessionId)
      const found = yield* store.loadVersion(sessionId, at.value)
      if (Option.isNone(found)) {
        return yield* versionMissing(target, SessionStore.versionNotFound(sessionId, at.value, info.version))
      }
      return yield* say(JSON.stringify(found.value, null, target.json ? undefined : 2))
    }
    const loaded = yield* store.load(sessionId)
    if (Option.isNone(loaded)) {
      return yield* notFound(target, sessionId)
    }
    yield* say(JSON.stringify(loaded.value.state, null, target.json ? undefined : 2))
  }).pipe(withStore(target, "read"))

/** A version a session does not keep, with the command that lists those it keeps. */
const versionMissing = (target: Target, error: WorkflowError.VersionNotFound) =>
  new CommandError({
    message: `${error.message} (see: sessionflow versions${
      target.database === undefined ? "" : ` ${databaseOption(target.database)}`
    } ${error.sessionId})`
  })

const listVersions = (target: Target, sessionId: string) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const info = yield* infoOrFail(target, sessionId)
    const versions = yield* store.versions(sessionId)
    if (target.json) return yield* json(versions)
    if (versions.length === 0) {
      return yield* say(`Session ${sessionId} is at version ${info.version} and keeps no earlier versions.`)
    }
    yield* say(`Session ${sessionId}: ${plural(versions.length, "kept version")} (current: ${info.version})
`)
    for (const v of versions) {
      yield* say(
        `  v${v.version}  ${date(v.committedAt)}  ${v.runId === undefined ? "(no run)" : `run ${v.runId}`}  changed: ${
          v.changed === undefined ? "(whole state)" : v.changed.length === 0 ? "(nothing)" : v.changed.join(", ")
        }`
      )
    }
  }).pipe(withStore(target, "read"))

const forkSession = (target: Target, sessionId: string, at: Option.Option<number>, to: string | undefined) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const info = yield* infoOrFail(target, sessionId)
    const newSessionId = to ?? crypto.randomUUID()
    const forked = yield* store.fork({
      sessionId,
      version: Option.getOrElse(at, () => info.version),
      newSessionId,
      // the fork belongs to whoever the original belongs to
      userId: info.userId
    }).pipe(
      Effect.catchTags({
        SessionNotFound: () => Effect.fail(notFound(target, sessionId)),
        VersionNotFound: (error) => Effect.fail(versionMissing(target, error)),
        SessionExists: (error) =>
          Effect.fail(new CommandError({ message: `${error.message}: give another id with --to` }))
      })
    )
    yield* target.json
      ? json({ sessionId: forked.sessionId, version: forked.version, from: sessionId })
      : say(`Forked session ${sessionId} at version ${forked.version} into ${forked.sessionId}.`)
  }).pipe(withStore(target, "write"))

// -----------------------------------------------------------------------------
// runs
// -----------------------------------------------------------------------------

/**
 * How an unfinished run stands: waiting for a person (`paused`), sleeping
 * (until its `wakeAt`), waiting for a signal, running (its owner holds its
 * lease), abandoned (running, but its lease expired: its process stopped),
 * or queued (in its session's queue, `onBusy: "enqueue"`: not started).
 *
 * @since 0.1.0
 * @category runs
 */
export type RunState = "paused" | "sleeping" | "waiting" | "running" | "abandoned" | "queued"

/**
 * An unfinished run as `runs list` shows it: the store's entry without its
 * journal and checkpoint (the data it continues from); a queued run with
 * when it was queued and its place in its session's queue, not started.
 *
 * @since 0.1.0
 * @category runs
 */
export interface UnfinishedRun {
  readonly runId: string
  readonly sessionId: string
  readonly workflowName: string
  readonly userId?: string | undefined
  readonly state: RunState
  readonly input: unknown
  /** the owner and the end of its lease, for running and abandoned runs */
  readonly owner?: string | undefined
  readonly leaseExpiresAt?: number | undefined
  /** the top-level step it continues from (with a step journal) */
  readonly nextStep?: number | undefined
  /** the question a paused run waits on (for a sleeping or waiting run: the step that suspended it) */
  readonly question?: {
    readonly path: ReadonlyArray<string>
    readonly key: string
    readonly payload: unknown
    readonly pausedAt: number
  } | undefined
  /** epoch milliseconds: when a sleeping (or timing-out) run is due to wake */
  readonly wakeAt?: number | undefined
  /** the signal a waiting run waits for */
  readonly signal?: string | undefined
  /** epoch milliseconds: when a wait for a signal, or a question, times out */
  readonly timeoutAt?: number | undefined
  /** epoch milliseconds: when a queued run was queued */
  readonly queuedAt?: number | undefined
  /** how many runs of its session's queue are ahead of a queued run (0: its turn came, or comes next) */
  readonly position?: number | undefined
  /** epoch milliseconds (absent while queued) */
  readonly startedAt?: number | undefined
  readonly updatedAt?: number | undefined
}

/**
 * The unfinished runs of the store, oldest first, as `runs list` shows them,
 * then the queued ones not started yet, in arrival order.
 *
 * @since 0.1.0
 * @category runs
 */
export const unfinishedRuns: Effect.Effect<
  ReadonlyArray<UnfinishedRun>,
  WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = Effect.gen(function*() {
  const store = yield* SessionStore.SessionStore
  const now = yield* Clock.currentTimeMillis
  const runs = yield* store.activeRuns({})
  const started = new Set(runs.map((run) => run.runId))
  const ahead = new Map<string, number>()
  const queued = (yield* store.queuedRuns({})).flatMap((run): ReadonlyArray<UnfinishedRun> => {
    // the place of each run in its session's queue (the queue in arrival order)
    const position = ahead.get(run.sessionId) ?? 0
    ahead.set(run.sessionId, position + 1)
    return started.has(run.runId) ? [] : [{
      runId: run.runId,
      sessionId: run.sessionId,
      workflowName: run.workflowName,
      ...(run.userId === undefined ? {} : { userId: run.userId }),
      state: "queued",
      input: run.input,
      queuedAt: run.enqueuedAt,
      position
    }]
  })
  return [
    ...runs.map((run): UnfinishedRun => ({
      runId: run.runId,
      sessionId: run.sessionId,
      workflowName: run.workflowName,
      ...(run.userId === undefined ? {} : { userId: run.userId }),
      state: SessionStore.isAbandoned(run, now) ? "abandoned" : SessionStore.runState(run),
      input: run.input,
      ...(run.status === "running" ? { owner: run.owner, leaseExpiresAt: run.leaseExpiresAt } : {}),
      ...(run.journal === undefined ? {} : { nextStep: run.journal.next }),
      ...(run.pause === undefined
        ? {}
        : {
          question: {
            path: run.pause.path,
            key: run.pause.key,
            payload: run.pause.payload,
            pausedAt: run.pause.pausedAt
          }
        }),
      ...(run.pause?.wakeAt === undefined ? {} : { wakeAt: run.pause.wakeAt }),
      ...(run.pause?.signal === undefined ? {} : { signal: run.pause.signal }),
      ...(run.pause?.timeoutAt === undefined ? {} : { timeoutAt: run.pause.timeoutAt }),
      startedAt: run.startedAt,
      updatedAt: run.updatedAt
    })),
    ...queued
  ]
})

const runMark: Record<RunState, string> = {
  paused: "⏸",
  sleeping: "☾",
  waiting: "⧗",
  running: "▶",
  abandoned: "✗",
  queued: "…"
}

/** What a suspended run waits for, after its state: until when it sleeps, its signal, its timeout. */
const waitsFor = (run: UnfinishedRun): string => {
  const timeout = run.timeoutAt === undefined ? [] : [`times out ${date(run.timeoutAt)}`]
  const parts = run.state === "sleeping"
    ? (run.wakeAt === undefined ? [] : [`until ${date(run.wakeAt)}`])
    : run.state === "waiting"
    ? [`for signal ${run.signal ?? "?"}`, ...timeout]
    : run.state === "paused"
    ? timeout
    : run.state === "queued"
    ? [
      run.position === 0
        ? "first in its session's queue"
        : `behind ${plural(run.position ?? 0, "run")} in its session's queue`
    ]
    : []
  return parts.length === 0 ? "" : `  ${parts.join(", ")}`
}

const listRuns = (target: Target) =>
  Effect.gen(function*() {
    const runs = yield* unfinishedRuns
    if (target.json) return yield* json(runs)
    if (runs.length === 0) {
      return yield* say(`No paused, sleeping, waiting, running, abandoned or queued runs in ${where(target)}.`)
    }
    yield* say(`${plural(runs.length, "unfinished run")} in ${where(target)}:\n`)
    for (const run of runs) {
      yield* say(`  ${runMark[run.state]} ${run.state.padEnd(9)} run ${run.runId}${waitsFor(run)}`)
      yield* say(
        `     workflow: ${run.workflowName}   session: ${run.sessionId}${
          run.userId === undefined ? "" : `   user: ${run.userId}`
        }`
      )
      yield* say(
        run.startedAt === undefined
          ? `     queued ${date(run.queuedAt ?? 0)}`
          : `     started ${date(run.startedAt)}, updated ${date(run.updatedAt ?? run.startedAt)}${
            run.nextStep === undefined ? "" : `, next step ${run.nextStep + 1}`
          }`
      )
      yield* say(`     » ${oneLine(run.input)}`)
      if (run.question !== undefined && run.state === "paused") {
        yield* say(`     ? ${oneLine(run.question.payload, 100)}`)
        yield* say(
          `       asked by ${run.question.path.join(" > ")} (${run.question.key}) at ${date(run.question.pausedAt)}`
        )
      }
      if (run.state === "running" || run.state === "abandoned") {
        yield* say(
          `     owner ${run.owner}, lease ${run.state === "abandoned" ? "expired" : "until"} ${
            date(run.leaseExpiresAt ?? 0)
          }`
        )
      }
    }
  }).pipe(withStore(target, "read"))

/** `schedules --workflow <name>`: the workflow's stored schedules, with their next tick. */
const listSchedules = (target: Target, workflowName: string) =>
  Effect.gen(function*() {
    const schedules = yield* Schedules.list(workflowName)
    if (target.json) return yield* json(schedules)
    if (schedules.length === 0) return yield* say(`No schedules of '${workflowName}' in ${where(target)}.`)
    yield* say(`${plural(schedules.length, "schedule")} of '${workflowName}' in ${where(target)}:\n`)
    for (const schedule of schedules) {
      yield* say(`  ${schedule.name}   cron: ${schedule.cron}   next tick: ${date(schedule.nextTick)} UTC`)
      if (schedule.lastFiredAt !== undefined) yield* say(`     last fired ${date(schedule.lastFiredAt)} UTC`)
    }
  }).pipe(withStore(target, "read"))

// -----------------------------------------------------------------------------
// history: prune and export
// -----------------------------------------------------------------------------

/** A workflow as the commands on its history name it: by name alone (they need none of its code). */
const named = (name: string) => Workflow.make({ name })

/**
 * What `prune` is asked: the workflow, and by age (`--older-than`), count
 * (`--keep-last`) or both, optionally of one session.
 *
 * @since 0.1.0
 * @category history
 */
export interface PruneRequest {
  readonly workflow: string
  readonly olderThan: string | undefined
  readonly keepLast: number | undefined
  readonly sessionId: string | undefined
}

const pruneHistory = (target: Target, request: PruneRequest) =>
  Effect.gen(function*() {
    const olderThan = request.olderThan === undefined ? undefined : Duration.decodeUnknown(request.olderThan)
    if (olderThan !== undefined && Option.isNone(olderThan)) {
      return yield* new UsageError({
        message: `prune: --older-than takes a duration such as "30 days" or "12 hours" (got ${
          JSON.stringify(request.olderThan)
        })`,
        command: target.command
      })
    }
    const pruned = yield* Workflow.prune(named(request.workflow), {
      olderThan: olderThan === undefined ? undefined : olderThan.value,
      keepLast: request.keepLast,
      sessionId: request.sessionId
    }).pipe(
      Effect.catchTags({
        InvalidPruneOptions: (error) =>
          Effect.fail(new UsageError({ message: `prune: ${error.description}`, command: target.command })),
        InvalidSessionId: (error) => Effect.fail(new CommandError({ message: error.message }))
      }),
      withStore(target, "write")
    )
    if (target.json) return yield* json({ workflowName: request.workflow, ...pruned })
    yield* say(
      `Removed ${plural(pruned.runs, "run record")} and ${
        plural(pruned.events, "stored event")
      } of workflow '${request.workflow}'${
        pruned.abandoned === 0 ? "" : `; ended ${plural(pruned.abandoned, "abandoned run")}`
      }.`
    )
  })

/**
 * What `export-runs` is asked: the workflow, optionally one session, the
 * number of most recent runs looked at, and the file written (else stdout).
 *
 * @since 0.1.0
 * @category history
 */
export interface ExportRequest {
  readonly workflow: string
  readonly sessionId: string | undefined
  readonly limit: number | undefined
  readonly out: string | undefined
}

const exportRuns = (target: Target, request: ExportRequest) =>
  Effect.gen(function*() {
    const runs = yield* Replay.fromStore(named(request.workflow), {
      sessionId: request.sessionId,
      limit: request.limit
    })
    const file = JSON.stringify(Replay.encodeFile(request.workflow, runs, yield* Clock.currentTimeMillis), null, 2)
    if (request.out === undefined) return yield* say(file)
    yield* Effect.try({
      try: () => fs.writeFileSync(request.out!, `${file}\n`),
      catch: (cause) =>
        new CommandError({
          message: `cannot write '${request.out}': ${cause instanceof Error ? cause.message : String(cause)}`
        })
    })
    yield* Console.error(
      `Wrote ${plural(runs.length, "recorded run")} of workflow '${request.workflow}' to ${request.out}${
        runs.length === 0 ? " (runs record with Replay.record and events: \"stored\")" : ""
      }.`
    )
  }).pipe(withStore(target, "read"))

// -----------------------------------------------------------------------------
// the commands
// -----------------------------------------------------------------------------

const withDatabase = { ...databaseOptions, json: jsonOption }

const sessionId = Args.text({ name: "sessionId" }).pipe(Args.withDescription("the session's id"))

/** A command on one session of the database: `<command> [options] <sessionId>`. */
const onSession = <Name extends string, E>(
  name: Name,
  command: string,
  description: string,
  f: (target: Target, sessionId: string) => Effect.Effect<void, E>
) =>
  Command.make(
    name,
    { ...withDatabase, sessionId },
    (options) => Effect.flatMap(target(command, options), (t) => f(t, options.sessionId))
  ).pipe(Command.withDescription(description))

/**
 * `sessions list [--limit <n>] [--after <cursor>]`: every session (or the
 * first n, then where the next ones start), newest first, read from the
 * store a page at a time (a `--limit` listing reads only its sessions).
 *
 * @since 0.1.0
 * @category commands
 */
export const sessionsListCommand = Command.make(
  "list",
  {
    ...withDatabase,
    limit: Options.integer("limit").pipe(
      Options.withPseudoName("n"),
      Options.withDescription("at most n sessions (default: all), and where the next ones start (--after)"),
      Options.mapEffect((n) =>
        n >= 1
          ? Effect.succeed(n)
          : Effect.fail(ValidationError.invalidValue(HelpDoc.p("--limit is a number of sessions: 1 or more")))
      ),
      Options.optional,
      Options.map(Option.getOrUndefined)
    ),
    after: Options.text("after").pipe(
      Options.withPseudoName("cursor"),
      Options.withDescription("the sessions after the ones a --limit listing printed (its --after)"),
      Options.mapEffect((text) =>
        Option.match(SessionStore.decodeCursor(text), {
          onNone: () =>
            Effect.fail(ValidationError.invalidValue(HelpDoc.p("--after is not where a sessions list left off"))),
          onSome: ([updatedAt, sessionId]) => Effect.succeed<SessionStore.SessionCursor>({ updatedAt, sessionId })
        })
      ),
      Options.optional,
      Options.map(Option.getOrUndefined)
    )
  },
  (options) =>
    Effect.flatMap(
      target("sessions list", options),
      (t) => listSessions(t, { limit: options.limit, after: options.after })
    )
).pipe(Command.withDescription("every session (or the first --limit n, then where the next start), newest first"))

/**
 * `sessions show <sessionId>`: a session's metadata, state and run history.
 *
 * @since 0.1.0
 * @category commands
 */
export const sessionsShowCommand = onSession(
  "show",
  "sessions show",
  "a session's metadata, state and run history",
  showSession
)

/**
 * `sessions rename <sessionId> <name…>`: sets a session's name.
 *
 * @since 0.1.0
 * @category commands
 */
export const sessionsRenameCommand = Command.make(
  "rename",
  {
    ...withDatabase,
    sessionId,
    name: Args.text({ name: "name" }).pipe(Args.withDescription("the new name"), Args.atLeast(1))
  },
  (options) =>
    Effect.flatMap(target("sessions rename", options), (t) => renameSession(t, options.sessionId, options.name))
).pipe(Command.withDescription("set a session's name"))

/**
 * `sessions delete <sessionId>`: deletes a session and its run history.
 *
 * @since 0.1.0
 * @category commands
 */
export const sessionsDeleteCommand = onSession(
  "delete",
  "sessions delete",
  "delete a session and its run history",
  deleteSession
)

const sessionsCommands = [
  sessionsListCommand,
  sessionsShowCommand,
  sessionsRenameCommand,
  sessionsDeleteCommand
] as const

/**
 * `state <sessionId>`: a session's state alone (one JSON line with `--json`).
 *
 * @since 0.1.0
 * @category commands
 */
export const stateCommand = Command.make(
  "state",
  { ...withDatabase, sessionId, at: atOption("the state as committed at this kept version (see: versions)") },
  (options) => Effect.flatMap(target("state", options), (t) => printState(t, options.sessionId, options.at))
).pipe(Command.withDescription("a session's state alone (one JSON line with --json); --at <version>: as it was then"))

/**
 * `versions <sessionId>`: a session's kept versions, oldest first: when, by
 * which run, and the top-level keys each changed.
 *
 * @since 0.1.0
 * @category commands
 */
export const versionsCommand = onSession(
  "versions",
  "versions",
  "a session's kept versions: when, by which run, the keys each changed",
  listVersions
)

/**
 * `fork <sessionId> [--at <version>] [--to <newSessionId>]`: a new session
 * from a kept version of one (default: its current version), owned by the
 * same user; runs on it leave the original alone.
 *
 * @since 0.1.0
 * @category commands
 */
export const forkCommand = Command.make(
  "fork",
  {
    ...withDatabase,
    sessionId,
    at: atOption("the kept version to fork from (default: the current one)"),
    to: value("to", "newSessionId", "the new session's id (default: a new UUID)")
  },
  (options) => Effect.flatMap(target("fork", options), (t) => forkSession(t, options.sessionId, options.at, options.to))
).pipe(Command.withDescription("a new session from a kept version of a session (default: its current one)"))

/**
 * `runs list`: the paused, sleeping, waiting, running and abandoned runs, oldest first, then the
 * queued ones (`onBusy: "enqueue"`, not started) in arrival order.
 *
 * @since 0.1.0
 * @category commands
 */
export const runsListCommand = Command.make(
  "list",
  withDatabase,
  (options) => Effect.flatMap(target("runs list", options), listRuns)
).pipe(
  Command.withDescription(
    "the unfinished runs: paused (with the question they wait on), sleeping " +
      "(until when), waiting (for which signal), running, abandoned (their process " +
      "stopped; the lease expired), and queued (waiting in a busy session's queue)"
  )
)

/** `runs continue` and `runs resume` need the workflow's code: they say so. */
const needsCode = (name: "continue" | "resume") =>
  Command.make(name, { ...withDatabase, runId: Args.text({ name: "runId" }).pipe(Args.optional) }, () =>
    Effect.fail(
      new CommandError({
        message: name === "continue"
          ? "runs continue needs the workflow's code: call Workflow.continue(workflow, " +
            "runId, response, { pause: key }) in your app (key: the pause's, see runs list)"
          : `runs ${name} needs the workflow's code: call Workflow.${name}(workflow, runId, …) in your app`
      })
    )).pipe(Command.withDescription(`explains where to ${name} a run: Workflow.${name} in your app`))

const runsCommands = [runsListCommand, needsCode("continue"), needsCode("resume")] as const

const workflowOption = Options.text("workflow").pipe(
  Options.withPseudoName("name"),
  Options.withDescription("the workflow whose history it is (its name)")
)
const sessionOption = value("session", "id", "only this session")

/**
 * `schedules --workflow <name>`: the workflow's schedules (see `Schedules`):
 * name, cron and next tick.
 *
 * @since 0.1.0
 * @category commands
 */
export const schedulesCommand = Command.make(
  "schedules",
  { ...withDatabase, workflow: workflowOption },
  (options) => Effect.flatMap(target("schedules", options), (t) => listSchedules(t, options.workflow))
).pipe(Command.withDescription("a workflow's schedules: name, cron and next tick (UTC)"))

/**
 * `prune --workflow <name> [--older-than <duration>] [--keep-last <n>]
 * [--session <id>]`: removes run records and their stored events by age or
 * count (see `Workflow.prune`).
 *
 * @since 0.1.0
 * @category commands
 */
export const pruneCommand = Command.make(
  "prune",
  {
    ...withDatabase,
    workflow: workflowOption,
    olderThan: value("older-than", "duration", "remove the records of runs that ended longer ago, e.g. \"30 days\""),
    keepLast: Options.integer("keep-last").pipe(
      Options.withPseudoName("n"),
      Options.withDescription("keep only each session's n most recent run records"),
      Options.optional,
      Options.map(Option.getOrUndefined)
    ),
    session: sessionOption
  },
  (options) =>
    Effect.flatMap(target("prune", options), (t) =>
      pruneHistory(t, {
        workflow: options.workflow,
        olderThan: options.olderThan,
        keepLast: options.keepLast,
        sessionId: options.session
      }))
).pipe(
  Command.withDescription(
    "remove a workflow's run records and their stored events by age (--older-than) " +
      "or count (--keep-last); abandoned runs idle for --older-than are ended"
  )
)

/**
 * `export-runs --workflow <name> [--session <id>] [--limit <n>] [--out
 * <file>]`: writes the workflow's recorded runs (see `Replay`) as a file of
 * recorded runs (`Replay.RecordedRuns`), for replay tests.
 *
 * @since 0.1.0
 * @category commands
 */
export const exportRunsCommand = Command.make(
  "export-runs",
  {
    ...withDatabase,
    workflow: workflowOption,
    session: sessionOption,
    limit: Options.integer("limit").pipe(
      Options.withPseudoName("n"),
      Options.withDescription("look at the n most recent runs (default 100)"),
      Options.optional,
      Options.map(Option.getOrUndefined)
    ),
    out: value("out", "file", "the file to write (default: stdout)")
  },
  (options) =>
    Effect.flatMap(
      target("export-runs", options),
      (t) =>
        exportRuns(t, {
          workflow: options.workflow,
          sessionId: options.session,
          limit: options.limit,
          out: options.out
        })
    )
).pipe(
  Command.withDescription(
    "write a workflow's recorded runs (Replay.record with events: " +
      "\"stored\") to a JSON file that Replay.replayAll replays in tests"
  )
)

/**
 * `dev <module>`: serves the workflows a module exports (the HTTP API and the
 * session page) on a local port, and serves them again when a file under the
 * module's folder changes (see `Dev`).
 *
 * @since 0.1.0
 * @category commands
 */
export const devCommand = Command.make(
  "dev",
  {
    module: Args.text({ name: "module" }).pipe(
      Args.withDescription(
        "the module with your workflows (TypeScript or JavaScript): " +
          "its exported workflows, or a default export array of them"
      )
    ),
    port: Options.integer("port").pipe(
      Options.withPseudoName("number"),
      Options.withDescription("the port (0 picks a free one)"),
      Options.withDefault(3000)
    ),
    host: Options.text("host").pipe(
      Options.withPseudoName("address"),
      Options.withDescription("the address to listen on (a loopback address: the server has no authentication)"),
      Options.withDefault("127.0.0.1")
    ),
    ...databaseOptions
  },
  (options) =>
    Effect.flatMap(
      Effect.mapError(chooseDatabase(options), (error) => new UsageError({ message: error.message, command: "dev" })),
      (database) =>
        Dev.run({
          module: options.module,
          host: options.host,
          port: options.port,
          db: database?._tag === "Sqlite" ? database.filename : undefined,
          url: database?._tag === "Postgres" ? database.url : undefined,
          schema: options.schema,
          table: options.table,
          label: database === undefined
            ? undefined
            : `${describeDatabase(database)}${options.schema === undefined ? "" : ` (schema ${options.schema})`}`
        }).pipe(Effect.mapError((error) => new CommandError({ message: error.message })))
    )
).pipe(
  Command.withDescription(
    `serve your workflows (the HTTP API and the session page) on a local port, ` +
      `reloading when their files change; sessions in ${Dev.defaultDb} unless --db or --url`
  )
)

/**
 * `init [dir]`: writes a minimal app (one typed workflow, its test, a strict
 * tsconfig) into a new or empty folder (see `Init`).
 *
 * @since 0.1.0
 * @category commands
 */
export const initCommand = Command.make(
  "init",
  {
    dir: Args.text({ name: "dir" }).pipe(
      Args.withDescription("the app's folder, new or empty (default: the current one)"),
      Args.withDefault(".")
    ),
    packs: value(
      "packs",
      "folder",
      "install the @sessionflow packages from the tarballs in " +
        "this folder (npm run pack writes them), not from the registry"
    )
  },
  (options) =>
    Init.run({ dir: options.dir, packs: options.packs, version }).pipe(
      Effect.mapError((error) => new CommandError({ message: error.message })),
      Effect.flatMap((written) =>
        Effect.gen(function*() {
          const dir = options.dir === "." ? undefined : options.dir
          yield* say(`Wrote a sessionflow app${dir === undefined ? "" : ` to ${dir}`}: ${written.join(", ")}`)
          yield* say(`\nNext:${dir === undefined ? "" : `\n  cd ${dir}`}`)
          yield* say("  npm install")
          yield* say("  npm test")
          yield* say("  npx sessionflow dev src/workflows.ts   (or npm run dev)")
        })
      )
    )
).pipe(
  Command.withDescription(
    "write a minimal app (one typed workflow, its test, a strict tsconfig) into a new or empty folder"
  )
)

/** A command that only groups others: alone, it asks which of them. */
const group = (name: string, description: string | HelpDoc.HelpDoc) =>
  Command.make(name, {}, () => Effect.fail(CommandLine.whichCommand(tree, name === "sessionflow" ? [] : [name]))).pipe(
    Command.withDescription(description)
  )

/**
 * The `sessionflow` command, declared with `@effect/cli`: `sessions list |
 * show | rename | delete`, `state`, `versions`, `fork`, `runs list`, `dev`,
 * `init` and `help`.
 *
 * @since 0.1.0
 * @category commands
 */
export const command = group(
  "sessionflow",
  HelpDoc.blocks([
    HelpDoc.p("Inspect the sessions a sessionflow app keeps in SQLite (--db <file>) or PostgreSQL (--url <url>)."),
    HelpDoc.p(
      "dev <module> serves your workflows (the HTTP API and the session " +
        "page) and reloads when their files change; init [dir] writes a new app."
    ),
    HelpDoc.p(
      "list, show, state, versions, runs list and schedules open a SQLite file read-only (and only " +
        "read PostgreSQL); rename and delete change only the session named, fork writes only the new " +
        "session. No inspecting command creates or migrates a table (dev opens its store as an app does)."
    ),
    HelpDoc.p(
      "Exit status: 0 on success, 1 when a command fails, 2 for a usage mistake; errors are one line on stderr."
    )
  ])
).pipe(
  Command.withSubcommands([
    group("sessions", "list, show, rename or delete sessions").pipe(Command.withSubcommands(sessionsCommands)),
    stateCommand,
    versionsCommand,
    forkCommand,
    group("runs", "the unfinished runs").pipe(Command.withSubcommands(runsCommands)),
    schedulesCommand,
    pruneCommand,
    exportRunsCommand,
    devCommand,
    initCommand,
    CommandLine.helpCommand
  ])
)

/**
 * The names of the commands and subcommands of {@link command}.
 *
 * @since 0.1.0
 * @category commands
 */
export const tree: CommandLine.Tree = {
  sessions: CommandLine.leaves(...sessionsCommands),
  ...CommandLine.leaves(stateCommand, versionsCommand, forkCommand),
  runs: CommandLine.leaves(...runsCommands),
  ...CommandLine.leaves(
    schedulesCommand,
    pruneCommand,
    exportRunsCommand,
    devCommand,
    initCommand,
    CommandLine.helpCommand
  )
}

/**
 * The options of every command (for "did you mean" and "needs a value").
 *
 * @since 0.1.0
 * @category commands
 */
export const commandLineOptions = {
  valueOptions: [
    ...Object.keys(databaseOptions).map((name) => `--${name}`),
    "--port",
    "--host",
    "--packs",
    "--workflow",
    "--older-than",
    "--keep-last",
    "--session",
    "--limit",
    "--after",
    "--out",
    "--at",
    "--to"
  ],
  flags: ["--json", "--help"]
}

const version: string = createRequire(import.meta.url)("../package.json").version

/**
 * The errors a command reports as one line.
 *
 * @since 0.1.0
 * @category errors
 */
export type CliError =
  | UsageError
  | CommandError
  | WorkflowError.SessionStoreError
  | WorkflowError.StateDecodeError

/**
 * Runs the command line `argv` (without `node` and the script), printing with
 * `Console`; `--help` (or `help`) prints the help.
 *
 * @since 0.1.0
 * @category running
 */
export const run: (argv: ReadonlyArray<string>) => Effect.Effect<void, CliError> = CommandLine.run(command, {
  name: "sessionflow",
  version,
  tree,
  ...commandLineOptions
})

// -----------------------------------------------------------------------------
// reporting
// -----------------------------------------------------------------------------

const singleLine = (text: string) => text.replace(/\s*\n\s*/g, " ").trim()

/**
 * The one line an error is reported with.
 *
 * @since 0.1.0
 * @category errors
 */
export const describeError = (error: unknown): string => {
  if (error instanceof WorkflowError.SessionStoreError) return singleLine(error.description)
  if (error instanceof UsageError || error instanceof CommandError) return singleLine(error.message)
  return singleLine(WorkflowError.format(error))
}

/**
 * The exit code for a failure of `run`: 2 for a usage mistake, else 1.
 *
 * @since 0.1.0
 * @category errors
 */
export const exitCode = (error: CliError): number => (error._tag === "UsageError" ? 2 : 1)

/**
 * `run`, reporting a failure (or a defect) as one line on stderr, a usage
 * mistake with a hint to the command's `--help`; succeeds with the exit code.
 *
 * @since 0.1.0
 * @category running
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<number> =>
  run(argv).pipe(
    Effect.as(0),
    Effect.catchAll((error) =>
      Effect.as(
        Console.error(
          `error: ${describeError(error)}${
            error._tag === "UsageError" ? ` ${CommandLine.hint("sessionflow", error)}` : ""
          }`
        ),
        exitCode(error)
      )
    ),
    Effect.catchAllDefect((defect) => Effect.as(Console.error(`unexpected error: ${describeError(defect)}`), 1))
  )

// -----------------------------------------------------------------------------
// the process
// -----------------------------------------------------------------------------

/**
 * Where text goes: one function per stream.
 *
 * @since 0.1.0
 * @category output
 */
export interface Writers {
  readonly stdout: (text: string) => void
  readonly stderr: (text: string) => void
  /** whether ANSI colours (in the help) are kept; without, they are removed */
  readonly color?: boolean | undefined
}

/**
 * Runs `self` with `Console.log`/`info` writing lines to `stdout` and
 * `Console.warn`/`error` to `stderr` (non-string arguments as JSON), without
 * ANSI colours unless `writers.color`.
 *
 * @since 0.1.0
 * @category output
 */
export const withWriters: {
  (writers: Writers): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, writers: Writers): Effect.Effect<A, E, R>
} = dual(2, <A, E, R>(self: Effect.Effect<A, E, R>, writers: Writers) => withWritersImpl(self, writers))

const withWritersImpl = <A, E, R>(self: Effect.Effect<A, E, R>, writers: Writers): Effect.Effect<A, E, R> =>
  Console.consoleWith((base) => {
    const text = (args: ReadonlyArray<unknown>) => args.map((a) => WorkflowEvent.formatValue(a, Infinity)).join(" ")
    const line = (args: ReadonlyArray<unknown>) =>
      `${writers.color === true ? text(args) : CommandLine.stripAnsi(text(args))}\n`
    const out = (...args: ReadonlyArray<unknown>) => writers.stdout(line(args))
    const err = (...args: ReadonlyArray<unknown>) => writers.stderr(line(args))
    const console: Console.Console = {
      ...base,
      log: (...args) => Effect.sync(() => out(...args)),
      info: (...args) => Effect.sync(() => out(...args)),
      warn: (...args) => Effect.sync(() => err(...args)),
      error: (...args) => Effect.sync(() => err(...args)),
      unsafe: { ...base.unsafe, log: out, info: out, warn: err, error: err }
    }
    return Effect.withConsole(self, console)
  })

/**
 * What `streamWriter` needs of a stream (`process.stdout` is one).
 *
 * @since 0.1.0
 * @category output
 */
export interface OutputStream {
  on(event: "error", listener: (error: Error) => void): unknown
  write(text: string): unknown
  readonly destroyed?: boolean | undefined
}

/**
 * A writer to a stream that a closed reader cannot crash: once the stream
 * fails (EPIPE after `sessionflow … | head`), later text is dropped.
 *
 * @since 0.1.0
 * @category output
 */
export const streamWriter = (stream: OutputStream): (text: string) => void => {
  let open = true
  stream.on("error", () => {
    open = false
  })
  return (text) => {
    if (open && stream.destroyed !== true) stream.write(text)
  }
}

/**
 * The process's stdout and stderr, as `streamWriter`s; colours on a
 * terminal only (not with `NO_COLOR`).
 *
 * @since 0.1.0
 * @category output
 */
export const processWriters = (): Writers => ({
  stdout: streamWriter(process.stdout),
  stderr: streamWriter(process.stderr),
  color: process.stdout.isTTY === true && process.env.NO_COLOR === undefined && process.env.TERM !== "dumb"
})

/**
 * Runs `program` as the process's main program: output to stdout/stderr
 * (a closed pipe ends output quietly), SIGINT/SIGTERM interrupt it, and the
 * exit code is what it returns (130 when interrupted).
 *
 * @since 0.1.0
 * @category running
 */
export const runMain = (program: Effect.Effect<number>): void => {
  const fiber = Effect.runFork(withWritersImpl(program, processWriters()))
  const interrupt = () => fiber.unsafeInterruptAsFork(fiber.id())
  process.once("SIGINT", interrupt)
  process.once("SIGTERM", interrupt)
  fiber.addObserver((exit) => {
    process.off("SIGINT", interrupt)
    process.off("SIGTERM", interrupt)
    process.exitCode = Exit.isSuccess(exit) ? exit.value : Cause.isInterruptedOnly(exit.cause) ? 130 : 1
  })
}
