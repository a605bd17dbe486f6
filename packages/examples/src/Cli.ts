/**
 * The examples' command line (`npm start`): runs the seven seed scenarios and
 * the approval scenario, inspects what they stored, and continues paused runs.
 *
 * ```sh
 * npm start                                  # the guided shopping-list demo
 * npm start -- list                          # the scenarios
 * npm start --silent -- run routers --json   # one scenario, events as JSON lines
 * npm start -- sessions show --db tmp/job_application_tracker.db job_tracker_demo
 * npm start -- runs continue <runId> --pause <key> --approve --db tmp/approval.db
 * npm start -- run team --trace console     # the run's spans, a tree on stderr
 * ```
 *
 * The commands are declared with `@effect/cli`. `sessions …`, `state …` and
 * `runs list` are the commands of `@sessionflow/cli` (`sessionflow`); `runs
 * continue` needs the examples' workflows, so it is here.
 *
 * @since 0.1.0
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import { Cli as SessionflowCli, CommandLine } from "@sessionflow/cli"
import { SessionStore } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as internal from "./internal/scenarios.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"
import * as Serve from "./Serve.js"
import * as ShoppingList from "./ShoppingList.js"
import * as Tracing from "./Tracing.js"

/**
 * The scenarios: the seven of the seed, in its order, then the approval
 * scenario.
 *
 * @since 0.1.0
 * @category scenarios
 */
