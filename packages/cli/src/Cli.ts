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
 * sessionflow runs list       --db app.db
 * sessionflow sessions list   --url postgres://app@db.internal:5432/app
 * ```
 *
 * `list`, `show`, `state` and `runs list` open the file read-only; `rename`
 * and `delete` change that one session. No command creates, migrates or
 * alters a table: an unknown `--table`, or a file without sessionflow tables,
 * is an error.
 *
 * @since 0.1.0
 */
import { SessionStore, WorkflowError } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as fs from "node:fs"

// -----------------------------------------------------------------------------
// errors
// -----------------------------------------------------------------------------

/**
 * A command-line mistake (unknown option, missing argument): exit code 2.
 *
 * @since 0.1.0
 * @category errors
 */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/**
 * A command that could not do its job (unknown session, missing file, …):
 * exit code 1.
 *
 * @since 0.1.0
 * @category errors
 */
export class CommandError extends Data.TaggedError("CommandError")<{ readonly message: string }> {}

/**
 * The environment variable holding the PostgreSQL URL used when neither
 * `--db` nor `--url` is given.
 *
 * @since 0.1.0
 * @category database
 */
export const databaseUrlVariable = "SESSIONFLOW_DATABASE_URL"

/**
 * @since 0.1.0
 * @category usage
 */
export const usage = `sessionflow: inspect the sessions a sessionflow app keeps in SQLite or PostgreSQL

Usage:
  sessionflow sessions list   <database> [--table <name>] [--json]
  sessionflow sessions show   <database> [--table <name>] [--json] <sessionId>
  sessionflow sessions rename <database> [--table <name>] [--json] <sessionId> <name>
  sessionflow sessions delete <database> [--table <name>] [--json] <sessionId>
  sessionflow state           <database> [--table <name>] [--json] <sessionId>
  sessionflow runs list       <database> [--table <name>] [--json]
  sessionflow help

The database is one of:
  --db <file>      the SQLite file (written by @sessionflow/store-sqlite)
  --url <url>      a PostgreSQL URL, postgres://user:password@host:5432/database
                   (written by @sessionflow/store-pg); without --db or --url,
                   the URL in ${databaseUrlVariable}, if set

Options:
  --schema <name>  PostgreSQL: the schema the tables are in (default: the search_path)
  --table <name>   the session table (default ${SqliteSessionStore.defaultTable})
  --json           print JSON on stdout (for jq and scripts)

runs list shows the unfinished runs: paused (with the question they wait on),
running, and abandoned (their process stopped; the lease expired). Continue or
resume them with the workflow's code (Workflow.continue, Workflow.resume).

