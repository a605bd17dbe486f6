/**
 * What every example shares: its options, the choice between a real OpenAI
 * model and the offline scripted one, the SQLite store under `tmp/`, and a
 * runner that streams a run's events to the output.
 *
 * @since 0.1.0
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import { SessionStore, Workflow } from "@sessionflow/core"
import { OpenAIChat } from "@sessionflow/openai"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
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
  /** the session table (default: the store's, or the scenario's) */
  readonly table?: string | undefined
  /** use the scripted model even when `OPENAI_API_KEY` is set */
  readonly offline?: boolean | undefined
  /** use this model instead (tests) */
  readonly model?: Layer.Layer<LanguageModel.LanguageModel> | undefined
  /** an explicit store instead of the SQLite file (tests) */
  readonly store?: Layer.Layer<SessionStore.SessionStore> | undefined
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
 * The store: `options.store`, else SQLite at `options.db` (else `fallbackDb`),
 * creating the file's directory.
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
  const filename = options.db ?? fallbackDb
  const table = options.table ?? fallbackTable
  return Layer.unwrapEffect(Effect.sync(() => {
    if (filename !== ":memory:") fs.mkdirSync(path.dirname(path.resolve(filename)), { recursive: true })
    return SqliteSessionStore.layer(table === undefined ? { filename } : { filename, table })
  }))
}

/**
 * Runs a workflow once, showing its events as they happen, and returns the
 * run output.
 *
 * @since 0.1.0
 * @category running
 */
export const runShown = <W extends Workflow.Any>(
  workflow: W,
  input: Workflow.Input<W>,
  options?: Workflow.RunOptions<Workflow.StateEncoded<W>>
): Effect.Effect<void, Workflow.Error<W> | Workflow.RunError, Workflow.Context<W> | SessionStore.SessionStore> =>
  Effect.flatMap(Output.Output, (output) => {
    const renderer = Output.makeRenderer(output)
    return Workflow.stream(workflow, input, options).pipe(
      Stream.runForEach((event) => Effect.sync(() => renderer.render(event))),
      Effect.ensuring(Effect.sync(() => renderer.flush()))
    )
  })

/**
 * A runnable scenario, as listed by the CLI.
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
  readonly main: (options: Options) => Effect.Effect<void, unknown>
}
