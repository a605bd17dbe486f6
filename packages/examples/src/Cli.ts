/**
 * The `sessionflow` command line: runs the seven seed scenarios and the
 * approval scenario, inspects what they stored, and continues paused runs.
 *
 * ```sh
 * npm start                                  # the guided shopping-list demo
 * npm start -- list                          # the scenarios
 * npm start --silent -- run routers --json   # one scenario, events as JSON lines
 * npm start -- sessions show --db tmp/job_application_tracker.db job_tracker_demo
 * npm start -- runs continue <runId> --approve --db tmp/approval.db
 * ```
 *
 * `sessions …`, `state …` and `runs list` are the `sessionflow` command of
 * `@sessionflow/cli`, run in-process; `runs continue` needs the examples'
 * workflows, so it is here.
 *
 * @since 0.1.0
 */
import { Cli as SessionflowCli } from "@sessionflow/cli"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import { SessionStore } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as Approval from "./Approval.js"
import * as CustomExecutors from "./CustomExecutors.js"
import * as GreetingCondition from "./GreetingCondition.js"
import * as JobTracker from "./JobTracker.js"
import * as Output from "./Output.js"
import * as ProjectTeam from "./ProjectTeam.js"
import * as Routers from "./Routers.js"
import * as Scenario from "./Scenario.js"
import * as Serve from "./Serve.js"
import * as SessionNaming from "./SessionNaming.js"
import * as ShoppingList from "./ShoppingList.js"

/**
 * The scenarios: the seven of the seed, in its order, then the approval
 * scenario.
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
  SessionNaming.scenario,
  Approval.scenario
]

const normalize = (name: string) => name.trim().toLowerCase().replace(/[_\s.]+/g, "-")

/**
 * Finds a scenario by name, alias, agno cookbook name or number (1–8).
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
 * code is 1 (the `sessionflow` command's own class).
 *
 * @since 0.1.0
 * @category errors
 */
export const UsageError = SessionflowCli.UsageError

/**
 * @since 0.1.0
 * @category errors
 */
export type UsageError = SessionflowCli.UsageError

/**
 * A command that could not do its job (unknown session, missing file, …):
 * shown without the usage; exit code 1 (the `sessionflow` command's own
 * class).
 *
 * @since 0.1.0
 * @category errors
 */
export const CommandError = SessionflowCli.CommandError

/**
 * @since 0.1.0
 * @category errors
 */
export type CommandError = SessionflowCli.CommandError

/**
 * @since 0.1.0
 * @category usage
 */
