/**
 * `npm start -- serve`: every example workflow over HTTP (`@sessionflow/server`),
 * with the session browser at `/`, on one SQLite file. Offline (each
 * scenario's scripted model) unless `OPENAI_API_KEY` is set.
 *
 * @since 0.1.0
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as HttpServer from "@effect/platform/HttpServer"
import { Cli as SessionflowCli } from "@sessionflow/cli"
import { SessionNamer } from "@sessionflow/core"
import { WorkflowServer } from "@sessionflow/server"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as path from "node:path"
import { scenarios } from "./internal/scenarios.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** default 3000; 0 picks a free port */
  readonly port?: number | undefined
  readonly host?: string | undefined
  /** the SQLite file (default `tmp/server.db`) */
  readonly db?: string | undefined
  /** a PostgreSQL URL: the sessions go there instead of the SQLite file */
  readonly url?: string | undefined
  /** the PostgreSQL schema (with `url`) */
  readonly schema?: string | undefined
  /** use the scripted models even when `OPENAI_API_KEY` is set */
  readonly offline?: boolean | undefined
  /**
   * the bearer token every request must send (user `owner`); default the
   * `SESSIONFLOW_TOKEN` environment variable; without one, callers are anonymous
   */
  readonly token?: string | undefined
  /** listen on a non-loopback `host` without a token (anyone who reaches it may run and read) */
  readonly allowOpen?: boolean | undefined
}

/**
 * The environment variable `serve` reads its bearer token from.
 *
 * @since 0.1.0
 * @category constants
 */
export const tokenVariable = "SESSIONFLOW_TOKEN"

/**
 * The SQLite file `serve` uses by default.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultDb: string = path.join("tmp", "server.db")

/**
 * Every example workflow, each with its tools' handlers and its model (the
 * scenario's scripted one, or OpenAI when `OPENAI_API_KEY` is set).
 *
 * @since 0.1.0
 * @category workflows
 */
export const entries = (options: Options = {}) =>
  Effect.gen(function*() {
    // one line says which model: OpenAI for every workflow, or each scenario's scripted model
    const scripted = Layer.empty as Layer.Layer<LanguageModel.LanguageModel>
    const chosen = yield* Scenario.chooseModel(scripted, { offline: options.offline })
    return scenarios.flatMap((scenario) => {
      const model = chosen === scripted ? scenario.offlineModel : chosen
      // the scenario's tools, its model, and a model-backed session namer
      const layer = Layer.mergeAll(scenario.layer, Layer.provideMerge(SessionNamer.layerLanguageModel(), model))
      // a scenario's `layer` and model are what its workflows need (the Scenario type erases their requirements)
      // a scenario's only workflow is served under the scenario's CLI name (`/workflows/shopping-list/…`)
      const id = scenario.workflows.length === 1 ? scenario.name : undefined
      return scenario.workflows.map((workflow) =>
        WorkflowServer.withLayer(workflow, layer, { id }) as WorkflowServer.Mounted<never, unknown>
      )
    })
  })

/**
 * Serves every example workflow until interrupted, printing the URL once it
 * listens.
 *
 * @since 0.1.0
 * @category main
 */
export const main = (options: Options = {}): Effect.Effect<void, unknown> =>
  Effect.scoped(Effect.gen(function*() {
    const database = Scenario.database(options, defaultDb)
    const db = database._tag === "Sqlite" ? database.filename : SessionflowCli.describeDatabase(database)
    const workflows = yield* entries(options)
    const envToken = process.env[tokenVariable]
    const token = options.token ?? (envToken === undefined || envToken === "" ? undefined : envToken)
    const context = yield* Layer.build(
      WorkflowServer.serve({
        workflows,
        port: options.port ?? 3000,
        host: options.host,
        ...(token === undefined ? {} : { tokens: { [token]: "owner" }, requireAuth: true }),
        allowOpen: options.allowOpen
      }).pipe(
        Layer.provide(Scenario.storeLayer(options, defaultDb))
      )
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    const url = address._tag === "TcpAddress" ? `http://${address.hostname}:${address.port}` : String(address.path)
    yield* Output.say(`sessionflow server: ${url}  (session browser at /, API docs at /docs)`)
    yield* Output.note(`${workflows.length} workflows, sessions in ${db}. Ctrl-C stops it.`)
    yield* Output.note(
      token === undefined
        ? `No token: every caller is anonymous (set --token or ${tokenVariable} to require one).`
        : "Every request must send Authorization: Bearer <token>."
    )
    return yield* Effect.never
  }))
