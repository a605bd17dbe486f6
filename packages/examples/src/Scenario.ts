/**
 * What every example shares: its options, the choice between a real OpenAI
 * model and the offline scripted one, the SQLite store under `tmp/`, the
 * answering of a paused run's questions, and the index entry of a scenario
 * ({@link make}: its workflows, offline model and `main`).
 *
 * @since 0.1.0
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import { Cli as SessionflowCli } from "@sessionflow/cli"
import { Agent, type SessionStore, Workflow, type WorkflowError, type WorkflowEvent } from "@sessionflow/core"
import { OpenAIChat } from "@sessionflow/openai"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Output from "./Output.js"

/**
 * Options every scenario's `main` accepts.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** the SQLite file (default `tmp/<scenario>.db`) */
  readonly db?: string | undefined
  /** a PostgreSQL URL: the sessions go there instead of the SQLite file */
  readonly url?: string | undefined
  /** the PostgreSQL schema (with `url`; default: the search_path) */
  readonly schema?: string | undefined
  /** the session table (default: the store's, or the scenario's) */
  readonly table?: string | undefined
  /** use the scripted model even when `OPENAI_API_KEY` is set */
  readonly offline?: boolean | undefined
  /** use this model instead (tests) */
  readonly model?: Layer.Layer<LanguageModel.LanguageModel> | undefined
  /** an explicit store instead of the SQLite file (tests) */
  readonly store?: Layer.Layer<SessionStore.SessionStore> | undefined
  /** what to explain around the runs (the `npm start` demo) */
  readonly guide?: Guide | undefined
}

/**
 * What a guided demo explains: an introduction (given the SQLite file) and a
 * closing remark, which {@link make} prints around the runs, and a note the
 * scenario shows under each run's heading.
 *
 * @since 0.1.0
 * @category models
 */
export interface Guide {
  readonly intro: (db: string) => string
  readonly notes: ReadonlyArray<string>
  readonly outro: string
}

/**
 * The model used when `OPENAI_MODEL` is not set.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultModel = "gpt-4o-mini"

/**
 * The line printed first in offline mode.
 *
 * @since 0.1.0
 * @category constants
 */
export const offlineBanner = "Offline mode: no OPENAI_API_KEY set, using a scripted model."

const optionalString = (name: string) =>
  Config.string(name).pipe(Config.option, Config.map(Option.filter((s) => s.trim().length > 0)))

/**
 * Picks the model, announcing the choice on the first line: OpenAI (Chat
 * Completions, `OPENAI_MODEL`, `OPENAI_BASE_URL` honoured) when
 * `OPENAI_API_KEY` is set, else the scenario's scripted model.
 *
 * @since 0.1.0
 * @category models
 */
export const chooseModel = (
  offline: Layer.Layer<LanguageModel.LanguageModel>,
  options: Options
): Effect.Effect<Layer.Layer<LanguageModel.LanguageModel, unknown>> =>
  Effect.gen(function*() {
    if (options.model !== undefined) return options.model
    const key = yield* Effect.orElseSucceed(optionalString("OPENAI_API_KEY"), () => Option.none<string>())
    if (options.offline === true || Option.isNone(key)) {
      yield* Output.note(options.offline === true ? "Offline mode: using a scripted model." : offlineBanner)
      return offline
    }
    const model = Option.getOrElse(
      yield* Effect.orElseSucceed(optionalString("OPENAI_MODEL"), () => Option.none<string>()),
      () => defaultModel
    )
    const baseUrl = yield* Effect.orElseSucceed(optionalString("OPENAI_BASE_URL"), () => Option.none<string>())
    yield* Output.note(
      `Using OpenAI model ${model}${Option.match(baseUrl, { onNone: () => "", onSome: (u) => ` at ${u}` })}.`
    )
    return OpenAIChat.model(model)
  })

/**
 * The SQLite file a scenario uses by default.
 *
 * @since 0.1.0
 * @category stores
 */
export const defaultDb = (scenario: string): string => path.join("tmp", `${scenario}.db`)

/**
 * The database `options` name: PostgreSQL at `options.url`, else SQLite at
 * `options.db` (else `fallbackDb`).
 *
 * @since 0.1.0
 * @category stores
 */
export const database = (options: Options, fallbackDb: string): SessionflowCli.Database =>
  options.url !== undefined
    ? { _tag: "Postgres", url: options.url }
    : { _tag: "Sqlite", filename: options.db ?? fallbackDb }