export const scenarios: ReadonlyArray<Scenario.Scenario> = internal.scenarios

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
 * A command-line mistake: one line on stderr with a hint to the command's
 * `--help`, and exit code 1 (the `sessionflow` command's own class).
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
 * exit code 1 (the `sessionflow` command's own class).
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

// -----------------------------------------------------------------------------
// options
// -----------------------------------------------------------------------------

const offline = Options.boolean("offline").pipe(
  Options.withDescription("use the scripted model even when OPENAI_API_KEY is set")
)

const events = Options.boolean("json").pipe(
  Options.withDescription("every workflow event as one JSON line on stdout (the rest goes to stderr)")
)

/** What the database options give, as a scenario's options. */
const scenarioOptions = (
  command: string,
  options: SessionflowCli.DatabaseOptions & { readonly offline: boolean }
) =>
  Effect.map(
    Effect.mapError(SessionflowCli.chooseDatabase(options), (error) =>
      new UsageError({ message: error.message, command })),
    (database) => ({
      ...(database === undefined
        ? {}
        : database._tag === "Sqlite"
        ? { db: database.filename }
        : { url: database.url, schema: options.schema }),
      table: options.table,
      offline: options.offline
    })
  )

const trace = Options.choice("trace", ["console", "otlp"]).pipe(
  Options.withDescription(
    "export the runs' spans: console (a tree per trace on stderr) or otlp " +
      "(to OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318)"
  ),
  Options.optional,
  Options.map(Option.getOrUndefined)
)

/** Runs `self` with its spans exported (see `Tracing.ts`) when `--trace` was given. */
const traced = (exporter: Tracing.Exporter | undefined) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  exporter === undefined ? self : Effect.provide(self, Tracing.layer({ exporter, serviceName: "sessionflow-examples" }))

/** Runs `self` with the workflow events as JSON lines on stdout when `json`. */
const eventsAsJson = (json: boolean) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  json
    ? Effect.flatMap(Output.Output, (output) => Effect.provideService(self, Output.Output, { ...output, mode: "json" }))
    : self

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

const list = Command.make("list", {}, () => listScenarios).pipe(Command.withDescription("the scenarios, one line each"))

const runScenario = Command.make(
  "run",
  {
    ...SessionflowCli.databaseOptions,
    json: events,
    offline,
    trace,
    scenario: Args.text({ name: "scenario" }).pipe(Args.withDescription("a scenario's name, alias or number (1-8)"))
  },
  (options) =>
    Effect.gen(function*() {
      const found = findScenario(options.scenario)
      if (Option.isNone(found)) {
        return yield* new UsageError({
          message: `unknown scenario '${options.scenario}'. Known scenarios: ${
            scenarios.map((s) => s.name).join(", ")
          }`,
          command: "run"
        })
      }
      yield* found.value.main(yield* scenarioOptions("run", options)).pipe(traced(options.trace))
    }).pipe(eventsAsJson(options.json))
).pipe(Command.withDescription("run one scenario (default database: the SQLite file tmp/<scenario>.db)"))

const serve = Command.make(
  "serve",
  {
    ...SessionflowCli.databaseOptions,
    offline,
    port: Options.text("port").pipe(
      Options.withPseudoName("port"),
      Options.withDescription("the port (default 3000; 0 picks a free one)"),
      Options.optional
    ),
    host: Options.text("host").pipe(
      Options.withPseudoName("host"),
      Options.withDescription("the address to listen on (default 127.0.0.1)"),
      Options.optional
    ),
    token: Options.text("token").pipe(
      Options.withPseudoName("token"),
      Options.withDescription(`the bearer token every request must send (default: ${Serve.tokenVariable})`),
      Options.optional
    ),
    allowOpen: Options.boolean("allow-open").pipe(
      Options.withDescription("listen on a non-loopback --host without a token")
    ),
    trace
  },
  (options) =>
    Effect.gen(function*() {
      const given = Option.getOrUndefined(options.port)
      const port = given === undefined ? undefined : Number(given)
      if (port !== undefined && !(given !== "" && Number.isInteger(port) && port >= 0 && port < 65536)) {
        return yield* new UsageError({
          message: `serve: --port must be a port number, not '${given}'`,
          command: "serve"
        })
      }
      const { table: _table, ...database } = yield* scenarioOptions("serve", options)
      yield* Serve.main({
        port,
        host: Option.getOrUndefined(options.host),
        token: Option.getOrUndefined(options.token),
        allowOpen: options.allowOpen,
        ...database
      }).pipe(traced(options.trace))
    })
).pipe(
  Command.withDescription("every example workflow over HTTP, with a session browser (default database: tmp/server.db)")
)

/** The answer `runs continue` was given on the command line, if any. */
const givenResponse = (
  options: {
    readonly approve: boolean
    readonly reject: boolean
    readonly reason: string | undefined
    readonly response: string | undefined
  }
): Effect.Effect<unknown, UsageError> =>
  Effect.suspend(() => {
    const fail = (message: string) =>
      Effect.fail(new UsageError({ message: `runs continue: ${message}`, command: "runs continue" }))
    const given = [options.approve, options.reject, options.response !== undefined].filter(Boolean).length
    if (given > 1) return fail("give one of --approve, --reject and --response")
    if (options.reason !== undefined && !options.approve && !options.reject) {
      return fail("--reason goes with --approve or --reject")
    }
    if (options.response !== undefined) {
      try {
        return Effect.succeed(JSON.parse(options.response))
      } catch {
        return fail(`--response is not JSON: ${options.response}`)
      }
    }
    if (!options.approve && !options.reject) return Effect.succeed(undefined)
    return Effect.succeed({
      approved: options.approve,
      ...(options.reason === undefined ? {} : { reason: options.reason })
    })
  })

const isId = Schema.is(SessionStore.Id)
const idRule = `1 to ${SessionStore.maxIdLength} characters, no control characters`

const text = (name: string, description: string) =>
  Options.text(name).pipe(Options.withDescription(description), Options.optional, Options.map(Option.getOrUndefined))

/** How a run ended, with what its record says went wrong (a failed run's error). */
const ended = (record: SessionStore.RunRecord) =>
  record.error === undefined || record.error === record.status ? record.status : `${record.status}: ${record.error}`

/**
 * `runs continue <runId>`: finds the paused run in `--db`, the example
 * workflow it belongs to, and continues it with the answer given (or asked on
 * the terminal), showing its events; it may pause again.
 */
const continueRun = Command.make(
  "continue",
  {
    ...SessionflowCli.databaseOptions,
    json: events,
    offline,
    approve: Options.boolean("approve").pipe(Options.withDescription("approve the paused run's request")),
    reject: Options.boolean("reject").pipe(Options.withDescription("reject it")),
    reason: text("reason", "why (with --approve or --reject)"),
    response: text("response", "any other answer, as JSON"),
    pause: text(
      "pause",
      "the pause answered (the RunPaused event's key, or see runs list): the " +
        "answer is taken only while the run waits there; required with --json"
    ),
    runId: Args.text({ name: "runId" }).pipe(
      Args.withDescription("the paused run (the RunPaused event's runId, or see runs list)"),
      Args.optional
    )
  },
  (options) =>
    Effect.gen(function*() {
      const command = "runs continue"
      const runId = Option.getOrUndefined(options.runId)
      if (runId === undefined) {
        return yield* new UsageError({
          message: "runs continue: which run? (its id: the RunPaused event's runId, or see runs list)",
          command
        })
      }
      if (!isId(runId)) {
        return yield* new UsageError({
          message: `runs continue: ${JSON.stringify(runId)} is not a run id (${idRule})`,
          command
        })
      }
      const response = yield* givenResponse(options)
      if (response === undefined && options.json) {
        return yield* new UsageError({
          message: "runs continue --json: give the answer (--approve, --reject or --response <json>)",
          command
        })
      }
      if (options.pause === undefined && options.json) {
        return yield* new UsageError({
          message: "runs continue --json: name the pause answered (--pause " +
            "<key>: the RunPaused event's key, or see runs list)",
          command
        })
      }
      const database = yield* Effect.mapError(
        SessionflowCli.chooseDatabase(options),
        (error) => new UsageError({ message: error.message, command })
      )
      if (database === undefined) {
        return yield* new UsageError({
          message: "runs continue: --db <file> or --url <url> is required " +
            "(the SQLite file or PostgreSQL database the run is in)",
          command
        })
      }
      if (database._tag === "Sqlite" && !fs.existsSync(database.filename)) {
        return yield* new CommandError({ message: `no database file '${database.filename}'` })
      }
      const db = SessionflowCli.describeDatabase(database)
      const dbOption = Scenario.databaseOption(database, options.schema)
      const scenarioDb = yield* scenarioOptions(command, options)
      return yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const found = yield* store.getRun(runId)
        if (Option.isNone(found) || found.value._tag !== "Active" || found.value.run.status !== "paused") {
          const why = Option.isSome(found)
            ? found.value._tag === "Recorded"
              ? `: it has ended (${ended(found.value.record)})`
              : ": it is running, not paused"
            : ` (see: npm start -- runs list ${dbOption})`
          return yield* new CommandError({ message: `no paused run '${runId}' in ${db}${why}` })
        }
        const run = found.value.run
        const owner = scenarios.flatMap((scenario) => scenario.workflows.map((workflow) => ({ scenario, workflow })))
          .find(({ workflow }) => workflow.name === run.workflowName)
        if (owner === undefined) {
          return yield* new CommandError({
            message: `run '${runId}' belongs to workflow '${run.workflowName}', which no example defines`
          })
        }
        const { scenario, workflow } = owner
        // the pause named, else the one whose question is shown here
        const pause = options.pause ?? run.pause?.key ?? ""
        let answer = response
        if (answer === undefined) {
          const asked = yield* Scenario.askApproval(run.pause?.payload)
          if (Option.isNone(asked)) return yield* Output.note("No answer: the run stays paused.")
          answer = asked.value
        }
        const given = answer
        // a scenario's workflows need its layer, a model and a store (the Scenario contract)
        const continued = Effect.flatMap(
          Scenario.continueShown(workflow, runId, given, pause),
          (paused) => Scenario.answerPauses(workflow, paused, dbOption)
        ) as Effect.Effect<boolean, unknown, LanguageModel.LanguageModel | SessionStore.SessionStore>
        yield* continued.pipe(Scenario.withModel(scenario, { offline: options.offline }))
      }).pipe(Effect.provide(Scenario.storeLayer(scenarioDb, db)))
    }).pipe(Output.withConsole, eventsAsJson(options.json))
).pipe(
  Command.withDescription(
    "continue a paused run at a pause (--pause <key>, required with --json): --approve or " +
      "--reject [--reason <text>], or --response <json>; without them (and without --json) " +
      "the question is asked on the terminal (y/n) and the answer is for that question"
  )
)