list, show, state and runs list open a SQLite file read-only (and only read
PostgreSQL); rename and delete change only the session named. No command creates or migrates a table. Exit status: 0 on
success, 1 when a command fails, 2 for a usage mistake; errors are one line on stderr.`

// -----------------------------------------------------------------------------
// arguments
// -----------------------------------------------------------------------------

/**
 * What a command line may contain: options that take a value, and flags.
 *
 * @since 0.1.0
 * @category parsing
 */
export interface ArgsSpec {
  readonly values: ReadonlyArray<string>
  readonly flags: ReadonlyArray<string>
}

/**
 * A parsed command line.
 *
 * @since 0.1.0
 * @category parsing
 */
export interface CommandLine {
  readonly positionals: ReadonlyArray<string>
  readonly values: ReadonlyMap<string, string>
  readonly flags: ReadonlySet<string>
}

/**
 * Parses `argv` by hand: `--option value`, `--option=value`, `--flag`, `-h`
 * (as `--help`, when `help` is a flag), and `--` ending the options.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseCommandLine = (argv: ReadonlyArray<string>, spec: ArgsSpec): Effect.Effect<CommandLine, UsageError> =>
  Effect.suspend(() => {
    const positionals: Array<string> = []
    const values = new Map<string, string>()
    const flags = new Set<string>()
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i]!
      if (arg === "--") {
        positionals.push(...argv.slice(i + 1))
        break
      }
      if (arg === "-h" && spec.flags.includes("help")) {
        flags.add("help")
        continue
      }
      if (arg.startsWith("--")) {
        const eq = arg.indexOf("=")
        const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq)
        if (spec.values.includes(name)) {
          const value = eq === -1 ? argv[++i] : arg.slice(eq + 1)
          if (value === undefined || value === "" || (eq === -1 && value.startsWith("--"))) {
            return Effect.fail(new UsageError({ message: `--${name} needs a value` }))
          }
          values.set(name, value)
          continue
        }
        if (spec.flags.includes(name) && eq === -1) {
          flags.add(name)
          continue
        }
        return Effect.fail(new UsageError({ message: `unknown option '${arg}'` }))
      }
      if (arg.startsWith("-") && arg.length > 1) {
        return Effect.fail(new UsageError({ message: `unknown option '${arg}'` }))
      }
      positionals.push(arg)
    }
    return Effect.succeed({ positionals, values, flags })
  })

/**
 * The `sessionflow` command's arguments.
 *
 * @since 0.1.0
 * @category parsing
 */
export interface Args {
  readonly positionals: ReadonlyArray<string>
  /** `--db`, `--url`, else `SESSIONFLOW_DATABASE_URL` */
  readonly database: Database | undefined
  readonly schema: string | undefined
  readonly table: string | undefined
  readonly json: boolean
  readonly help: boolean
}

/**
 * @since 0.1.0
 * @category parsing
 */
export const parseArgs = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>> = process.env
): Effect.Effect<Args, UsageError> =>
  Effect.gen(function*() {
    const line = yield* parseCommandLine(argv, { values: ["db", "url", "schema", "table"], flags: ["json", "help"] })
    const database = yield* chooseDatabase({ db: line.values.get("db"), url: line.values.get("url") }, env)
    return {
      positionals: line.positionals,
      database,
      schema: line.values.get("schema"),
      table: line.values.get("table"),
      json: line.flags.has("json"),
      help: line.flags.has("help")
    }
  })

// -----------------------------------------------------------------------------
// the database
// -----------------------------------------------------------------------------

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
    : PgSessionStore.layer({
      url: database.url,
      schema: options.schema,
      table: options.table,
      migrate: options.migrate
    })

// -----------------------------------------------------------------------------
// the store
// -----------------------------------------------------------------------------

const where = (args: Args) =>
  `${args.database === undefined ? "" : describeDatabase(args.database)}${
    args.schema === undefined ? "" : ` (schema ${args.schema})`
  }${args.table === undefined ? "" : ` (table ${args.table})`}`

/**
 * Runs `self` on the store in `--db` or `--url`: read-only for reading
 * commands (on SQLite), never migrating or creating anything.
 */
const withStore = (args: Args, command: string, access: "read" | "write") =>
<A, E>(
  self: Effect.Effect<A, E, SessionStore.SessionStore>
): Effect.Effect<A, E | UsageError | CommandError | WorkflowError.SessionStoreError> =>
  Effect.suspend((): Effect.Effect<A, E | UsageError | CommandError | WorkflowError.SessionStoreError> => {
    const database = args.database
    if (database === undefined) {
      return Effect.fail(
        new UsageError({
          message: `${command}: --db <file> or --url <url> is required (the SQLite file or PostgreSQL database to inspect)`
        })
      )
    }
    if (database._tag === "Sqlite" && database.filename !== ":memory:" && !fs.existsSync(database.filename)) {
      return Effect.fail(new CommandError({ message: `no database file '${database.filename}'` }))
    }
    return Effect.provide(
      self,
      storeLayer(database, { table: args.table, schema: args.schema, readonly: access === "read", migrate: false })
    )
  })

const sessionArg = (args: Args, command: string, extra: "none" | "rest") =>
  Effect.suspend(() => {
    const id = args.positionals[2]
    if (id === undefined) return Effect.fail(new UsageError({ message: `${command}: which session? (give its id)` }))
    if (extra === "none" && args.positionals.length > 3) {
      return Effect.fail(new UsageError({ message: `${command}: unexpected argument '${args.positionals[3]}'` }))
    }
    return Effect.succeed(id)
  })

const notFound = (args: Args, sessionId: string) =>
  new CommandError({ message: `no session '${sessionId}' in ${where(args)} (see: sessionflow sessions list${
    args.database === undefined ? "" : ` ${databaseOption(args.database)}`
  })` })

const infoOrFail = (args: Args, sessionId: string) =>
  Effect.flatMap(SessionStore.SessionStore, (store) => store.info(sessionId)).pipe(
    Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound(args, sessionId)), onSome: Effect.succeed }))
  )

// -----------------------------------------------------------------------------
// formatting
// -----------------------------------------------------------------------------

const say = (text: string = "") => Console.log(text)

const json = (value: unknown) => say(JSON.stringify(value, null, 2))

const date = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 19)

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

const oneLine = (u: unknown, max = 70): string => {
  const text = u === undefined || u === null ? "" : typeof u === "string" ? u : JSON.stringify(u)
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

// -----------------------------------------------------------------------------
// commands
// -----------------------------------------------------------------------------

const sessionsList = (args: Args) =>
  Effect.gen(function*() {
    if (args.positionals.length > 2) {
      return yield* new UsageError({ message: `sessions list: unexpected argument '${args.positionals[2]}'` })
    }
    const store = yield* SessionStore.SessionStore
    const { broken, sessions } = yield* store.list({})
    // a row the store cannot read is reported, and the others are still listed
    for (const b of broken) yield* Console.error(`warning: session ${b.sessionId} cannot be read: ${describeError(b.error)}`)
    if (args.json) return yield* json(sessions)
    if (sessions.length === 0) return yield* say(`No sessions in ${where(args)}.`)
    yield* say(`${plural(sessions.length, "session")} in ${where(args)}:\n`)
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
  }).pipe(withStore(args, "sessions list", "read"))

const sessionsShow = (args: Args) =>
  Effect.gen(function*() {
    const id = yield* sessionArg(args, "sessions show", "none")
    return yield* Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const info = yield* infoOrFail(args, id)
      const runs = yield* store.runs(id, {})
      // the history and metadata stay readable when the state is not
      const stored = yield* store.load(id).pipe(
        Effect.map((loaded) => ({ ok: true as const, state: Option.getOrUndefined(loaded)?.state })),
        Effect.catchTag("StateDecodeError", (error) => Effect.succeed({ ok: false as const, error: error.message }))
      )
      if (args.json) {
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
    }).pipe(withStore(args, "sessions show", "read"))
  })

const sessionsRename = (args: Args) =>
  Effect.gen(function*() {
    const id = yield* sessionArg(args, "sessions rename", "rest")
    const name = args.positionals.slice(3).join(" ").trim()
    if (name.length === 0) return yield* new UsageError({ message: "sessions rename: give the new name after the session id" })
    return yield* Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      yield* store.setName(id, name).pipe(Effect.catchTag("SessionNotFound", () => Effect.fail(notFound(args, id))))
      yield* args.json ? json({ sessionId: id, name }) : say(`Session ${id} is now named '${name}'.`)
    }).pipe(withStore(args, "sessions rename", "write"))
  })

const sessionsDelete = (args: Args) =>
  Effect.gen(function*() {
    const id = yield* sessionArg(args, "sessions delete", "none")
    return yield* Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      if (!(yield* store.remove(id))) return yield* notFound(args, id)
      yield* args.json ? json({ sessionId: id, deleted: true }) : say(`Deleted session ${id} and its run history.`)
    }).pipe(withStore(args, "sessions delete", "write"))
  })

const sessions = (args: Args) => {
  const sub = args.positionals[1]
  switch (sub) {
    case "list":
    case "ls":
      return sessionsList(args)
    case "show":
      return sessionsShow(args)
    case "rename":
      return sessionsRename(args)
    case "delete":
    case "rm":
      return sessionsDelete(args)
    default:
      return Effect.fail(
        new UsageError({
          message: sub === undefined
            ? "sessions: list, show, rename or delete?"
            : `unknown sessions command '${sub}' (use list, show, rename or delete)`
        })
      )
  }
}

const state = (args: Args) =>
  Effect.gen(function*() {
    const sessionId = args.positionals[1]
    if (sessionId === undefined) return yield* new UsageError({ message: "state: which session? (give its id)" })
    if (args.positionals.length > 2) {
      return yield* new UsageError({ message: `state: unexpected argument '${args.positionals[2]}'` })
    }
    return yield* Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const loaded = yield* store.load(sessionId)
      if (Option.isNone(loaded)) return yield* notFound(args, sessionId)
      yield* say(JSON.stringify(loaded.value.state, null, args.json ? undefined : 2))
    }).pipe(withStore(args, "state", "read"))
  })

/**
 * How an unfinished run stands: waiting for a person, running (its owner holds
 * its lease), or abandoned (running, but its lease expired: its process
 * stopped).
 *
 * @since 0.1.0
 * @category runs
 */
export type RunState = "paused" | "running" | "abandoned"

/**
 * An unfinished run as `runs list` shows it: the store's entry without its
 * journal and checkpoint (the data it continues from).
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
  /** the question a paused run waits on */
  readonly question?: { readonly path: ReadonlyArray<string>; readonly key: string; readonly payload: unknown; readonly pausedAt: number } | undefined
  readonly startedAt: number
  readonly updatedAt: number
}

/**
 * The unfinished runs of the store, oldest first, as `runs list` shows them.
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
  return runs.map((run): UnfinishedRun => ({
    runId: run.runId,
    sessionId: run.sessionId,
    workflowName: run.workflowName,
    ...(run.userId === undefined ? {} : { userId: run.userId }),
    state: run.status === "paused" ? "paused" : run.leaseExpiresAt < now ? "abandoned" : "running",
    input: run.input,
    ...(run.status === "running" ? { owner: run.owner, leaseExpiresAt: run.leaseExpiresAt } : {}),
    ...(run.journal === undefined ? {} : { nextStep: run.journal.next }),
    ...(run.pause === undefined
      ? {}
      : { question: { path: run.pause.path, key: run.pause.key, payload: run.pause.payload, pausedAt: run.pause.pausedAt } }),
    startedAt: run.startedAt,
    updatedAt: run.updatedAt
  }))
})

const runMark: Record<RunState, string> = { paused: "⏸", running: "▶", abandoned: "✗" }

const runsList = (args: Args) =>
  Effect.gen(function*() {
    if (args.positionals.length > 2) {
      return yield* new UsageError({ message: `runs list: unexpected argument '${args.positionals[2]}'` })
    }
    const runs = yield* unfinishedRuns
    if (args.json) return yield* json(runs)
    if (runs.length === 0) return yield* say(`No paused, running or abandoned runs in ${where(args)}.`)
    yield* say(`${plural(runs.length, "unfinished run")} in ${where(args)}:\n`)
    for (const run of runs) {
      yield* say(`  ${runMark[run.state]} ${run.state.padEnd(9)} run ${run.runId}`)
      yield* say(`     workflow: ${run.workflowName}   session: ${run.sessionId}${run.userId === undefined ? "" : `   user: ${run.userId}`}`)
      yield* say(`     started ${date(run.startedAt)}, updated ${date(run.updatedAt)}${run.nextStep === undefined ? "" : `, next step ${run.nextStep + 1}`}`)
      yield* say(`     » ${oneLine(run.input)}`)
      if (run.question !== undefined) {
        yield* say(`     ? ${oneLine(run.question.payload, 100)}`)
        yield* say(`       asked by ${run.question.path.join(" > ")} (${run.question.key}) at ${date(run.question.pausedAt)}`)
      }
      if (run.state !== "paused") yield* say(`     owner ${run.owner}, lease ${run.state === "abandoned" ? "expired" : "until"} ${date(run.leaseExpiresAt ?? 0)}`)
    }
  }).pipe(withStore(args, "runs list", "read"))

const runs = (args: Args) => {
  const sub = args.positionals[1]
  switch (sub) {
    case "list":
    case "ls":
      return runsList(args)
    case "continue":
    case "resume":
      return Effect.fail(
        new CommandError({
          message: `runs ${sub} needs the workflow's code: call Workflow.${sub}(workflow, runId, …) in your app`
        })
      )
    default:
      return Effect.fail(
        new UsageError({ message: sub === undefined ? "runs: list?" : `unknown runs command '${sub}' (use list)` })
      )
  }
}

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
 * `Console`.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (argv: ReadonlyArray<string>): Effect.Effect<void, CliError> =>
  Effect.gen(function*() {
    const args = yield* parseArgs(argv)
    const command = args.positionals[0]
    if (args.help || command === "help") return yield* say(usage)
    switch (command) {
      case "sessions":
        return yield* sessions(args)
      case "state":
        return yield* state(args)
      case "runs":
        return yield* runs(args)
      case undefined:
        return yield* new UsageError({ message: "which command? (sessions list|show|rename|delete, state, runs list)" })
      default:
        return yield* new UsageError({ message: `unknown command '${command}'` })
    }
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
 * `run`, reporting a failure (or a defect) as one line on stderr; succeeds
 * with the exit code.
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
          `error: ${describeError(error)}${error._tag === "UsageError" ? " (see: sessionflow help)" : ""}`
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
}

const safeJson = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

/**
 * Runs `self` with `Console.log`/`info` writing lines to `stdout` and
 * `Console.warn`/`error` to `stderr` (non-string arguments as JSON).
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
    const line = (args: ReadonlyArray<unknown>) => `${args.map((a) => (typeof a === "string" ? a : safeJson(a))).join(" ")}\n`
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
 * The process's stdout and stderr, as `streamWriter`s.
 *
 * @since 0.1.0
 * @category output
 */
export const processWriters = (): Writers => ({
  stdout: streamWriter(process.stdout),
  stderr: streamWriter(process.stderr)
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