export const usage = `sessionflow — stateful, multi-step AI workflows on Effect: the seven seed scenarios and approval

Usage:
  npm start                                   the guided demo (the shopping list; offline without a key)
  npm start -- list                           the scenarios, one line each
  npm start -- run <scenario> [options]       run one scenario (name, alias or number 1-8)
  npm start -- serve [--port <p>] [<database>]   every example workflow over HTTP, with a session browser
  npm start -- sessions list   <database> [--table <t>] [--json]
  npm start -- sessions show   <database> [--table <t>] [--json] <sessionId>
  npm start -- sessions rename <database> [--table <t>] <sessionId> <name>
  npm start -- sessions delete <database> [--table <t>] <sessionId>
  npm start -- state           <database> [--table <t>] [--json] <sessionId>
  npm start -- runs list       <database> [--table <t>] [--json]
  npm start -- runs continue   <database> [--table <t>] [--json] <runId> [--approve | --reject] [--reason <text>]
  npm start -- help

The database (run, serve: default the SQLite file tmp/<scenario>.db, tmp/server.db):
  --db <file>      a SQLite file
  --url <url>      a PostgreSQL URL (postgres://user:password@host:5432/database); without
                   --db or --url, the URL in SESSIONFLOW_DATABASE_URL, if set
  --schema <name>  with --url: the schema of the tables (default: the search_path)

Options:
  --port <p>       serve: the port (default 3000; 0 picks a free one)
  --table <name>   the session table (run: the scenario's default)
  --json           run, runs continue (and the demo): every workflow event as one JSON line
                   on stdout; sessions, state and runs list: print JSON
  --offline        use the scripted model even when OPENAI_API_KEY is set
  --approve, --reject [--reason <text>]
                   runs continue: the answer to a paused run's approval question (without
                   them, and without --json, the question is asked on the terminal: y/n)
  --response <json>
                   runs continue: any other answer, as JSON

A run that pauses for approval (npm start -- run approval) asks y/n on the terminal;
with --json it ends with a RunPaused line (its runId), and any later process
continues it: npm start -- runs continue <runId> --approve --db <file> (or --url <url>).

For JSON on stdout without npm's banner: npm start --silent -- run team --json | jq .
sessions, state and runs list are the sessionflow command (npx sessionflow help),
which works on any sessionflow SQLite file or PostgreSQL database and never creates
or migrates tables.

Environment:
  SESSIONFLOW_DATABASE_URL  the PostgreSQL URL used without --db and --url
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
  /** `--db <file>`, `--url <url>`, or (without either) the URL in `SESSIONFLOW_DATABASE_URL` */
  readonly database: SessionflowCli.Database | undefined
  readonly schema: string | undefined
  readonly table: string | undefined
  readonly port: string | undefined
  readonly json: boolean
  readonly offline: boolean
  readonly help: boolean
  readonly approve: boolean
  readonly reject: boolean
  readonly reason: string | undefined
  readonly response: string | undefined
}

/** The scenario options naming the database the command line chose. */
const databaseOptions = (args: Args) =>
  args.database === undefined
    ? {}
    : args.database._tag === "Sqlite"
    ? { db: args.database.filename }
    : { url: args.database.url, schema: args.schema }

/**
 * Parses arguments by hand: `--flag value`, `--flag=value`, `-h`, and `--`
 * ending the options.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseArgs = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>> = process.env
): Effect.Effect<Args, UsageError> =>
  Effect.flatMap(
    SessionflowCli.parseCommandLine(argv, {
      values: ["db", "url", "schema", "table", "port", "reason", "response"],
      flags: ["json", "offline", "help", "approve", "reject"]
    }),
    (line) =>
      Effect.map(SessionflowCli.chooseDatabase({ db: line.values.get("db"), url: line.values.get("url") }, env), (database) => ({
      positionals: line.positionals,
      database,
      schema: line.values.get("schema"),
      table: line.values.get("table"),
      port: line.values.get("port"),
      json: line.flags.has("json"),
      offline: line.flags.has("offline"),
      help: line.flags.has("help"),
      approve: line.flags.has("approve"),
      reject: line.flags.has("reject"),
      reason: line.values.get("reason"),
      response: line.values.get("response")
    }))
  )

// -----------------------------------------------------------------------------
// commands
// -----------------------------------------------------------------------------

const listScenarios = Effect.gen(function*() {
  const width = Math.max(...scenarios.map((s) => s.name.length))
  yield* Output.say("The scenarios (npm start -- run <name>): the seven of the seed, and approval\n")
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
    yield* found.value.main({ ...databaseOptions(args), table: args.table, offline: args.offline })
  })

/** The answer `runs continue` was given on the command line, if any. */
const givenResponse = (args: Args): Effect.Effect<unknown, UsageError> =>
  Effect.suspend(() => {
    const given = [args.approve, args.reject, args.response !== undefined].filter(Boolean).length
    if (given > 1) return Effect.fail(new UsageError({ message: "runs continue: give one of --approve, --reject and --response" }))
    if (args.reason !== undefined && !args.approve && !args.reject) {
      return Effect.fail(new UsageError({ message: "runs continue: --reason goes with --approve or --reject" }))
    }
    if (args.response !== undefined) {
      try {
        return Effect.succeed(JSON.parse(args.response))
      } catch {
        return Effect.fail(new UsageError({ message: `runs continue: --response is not JSON: ${args.response}` }))
      }
    }
    if (!args.approve && !args.reject) return Effect.succeed(undefined)
    return Effect.succeed({ approved: args.approve, ...(args.reason === undefined ? {} : { reason: args.reason }) })
  })

/**
 * `runs continue <runId>`: finds the paused run in `--db`, the example
 * workflow it belongs to, and continues it with the answer given (or asked on
 * the terminal), showing its events; it may pause again.
 */
const continueRun = (args: Args) =>
  Effect.gen(function*() {
    const [, , runId, ...extra] = args.positionals
    if (runId === undefined) {
      return yield* new UsageError({ message: "runs continue: which run? (its id: the RunPaused event's runId, or see runs list)" })
    }
    if (extra.length > 0) return yield* new UsageError({ message: `runs continue: unexpected argument '${extra[0]}'` })
    const response = yield* givenResponse(args)
    if (response === undefined && args.json) {
      return yield* new UsageError({ message: "runs continue --json: give the answer (--approve, --reject or --response <json>)" })
    }
    const database = args.database
    if (database === undefined) {
      return yield* new UsageError({
        message: "runs continue: --db <file> or --url <url> is required (the SQLite file or PostgreSQL database the run is in)"
      })
    }
    if (database._tag === "Sqlite" && !fs.existsSync(database.filename)) {
      return yield* new CommandError({ message: `no database file '${database.filename}'` })
    }
    const db = SessionflowCli.describeDatabase(database)
    const dbOption = SessionflowCli.databaseOption(database)
    return yield* Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const found = yield* store.getRun(runId)
      if (Option.isNone(found) || found.value._tag !== "Active" || found.value.run.status !== "paused") {
        const why = Option.isSome(found)
          ? found.value._tag === "Recorded" ? `: it has ended (${found.value.record.status})` : ": it is running, not paused"
          : ` (see: npm start -- runs list ${dbOption})`
        return yield* new CommandError({ message: `no paused run '${runId}' in ${db}${why}` })
      }
      const run = found.value.run
      const owner = scenarios.flatMap((scenario) => scenario.workflows.map((workflow) => ({ scenario, workflow })))
        .find(({ workflow }) => workflow.name === run.workflowName)
      if (owner === undefined) {
        return yield* new CommandError({ message: `run '${runId}' belongs to workflow '${run.workflowName}', which no example defines` })
      }
      const { scenario, workflow } = owner
      let answer = response
      if (answer === undefined) {
        const asked = yield* Scenario.askApproval(run.pause?.payload)
        if (Option.isNone(asked)) return yield* Output.note("No answer: the run stays paused.")
        answer = asked.value
      }
      const given = answer
      // a scenario's workflows need its layer, a model and a store (the Scenario contract)
      const continued = Effect.flatMap(
        Scenario.continueShown(workflow, runId, given),
        (paused) => Scenario.answerPauses(workflow, paused, dbOption)
      ) as Effect.Effect<boolean, unknown, LanguageModel.LanguageModel | SessionStore.SessionStore>
      yield* continued.pipe(Scenario.withModel(scenario, { offline: args.offline }))
    }).pipe(Effect.provide(Scenario.storeLayer({ ...databaseOptions(args), table: args.table }, db)))
  }).pipe(Output.withConsole)

/**
 * What `npm start` explains around the shopping list's runs.
 *
 * @since 0.1.0
 * @category scenarios
 */
export const demoGuide: Scenario.Guide = {
  intro: (db) =>
    `