/**
 * The store: `options.store`, else PostgreSQL at `options.url`, else SQLite at
 * `options.db` (else `fallbackDb`), creating the file's directory.
 *
 * @since 0.1.0
 * @category stores
 */
export const storeLayer = (
  options: Options,
  fallbackDb: string,
  fallbackTable?: string
): Layer.Layer<SessionStore.SessionStore, unknown> => {
  if (options.store !== undefined) return options.store
  const chosen = database(options, fallbackDb)
  const table = options.table ?? fallbackTable
  return Layer.unwrapEffect(Effect.sync(() => {
    if (chosen._tag === "Sqlite" && chosen.filename !== ":memory:") {
      fs.mkdirSync(path.dirname(path.resolve(chosen.filename)), { recursive: true })
    }
    return SessionflowCli.storeLayer(chosen, { table, schema: options.schema })
  }))
}

/**
 * Continues a paused run with `response` to `pause` (the key of the pause it
 * answers: `PauseMismatch` when the run no longer waits there), showing its
 * events as they happen; returns its next pause, if it paused again.
 *
 * @since 0.1.0
 * @category running
 */
export const continueShown = <W extends Workflow.Any>(
  workflow: W,
  runId: string,
  response: unknown,
  pause: string
): Effect.Effect<
  WorkflowEvent.RunPaused | undefined,
  Exclude<Workflow.Error<W> | Workflow.ContinueError, WorkflowError.RunPaused>,
  Workflow.Context<W> | SessionStore.SessionStore
> => Output.print(Workflow.continueStream(workflow, runId, response, { pause }))

/**
 * The question of a pause in a few words: "record_expense({…}) by Expense
 * Assistant" for an agent's tool approval.
 *
 * @since 0.1.0
 * @category running
 */
export const questionText = (payload: unknown): string =>
  Schema.is(Agent.ApprovalRequest)(payload)
    ? `${payload.tool}(${JSON.stringify(payload.arguments)}), called by ${payload.agent}`
    : JSON.stringify(payload)

/**
 * Asks a person on the terminal to approve or reject (y/n; after n, an
 * optional reason): the `Agent.ApprovalResponse`, or none when the input
 * ended without an answer.
 *
 * @since 0.1.0
 * @category running
 */
export const askApproval = (payload: unknown): Effect.Effect<Option.Option<Agent.ApprovalResponse>> =>
  Effect.gen(function*() {
    while (true) {
      const answer = yield* Output.ask(`Approve ${questionText(payload)}? [y/n] `)
      if (Option.isNone(answer)) return Option.none()
      const word = answer.value.trim().toLowerCase()
      if (word === "y" || word === "yes") return Option.some({ approved: true })
      if (word === "n" || word === "no") {
        const reason = Option.map(yield* Output.ask("Reason (optional): "), (r) => r.trim())
        return Option.some(Option.match(Option.filter(reason, (r) => r.length > 0), {
          onNone: () => ({ approved: false }),
          onSome: (r) => ({ approved: false, reason: r })
        }))
      }
      yield* Output.note("Please answer y or n.")
    }
  })

/**
 * The options naming a database in the commands an example prints:
 * `--db <file>`, or `--url <url>` (without its password) followed by
 * `--schema <name>` when the tables are in that schema.
 *
 * @since 0.1.0
 * @category running
 */
export const databaseOption = (database: SessionflowCli.Database, schema: string | undefined): string =>
  database._tag === "Postgres" && schema !== undefined
    ? `${SessionflowCli.databaseOption(database)} --schema ${schema}`
    : SessionflowCli.databaseOption(database)

/**
 * What to type to continue a paused run later (`runs continue`, on the same
 * database: `dbOption` is `--db <file>`, or `--url <url>` with its `--schema`).
 *
 * @since 0.1.0
 * @category running
 */
export const continueHint = (runId: string, pause: string, dbOption: string): string =>
  `npm start -- runs continue ${runId} --pause '${pause}' --approve ${dbOption}   (or --reject [--reason <text>])`

/**
 * Answers a paused run's questions as long as it pauses: in pretty mode asks
 * on the terminal (y/n) and continues the run with the answer; in JSON mode,
 * or when no answer comes, says on stderr/stdout how to continue it later
 * and leaves it paused. Returns whether the run completed.
 *
 * @since 0.1.0
 * @category running
 */
export const answerPauses = <W extends Workflow.Any>(
  workflow: W,
  pause: WorkflowEvent.RunPaused | undefined,
  dbOption: string
): Effect.Effect<
  boolean,
  Exclude<Workflow.Error<W> | Workflow.ContinueError, WorkflowError.RunPaused>,
  Workflow.Context<W> | SessionStore.SessionStore
