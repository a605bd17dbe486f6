/**
 * W7's server, in its own process (started with the `@sessionflow/source`
 * condition, so that the server and the engine are one copy of the sources):
 * `WorkflowServer.serve` on a free port with the memory store. Prints
 * `{ url }` as one JSON line and serves until stdin closes.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { SessionStore } from "../../packages/core/src/index.ts"
import { WorkflowServer } from "../../packages/server/src/index.ts"
import { workflow } from "./w7-workflow.ts"

await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const context = yield* Layer.build(
    WorkflowServer.serve({ workflows: [workflow], port: 0, page: false, docs: false }).pipe(
      Layer.provide(SessionStore.layerMemory)
    )
  )
  const address = Context.get(context, HttpServer.HttpServer).address
  if (address._tag !== "TcpAddress") throw new Error("not a TCP server")
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${address.port}` }) + "\n")
  yield* Effect.async<void>((resume) => {
    process.stdin.on("end", () => resume(Effect.void))
    process.stdin.on("close", () => resume(Effect.void))
    process.stdin.resume()
  })
})))
