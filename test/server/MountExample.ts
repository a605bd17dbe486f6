import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { WorkflowServer } from "@sessionflow/server"
import { Effect, Layer, Schema } from "effect"
import { createServer } from "node:http"

// Your existing HttpApi and its handlers…
class AppApi extends HttpApi.make("app").add(
  HttpApiGroup.make("health").add(HttpApiEndpoint.get("check", "/health").addSuccess(Schema.String))
) {}
const AppRoutes = HttpLayerRouter.addHttpApi(AppApi).pipe(
  Layer.provide(
    HttpApiBuilder.group(AppApi, "health", (handlers) => handlers.handle("check", () => Effect.succeed("ok")))
  )
)

// …a workflow…
class Visits extends SessionState.Tag("app/Visits")<Visits>()({ count: Schema.Number }) {}
const visit = Workflow.make({
  name: "visits",
  state: Visits,
  sessionState: { count: 0 },
  steps: [Step.make("count", () => Visits.modify((s) => [s.count + 1, { count: s.count + 1 }]))]
})

// …served next to your API under /sessionflow: the endpoints, /sessionflow/openapi.json,
// /sessionflow/docs and the session browser at /sessionflow/
const WorkflowRoutes = WorkflowServer.layer({
  workflows: [visit],
  prefix: "/sessionflow",
  tokens: { "token-of-alice": "alice" } // Authorization: Bearer token-of-alice is user "alice"
})

export const AppServer = (port: number) =>
  HttpLayerRouter.serve(Layer.mergeAll(AppRoutes, WorkflowRoutes), { routerConfig: WorkflowServer.routerConfig }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port })),
    Layer.provide(SessionStore.layerMemory) // or SqliteSessionStore.layer({ filename: "app.db" })
  )

// AppServer(3000).pipe(Layer.launch, NodeRuntime.runMain)
