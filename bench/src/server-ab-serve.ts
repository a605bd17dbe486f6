/**
 * One side of `server-ab.ts`: serves the W7 workflow with the server's
 * defaults (`WorkflowServer.serve` on 127.0.0.1, a free port, no page or
 * docs) over one store, prints `{"port":N}` on a line when it listens, and
 * runs until SIGTERM. `server-ab.ts` copies this file into the tree being
 * compared, so it must only use what every compared version has.
 *
 *   node --conditions=@sessionflow/source --import tsx src/server-ab-serve.ts sqlite <file>
 *   node --conditions=@sessionflow/source --import tsx src/server-ab-serve.ts postgres <url> <schema>
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { WorkflowServer } from "../../packages/server/src/index.ts"
import { PgSessionStore } from "../../packages/store-pg/src/index.ts"
import { SqliteSessionStore } from "../../packages/store-sqlite/src/index.ts"
import { workflow } from "./w7-workflow.ts"

const [kind, target, schema] = process.argv.slice(2)
const store = kind === "sqlite"
  ? SqliteSessionStore.layer({ filename: target! })
  : PgSessionStore.layer({ url: target!, schema: schema! })

// a normal exit, so that `--cpu-prof` writes its profile
process.on("SIGTERM", () => process.exit(0))

Effect.runFork(
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(
      WorkflowServer.serve({ workflows: [workflow], port: 0, page: false, docs: false }).pipe(Layer.provide(store))
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("not a TCP server")
    console.log(JSON.stringify({ port: address.port }))
    return yield* Effect.never
  })).pipe(Effect.tapErrorCause(Effect.logError))
)
