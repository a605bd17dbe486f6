/**
 * The `sessionflow` command line: runs the seven seed scenarios and inspects
 * what they stored.
 *
 * ```sh
 * npm start                                  # the guided shopping-list demo
 * npm start -- list                          # the scenarios
 * npm start -- run routers --json            # one scenario, events as JSON lines
 * npm start -- sessions show --db tmp/job_application_tracker.db job_tracker_demo
 * ```
 *
 * @since 0.1.0
 */
import { SessionStore, WorkflowError } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as CustomExecutors from "./CustomExecutors.js"
import * as GreetingCondition from "./GreetingCondition.js"
import * as JobTracker from "./JobTracker.js"
import * as Output from "./Output.js"
import * as ProjectTeam from "./ProjectTeam.js"
import * as Routers from "./Routers.js"
import type * as Scenario from "./Scenario.js"
import * as SessionNaming from "./SessionNaming.js"
import * as ShoppingList from "./ShoppingList.js"

/**
 * The scenarios, in the seed's order.
 *
 * @since 0.1.0
 * @category scenarios
 */
export const scenarios: ReadonlyArray<Scenario.Scenario> = [
  ShoppingList.scenario,
  JobTracker.scenario,
  CustomExecutors.scenario,
  GreetingCondition.scenario,
  Routers.scenario,
  ProjectTeam.scenario,
  SessionNaming.scenario
]

const normalize = (name: string) => name.trim().toLowerCase().replace(/[_\s.]+/g, "-")

/**
 * Finds a scenario by name, alias, agno cookbook name or number (1–7).
 *
 * @since 0.1.0
 * @category scenarios
 */
export const findScenario = (name: string): Option.Option<Scenario.Scenario> => {
  const wanted = normalize(name.replace(/\.(py|ts)$/, ""))
  return Option.fromNullable(
    scenarios.find((s, i) =>
      s.name === wanted || String(i + 1) === wanted || normalize(s.cookbook) === wanted ||
      s.aliases.some((a) => normalize(a) === wanted)
    )
  )
}

/**
 * A command-line mistake: the message is shown with the usage, and the exit
 * code is 1.
 *
 * @since 0.1.0
 * @category errors
 */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/**
 * A command that could not do its job (unknown session, missing file, …):
 * shown without the usage; exit code 1.
 *
 * @since 0.1.0
 * @category errors
 */
export class CommandError extends Data.TaggedError("CommandError")<{ readonly message: string }> {}

/**
 * @since 0.1.0
 * @category usage
 */
export const usage = `sessionflow — stateful, multi-step AI workflows on Effect: the seven seed scenarios

Usage:
  npm start                                   the guided demo (the shopping list; offline without a key)
  npm start -- list                           the scenarios, one line each
  npm start -- run <scenario> [options]       run one scenario (name, alias or number 1-7)
  npm start -- sessions list   --db <file> [--table <t>]
  npm start -- sessions show   --db <file> [--table <t>] <sessionId>
  npm start -- sessions rename --db <file> [--table <t>] <sessionId> <name>
  npm start -- sessions delete --db <file> [--table <t>] <sessionId>
  npm start -- help

Options:
  --db <file>      the SQLite file (run: default tmp/<scenario>.db)
  --table <name>   the session table (run: the scenario's default)
  --json           run (and the demo): every workflow event as one JSON line on stdout;
                   sessions list/show: print JSON
  --offline        use the scripted model even when OPENAI_API_KEY is set

Environment:
  OPENAI_API_KEY   use real OpenAI models (without it: an offline scripted model)
  OPENAI_BASE_URL  any OpenAI-compatible server (e.g. http://localhost:11434/v1)
  OPENAI_MODEL     the model id (default gpt-4o-mini)`

// -----------------------------------------------------------------------------
// arguments
// -----------------------------------------------------------------------------

/**
 * Parsed command-line arguments.
 *
 * @since 0.1.0
 * @category parsing
 */
export interface Args {
  readonly positionals: ReadonlyArray<string>
  readonly db: string | undefined
  readonly table: string | undefined
  readonly json: boolean
  readonly offline: boolean
  readonly help: boolean
}

const valueFlags = new Set(["db", "table"])
const booleanFlags = new Set(["json", "offline", "help"])