> =>
  Effect.gen(function*() {
    const output = yield* Output.Output
    let paused = pause
    while (paused !== undefined) {
      const answer = output.mode === "json" ? Option.none() : yield* askApproval(paused.payload)
      if (Option.isNone(answer)) {
        yield* Output.note(
          `The run waits for an answer. Continue it later with:\n  ${continueHint(paused.runId, paused.key, dbOption)}`
        )
        return false
      }
      // the answer is for the pause just shown: taken only while the run still waits there
      paused = yield* continueShown(workflow, paused.runId, answer.value, paused.key)
    }
    return true
  })

/**
 * A new session id with a readable prefix.
 *
 * @since 0.1.0
 * @category running
 */
export const newSessionId = (prefix: string): string => `${prefix}-${crypto.randomUUID().slice(0, 8)}`

/**
 * A runnable scenario: what the CLI lists and runs, and what a server needs to
 * run its workflows.
 *
 * @since 0.1.0
 * @category models
 */
export interface Scenario {
  /** the CLI name */
  readonly name: string
  readonly aliases: ReadonlyArray<string>
  /** the agno cookbook it ports */
  readonly cookbook: string
  readonly description: string
  /** its workflows */
  readonly workflows: ReadonlyArray<Workflow.Any>
  /** the scripted model its workflows run with offline */
  readonly offlineModel: Layer.Layer<LanguageModel.LanguageModel>
  /** what its workflows need besides a `LanguageModel` and a `SessionStore`: their tools' handlers */
  readonly layer: Layer.Layer<never>
  /** runs the scenario: picks the model, opens its store, shows its runs */
  readonly main: (options?: Options) => Effect.Effect<void, unknown>
}

/**
 * What a scenario's runs are given.
 *
 * @since 0.1.0
 * @category models
 */
export interface Context {
  /** where the sessions are: the SQLite file, or the PostgreSQL URL (without its password) */
  readonly db: string
  /** the option naming that database on a command line: `--db <file>` or `--url <url>` */
  readonly dbOption: string
  /** the session table, when not the store's default */
  readonly table: string | undefined
  /** what to explain around the runs, if anything */
  readonly guide: Guide | undefined
}

/**
 * Makes a scenario from its definition and its runs (which get the model, the
 * store and `layer`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <R>(
  definition: Omit<Scenario, "main" | "layer"> & {
    /** what the workflows need besides a model and a store (`Layer.empty` for nothing) */
    readonly layer: Layer.Layer<R>
    /** the SQLite file (default `tmp/<name>.db`) */
    readonly db?: string | undefined
    /** the session table (default: the store's) */
    readonly table?: string | undefined
  },
  runs: (context: Context) => Effect.Effect<void, unknown, R | LanguageModel.LanguageModel | SessionStore.SessionStore>
): Scenario => ({
  name: definition.name,
  aliases: definition.aliases,
  cookbook: definition.cookbook,
  description: definition.description,
  workflows: definition.workflows,
  offlineModel: definition.offlineModel,
  layer: definition.layer,
  main: (options = {}) =>
    Effect.suspend(() => {
      const chosen = database(options, options.db ?? definition.db ?? defaultDb(definition.name))
      const db = chosen._tag === "Sqlite" ? chosen.filename : SessionflowCli.describeDatabase(chosen)
      const table = options.table ?? definition.table
      const guide = options.guide
      return runs({ db, dbOption: databaseOption(chosen, options.schema), table, guide }).pipe(
        (self) =>
          guide === undefined
            ? self
            : Output.say(guide.intro(db)).pipe(Effect.zipRight(self), Effect.zipLeft(Output.note(guide.outro))),
        withModel(definition, options),
        Effect.provide(storeLayer(options, db, table))
      )
    }).pipe(Output.withConsole)
})

/**
 * Runs `self` with a scenario's model (see {@link chooseModel}) and the tool
 * handlers its workflows need.
 *
 * @since 0.1.0
 * @category running
 */
export const withModel = <R>(
  scenario: { readonly offlineModel: Layer.Layer<LanguageModel.LanguageModel>; readonly layer: Layer.Layer<R> },
  options: Options
) =>
<A, E, R2>(self: Effect.Effect<A, E, R2>): Effect.Effect<A, unknown, Exclude<R2, R | LanguageModel.LanguageModel>> =>
  Effect.flatMap(
    chooseModel(scenario.offlineModel, options),
    (model) => Effect.provide(self, Layer.merge(model, scenario.layer))
  )
