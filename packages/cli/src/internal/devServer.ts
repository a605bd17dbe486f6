/**
 * The server process of `sessionflow dev` (started by `Dev.run` with tsx's
 * loader): loads the module, serves its workflows, and tells the command
 * `Ready` or `Failed` over the IPC channel.
 *
 * Arguments: the module's absolute path, the host, the port, and the store as
 * JSON (`{ db } | { url, schema }`, and `table`).
 */
import type { WorkflowServer } from "@sessionflow/server"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import { pathToFileURL } from "node:url"
import * as Cli from "../Cli.js"
import * as Dev from "../Dev.js"

const [module = "", host = "127.0.0.1", port = "3000", store = "{}"] = process.argv.slice(2)
const where = JSON.parse(store) as {
  readonly db?: string
  readonly url?: string
  readonly schema?: string
  readonly table?: string
}

const tell = (message: Dev.Message) =>
  Effect.async<void>((resume) => {
    // without the command (run by hand), it says so on stderr
    if (process.send === undefined) {
      return resume(Effect.sync(() => process.stderr.write(`${JSON.stringify(message)}\n`)))
    }
    process.send(message, () => resume(Effect.void))
  })

const fail = (message: string) => Effect.zipRight(tell({ _tag: "Failed", message }), Effect.sync(() => process.exit(1)))

const messageOf = (error: unknown): string =>
  error instanceof Error && !("_tag" in error) ? error.message : Cli.describeError(error)

/** The server's own "listening on" line: the command prints the URL once, not at every reload. */
const quiet = Logger.replace(
  Logger.defaultLogger,
  Logger.make((options) => {
    const text = Array.isArray(options.message) ? options.message.join(" ") : String(options.message)
    if (!text.startsWith("sessionflow server listening on")) Logger.defaultLogger.log(options)
  })
)

const program = Effect.gen(function*() {
  const server = yield* Effect.tryPromise({
    try: () => import("@sessionflow/server"),
    catch: (error) =>
      new Error(
        (error as { readonly code?: unknown } | null)?.code === "ERR_MODULE_NOT_FOUND"
          ? "sessionflow dev needs @sessionflow/server: npm install @sessionflow/server @effect/platform@^0.97.2"
          : `@sessionflow/server does not load: ${messageOf(error)}`
      )
  })
  const exports = yield* Effect.tryPromise({
    try: () => import(pathToFileURL(module).href) as Promise<Record<string, unknown>>,
    catch: (error) => new Error(messageOf(error))
  })
  const found = Dev.workflowsOf(exports)
  if (typeof found === "string") return yield* Effect.fail(new Error(found))
  const workflows = found as ReadonlyArray<WorkflowServer.Mounted<never, unknown>>
  const database: Cli.Database = where.url === undefined
    ? { _tag: "Sqlite", filename: where.db ?? Dev.defaultDb }
    : { _tag: "Postgres", url: where.url }
  yield* Layer.build(
    server.WorkflowServer.serve({ workflows, host, port: Number(port) }).pipe(
      Layer.provide(Cli.storeLayer(database, { schema: where.schema, table: where.table }))
    )
  )
  const names = workflows.map((entry) =>
    String(
      (entry as { readonly workflow?: { readonly name: string }; readonly name?: string }).workflow?.name ??
        (entry as { readonly name?: string }).name
    )
  )
  yield* tell({ _tag: "Ready", workflows: names })
  return yield* Effect.never
}).pipe(
  Effect.scoped,
  Effect.catchAllCause((cause) => Cause.isInterruptedOnly(cause) ? Effect.void : fail(messageOf(Cause.squash(cause)))),
  Effect.provide(quiet)
)

const fiber = Effect.runFork(program)
const stop = () => fiber.unsafeInterruptAsFork(fiber.id())
process.once("SIGTERM", stop)
process.once("SIGINT", stop)
fiber.addObserver(() => process.exit(0))