/**
 * Parses arguments by hand: `--flag value`, `--flag=value`, `-h`, and `--`
 * ending the options.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseArgs = (argv: ReadonlyArray<string>): Effect.Effect<Args, UsageError> =>
  Effect.suspend(() => {
    const positionals: Array<string> = []
    const values: Record<string, string> = {}
    const flags = new Set<string>()
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i]!
      if (arg === "--") {
        positionals.push(...argv.slice(i + 1))
        break
      }
      if (arg === "-h") {
        flags.add("help")
        continue
      }
      if (arg.startsWith("--")) {
        const eq = arg.indexOf("=")
        const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq)
        if (valueFlags.has(name)) {
          const value = eq === -1 ? argv[++i] : arg.slice(eq + 1)
          if (value === undefined || value === "" || (eq === -1 && value.startsWith("--"))) {
            return Effect.fail(new UsageError({ message: `--${name} needs a value` }))
          }
          values[name] = value
          continue
        }
        if (booleanFlags.has(name) && eq === -1) {
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
    return Effect.succeed({
      positionals,
      db: values.db,
      table: values.table,
      json: flags.has("json"),
      offline: flags.has("offline"),
      help: flags.has("help")
    })
  })

// -----------------------------------------------------------------------------
// commands
// -----------------------------------------------------------------------------

const listScenarios = Effect.gen(function*() {
  const width = Math.max(...scenarios.map((s) => s.name.length))
  yield* Output.say("The seven seed scenarios (npm start -- run <name>):\n")
  for (const [i, s] of scenarios.entries()) {
    yield* Output.say(`  ${i + 1}. ${s.name.padEnd(width)}  ${s.description}`)
  }
  yield* Output.say("\nAliases: the agno cookbook names (e.g. state_in_router) and the numbers work too.")
})

const runScenario = (args: Args) =>
  Effect.gen(function*() {
    const [, name, ...extra] = args.positionals
    if (name === undefined) {
      return yield* new UsageError({ message: `run: which scenario? (one of ${scenarios.map((s) => s.name).join(", ")})` })
    }
    if (extra.length > 0) return yield* new UsageError({ message: `run: unexpected argument '${extra[0]}'` })
    const found = findScenario(name)
    if (Option.isNone(found)) {
      return yield* new UsageError({
        message: `unknown scenario '${name}'. Known scenarios: ${scenarios.map((s) => s.name).join(", ")}`
      })
    }
    yield* found.value.main({ db: args.db, table: args.table, offline: args.offline })
  })

const guidedDemo = (args: Args) =>
  ShoppingList.main({ db: args.db, table: args.table, offline: args.offline, guided: true })

// sessions ---------------------------------------------------------------------

const openStore = (args: Args) =>
  Effect.gen(function*() {
    if (args.db === undefined) {
      return yield* new UsageError({ message: "sessions: --db <file> is required (e.g. --db tmp/shopping-list.db)" })
    }
    const db = args.db
    if (db !== ":memory:" && !fs.existsSync(db)) {
      return yield* new CommandError({ message: `no database file '${db}' (run a scenario first, e.g. npm start -- run shopping-list)` })
    }
    return SqliteSessionStore.layer(args.table === undefined ? { filename: db } : { filename: db, table: args.table })
  })

const date = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 19)

const oneLine = (u: unknown, max = 70): string => {
  const text = u === undefined || u === null ? "" : typeof u === "string" ? u : JSON.stringify(u)
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

const sessionsList = (args: Args) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const { broken, sessions } = yield* store.list({})
    for (const b of broken) yield* Output.error(`warning: session ${b.sessionId} cannot be read: ${b.error.description}`)
    if (args.json) {
      yield* Output.say(JSON.stringify(sessions.map((s) => ({ ...s })), null, 2))
      return
    }
    if (sessions.length === 0) {
      yield* Output.say(`No sessions in ${args.db}${args.table === undefined ? "" : ` (table ${args.table})`}.`)
      return
    }
    yield* Output.say(`${sessions.length} session${sessions.length === 1 ? "" : "s"} in ${args.db}:\n`)
    for (const s of sessions) {
      const runs = yield* store.runs(s.sessionId, {})
      yield* Output.say(`  ${s.sessionId}`)
      yield* Output.say(`     workflow: ${s.workflowName}${s.name === undefined ? "" : `   name: ${s.name}`}`)
      yield* Output.say(
        `     ${runs.length} run${runs.length === 1 ? "" : "s"}, version ${s.version}, updated ${date(s.updatedAt)}${
          s.userId === undefined ? "" : `, user ${s.userId}`
        }`
      )
    }
  })

const sessionArg = (args: Args, command: string) =>
  Effect.gen(function*() {
    const id = args.positionals[2]
    if (id === undefined) return yield* new UsageError({ message: `sessions ${command}: which session? (give its id)` })
    return id
  })

const loadOrFail = (args: Args, sessionId: string) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const stored = yield* store.load(sessionId)
    if (Option.isNone(stored)) {
      return yield* new CommandError({ message: `no session '${sessionId}' in ${args.db} (see: sessions list --db ${args.db})` })
    }
    return stored.value
  })

const sessionsShow = (args: Args) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const id = yield* sessionArg(args, "show")
    if (args.positionals.length > 3) return yield* new UsageError({ message: `sessions show: unexpected argument '${args.positionals[3]}'` })
    const session = yield* loadOrFail(args, id)
    const runs = yield* store.runs(id, {})
    if (args.json) {
      yield* Output.say(JSON.stringify({ ...session, runs }, null, 2))
      return
    }
    yield* Output.say(`Session ${session.sessionId}`)
    yield* Output.say(`  workflow: ${session.workflowName}`)
    yield* Output.say(`  name:     ${session.name ?? "(none)"}`)
    if (session.userId !== undefined) yield* Output.say(`  user:     ${session.userId}`)
    yield* Output.say(`  version:  ${session.version}`)
    yield* Output.say(`  created:  ${date(session.createdAt)}   updated: ${date(session.updatedAt)}`)
    yield* Output.say(`\nState:`)
    yield* Output.say(JSON.stringify(session.state, null, 2).split("\n").map((l) => `  ${l}`).join("\n"))
    yield* Output.say(`\nRuns (${runs.length}):`)
    for (const [i, run] of runs.entries()) {
      const mark = run.status === "completed" ? "✓" : run.status === "error" ? "✗" : "○"
      const took = ((run.completedAt - run.startedAt) / 1000).toFixed(1)
      yield* Output.say(`  ${i + 1}. ${mark} ${run.status.padEnd(9)} ${date(run.startedAt)}  ${took}s  run ${run.runId}`)
      yield* Output.say(`     » ${oneLine(run.input)}`)
      if (run.status === "completed") yield* Output.say(`     ↳ ${oneLine(run.content)}`)
      if (run.error !== undefined) yield* Output.say(`     ✗ ${oneLine(run.error)}`)
    }
  })

const sessionsRename = (args: Args) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const id = yield* sessionArg(args, "rename")
    const name = args.positionals.slice(3).join(" ").trim()
    if (name.length === 0) return yield* new UsageError({ message: "sessions rename: give the new name after the session id" })
    yield* loadOrFail(args, id)
    yield* store.setName(id, name)
    yield* Output.say(`Session ${id} is now named '${name}'.`)
  })

const sessionsDelete = (args: Args) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const id = yield* sessionArg(args, "delete")
    if (args.positionals.length > 3) return yield* new UsageError({ message: `sessions delete: unexpected argument '${args.positionals[3]}'` })
    const removed = yield* store.remove(id)
    if (!removed) return yield* new CommandError({ message: `no session '${id}' in ${args.db}` })
    yield* Output.say(`Deleted session ${id} and its run history.`)
  })

const sessions = (args: Args) =>
  Effect.gen(function*() {
    const sub = args.positionals[1]
    const command = sub === "list" || sub === "ls"
      ? sessionsList(args)
      : sub === "show"
      ? sessionsShow(args)
      : sub === "rename"
      ? sessionsRename(args)
      : sub === "delete" || sub === "rm"
      ? sessionsDelete(args)
      : undefined
    if (command === undefined) {
      return yield* new UsageError({
        message: sub === undefined
          ? "sessions: list, show, rename or delete?"
          : `unknown sessions command '${sub}' (use list, show, rename or delete)`
      })
    }
    const store = yield* openStore(args)
    yield* Effect.provide(command, store)
  })

/**
 * Runs the command line `argv` (without `node` and the script). Fails with
 * `UsageError` or `CommandError` for mistakes; other failures are the run's.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (argv: ReadonlyArray<string>): Effect.Effect<void, unknown> =>
  Effect.gen(function*() {
    const args = yield* parseArgs(argv)
    const output = yield* Output.Output
    const command = args.positionals[0]
    const program = args.help || command === "help"
      ? Output.say(usage)
      : command === undefined
      ? guidedDemo(args)
      : command === "list"
      ? listScenarios
      : command === "run"
      ? runScenario(args)
      : command === "sessions"
      ? sessions(args)
      : findScenario(command).pipe(Option.match({
        onNone: () => Effect.fail(new UsageError({ message: `unknown command '${command}'` })),
        onSome: () =>
          Effect.fail(new UsageError({ message: `unknown command '${command}' (did you mean: run ${command}?)` }))
      }))
    yield* program.pipe(
      Effect.provideService(Output.Output, {
        ...output,
        mode: args.json && (command === "run" || command === undefined) ? "json" : output.mode
      })
    )
  })

/**
 * `run`, reporting mistakes on stderr (with the usage for `UsageError`) and
 * setting the process exit code to 1 on any failure.
 *
 * @since 0.1.0
 * @category running
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<void> =>
  run(argv).pipe(
    Effect.catchAll((error) =>
      Effect.zipRight(
        error instanceof UsageError
          ? Output.error(`error: ${error.message}\n\n${usage}`)
          : error instanceof CommandError
          ? Output.error(`error: ${error.message}`)
          : Output.error(`error: ${describe(error)}`),
        Effect.sync(() => {
          process.exitCode = 1
        })
      )
    ),
    Effect.catchAllDefect((defect) =>
      Effect.zipRight(Output.error(`unexpected error: ${describe(defect)}`), Effect.sync(() => {
        process.exitCode = 1
      }))
    )
  )

const describe = WorkflowError.format