sessionflow — stateful multi-step AI workflows on Effect

This demo ports agno's state_with_agent cookbook: a workflow of two agent steps
(manage_items → view_list) whose tools read and write one shopping list kept in the
session state. Four runs on one session, persisted to ${db}.`,
  notes: [
    "Two agents share one typed session state. Watch the tool calls (🔧) change it (Δ).",
    "A new run on the same session: the state was loaded from SQLite, so milk, bread and eggs are still there.",
    "remove_item matches case-insensitively and reports the stored spelling.",
    "Only the List Manager has remove_all_items: the assistant hands over, the manager clears."
  ],
  outro: "More: npm start -- list   (eight scenarios)   ·   npm start -- help"
}

const serve = (args: Args) =>
  Effect.gen(function*() {
    const port = args.port === undefined ? undefined : Number(args.port)
    if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port < 65536)) {
      return yield* new UsageError({ message: `serve: --port must be a port number, not '${args.port}'` })
    }
    if (args.positionals.length > 1) return yield* new UsageError({ message: `serve: unexpected argument '${args.positionals[1]}'` })
    yield* Serve.main({ port, ...databaseOptions(args), offline: args.offline })
  })

const guidedDemo = (args: Args) =>
  ShoppingList.main({ ...databaseOptions(args), table: args.table, offline: args.offline, guide: demoGuide })

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
      : command === "serve"
      ? serve(args)
      : command === "runs" && args.positionals[1] === "continue"
      ? continueRun(args)
      : command === "sessions" || command === "state" || command === "runs"
      ? Output.withConsole(SessionflowCli.run(argv))
      : findScenario(command).pipe(Option.match({
        onNone: () => Effect.fail(new UsageError({ message: `unknown command '${command}'` })),
        onSome: () =>
          Effect.fail(new UsageError({ message: `unknown command '${command}' (did you mean: run ${command}?)` }))
      }))
    yield* program.pipe(
      Effect.provideService(Output.Output, {
        ...output,
        mode: args.json && (command === "run" || command === undefined || (command === "runs" && args.positionals[1] === "continue"))
          ? "json"
          : output.mode
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
    // questions (a paused run's approval) are answered on the terminal
    Output.withStdin,
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

const describe = SessionflowCli.describeError