const runsCommands = [SessionflowCli.runsListCommand, continueRun] as const

const sessionsCommands = [
  SessionflowCli.sessionsListCommand,
  SessionflowCli.sessionsShowCommand,
  SessionflowCli.sessionsRenameCommand,
  SessionflowCli.sessionsDeleteCommand
] as const

/**
 * What `npm start` explains around the shopping list's runs.
 *
 * @since 0.1.0
 * @category scenarios
 */
export const demoGuide: Scenario.Guide = {
  intro: (db) => `
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
  outro: "More: npm start -- list   (eight scenarios)   ·   npm start -- --help"
}

const program = "npm start --"

const version: string = createRequire(import.meta.url)("../package.json").version

/** A command that only groups others: alone, it asks which of them. */
const group = (name: string, description: string) =>
  Command.make(name, {}, () => Effect.fail(CommandLine.whichCommand(tree, [name]))).pipe(
    Command.withDescription(description)
  )

/** The commands under the top level. */
const subcommands = [
  list,
  runScenario,
  serve,
  group("sessions", "list, show, rename or delete sessions (the sessionflow command)").pipe(
    Command.withSubcommands(sessionsCommands)
  ),
  SessionflowCli.stateCommand,
  group("runs", "the unfinished runs, and continuing a paused one").pipe(Command.withSubcommands(runsCommands)),
  CommandLine.helpCommand
] as const

/**
 * The examples' command, declared with `@effect/cli`: without a command, the
 * guided demo (the shopping list); `list`, `run`, `serve`, the `sessionflow`
 * commands, and `runs continue`.
 *
 * @since 0.1.0
 * @category commands
 */
export const command = Command.make(
  program,
  { ...SessionflowCli.databaseOptions, json: events, offline },
  (options) =>
    Effect.flatMap(
      scenarioOptions("", options),
      (scenario) => ShoppingList.main({ ...scenario, guide: demoGuide })
    ).pipe(eventsAsJson(options.json))
).pipe(
  Command.withDescription(HelpDoc.blocks([
    HelpDoc.p(
      "sessionflow — stateful, multi-step AI workflows on Effect: the seven seed scenarios and " +
        "approval. Without a command: the guided demo (the shopping list; offline without a key)."
    ),
    HelpDoc.p(
      "The database: --db <file> (a SQLite file), or --url <url> (PostgreSQL, with --schema <name>); without " +
        "either, the URL in SESSIONFLOW_DATABASE_URL, else run and serve use tmp/<scenario>.db and tmp/server.db."
    ),
    HelpDoc.p(
      "A run that pauses for approval (run approval) asks y/n on the terminal; with " +
        "--json it ends with a RunPaused line (its runId), and any later process continues " +
        "it: npm start -- runs continue <runId> --pause <key> --approve --db <file>."
    ),
    HelpDoc.p("For JSON on stdout without npm's banner: npm start --silent -- run team --json | jq ."),
    HelpDoc.p(
      "Environment: OPENAI_API_KEY uses real OpenAI models (without it: an offline scripted model); " +
        "OPENAI_BASE_URL any OpenAI-compatible server; OPENAI_MODEL the model id (default gpt-4o-mini)."
    )
  ])),
  Command.withSubcommands(subcommands)
)

const tree: CommandLine.Tree = {
  ...CommandLine.leaves(list, runScenario, serve),
  sessions: CommandLine.leaves(...sessionsCommands),
  ...CommandLine.leaves(SessionflowCli.stateCommand),
  runs: CommandLine.leaves(...runsCommands),
  ...CommandLine.leaves(CommandLine.helpCommand)
}

/**
 * The same commands under a top level without options of its own: with a
 * command given, its options (`--db`, `--url`, …) are that command's, and one
 * it does not take is a mistake rather than the guided demo's option, unused.
 */
const commands = Command.make(program, {}, () => Effect.fail(CommandLine.whichCommand(tree, []))).pipe(
  Command.withSubcommands(subcommands)
)

const valueOptions = [...SessionflowCli.commandLineOptions.valueOptions, "--port", "--reason", "--response"]

/**
 * `argv` with the options before its command moved after the command's
 * words (`--db x sessions list` → `sessions list --db x`), or undefined when
 * it names no command (the guided demo).
 */
const commandFirst = (argv: ReadonlyArray<string>): ReadonlyArray<string> | undefined => {
  let at = 0
  while (at < argv.length && argv[at]!.startsWith("-") && argv[at] !== "--") {
    at += valueOptions.includes(argv[at]!) ? 2 : 1
  }
  let node = tree
  let end = at
  while (end < argv.length && node[argv[end]!] !== undefined) node = node[argv[end++]!]!
  return end === at ? undefined : [...argv.slice(at, end), ...argv.slice(0, at), ...argv.slice(end)]
}

/**
 * Runs the command line `argv` (without `node` and the script). Fails with
 * `UsageError` or `CommandError` for mistakes; other failures are the run's.
 * The database options go to the command they are given with, before or
 * after its name; a command that reads no database (`list`, `help`) refuses
 * them.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (argv: ReadonlyArray<string>): Effect.Effect<void, unknown> => {
  const given = commandFirst(argv)
  const options: CommandLine.Options = {
    name: program,
    version,
    tree,
    valueOptions,
    flags: [...SessionflowCli.commandLineOptions.flags, "--offline", "--approve", "--reject"],
    unknownCommand: (word) => Option.isSome(findScenario(word)) ? `did you mean 'run ${word}'?` : undefined
  }
  return Output.withConsole(
    given === undefined ? CommandLine.run(command, options)(argv) : CommandLine.run(commands, options)(given)
  )
}

/**
 * `run`, reporting mistakes as one line on stderr (a usage mistake with a
 * hint to the command's `--help`) and setting the process exit code to 1 on
 * any failure.
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
          ? Output.error(`error: ${error.message} ${CommandLine.hint(program, error)}`)
          : error instanceof CommandError
          ? Output.error(`error: ${error.message}`)
          : Output.error(`error: ${SessionflowCli.describeError(error)}`),
        Effect.sync(() => {
          process.exitCode = 1
        })
      )
    ),
    Effect.catchAllDefect((defect) =>
      Effect.zipRight(
        Output.error(`unexpected error: ${SessionflowCli.describeError(defect)}`),
        Effect.sync(() => {
          process.exitCode = 1
        })
      )
    )
  )
