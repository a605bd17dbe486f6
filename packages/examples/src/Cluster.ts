/**
 * Scaling out on `@effect/cluster`: three runner processes and two stateless
 * HTTP servers on one PostgreSQL database (`DATABASE_URL`, else the local
 * `postgres://postgres@127.0.0.1:5432/test`), all on this machine.
 *
 *   npm run cluster                           # starts the five processes, prints the servers' URLs
 *   npm run cluster -- runner <port>          # one runner (what the above starts three times)
 *   npm run cluster -- server <port>          # one HTTP server (twice)
 *
 * Post runs to either server (`POST /workflows/orders/runs`), on the same
 * session or not: each session's runs execute one at a time on the runner
 * that owns it; kill a runner (`kill -9`) and its sessions move to the others,
 * their unfinished durable runs carried on from their journals.
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import { NodeClusterSocket, NodeRuntime } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { ClusterPlacement } from "@sessionflow/cluster"
import { SessionState, Workflow } from "@sessionflow/core"
import { WorkflowServer } from "@sessionflow/server"
import { PgSessionStore } from "@sessionflow/store-pg"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

const url = process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

class Orders extends SessionState.Tag("examples/ClusterOrders")<Orders>()({ orders: Schema.Array(Schema.String) }) {}

/** A durable workflow: each step journaled, so a run whose runner dies resumes on another one. */
export const orders = Workflow.make({
  name: "orders",
  description: "Takes an order, checks it, books it",
  input: Schema.String,
  state: Orders,
  sessionState: { orders: [] },
  durability: "step"
}).pipe(
  Workflow.andThen("take", ({ input }) => Effect.succeed(input.trim())),
  Workflow.andThen("check", ({ previousStepContent: order }) => Effect.as(Effect.sleep("500 millis"), order)),
  Workflow.andThen(
    "book",
    ({ previousStepContent: order }) =>
      Effect.as(Orders.update((s) => ({ orders: [...s.orders, order] })), `booked ${order}`)
  )
)

/** The cluster's settings: the package's (a dead runner's sessions move within seconds) and this runner's address. */
const shardingConfig = (port: number | undefined) => ({
  ...ClusterPlacement.shardingConfig,
  runnerAddress: port === undefined ? Option.none() : Option.some(RunnerAddress.make("127.0.0.1", port))
})

const Sql = PgClient.layer({ url: Redacted.make(url), applicationName: "sessionflow-cluster-example" })
const Store = PgSessionStore.layer({ url })

/** A runner: executes the runs of the sessions its shards hold. */
export const Runner = (port: number) =>
  Layer.merge(
    ClusterPlacement.layerRunner({ workflows: [orders] }),
    Layer.effectDiscard(Effect.log(`runner listening on 127.0.0.1:${port}`))
  ).pipe(
    Layer.provide(NodeClusterSocket.layer({ storage: "sql", shardingConfig: shardingConfig(port) })),
    Layer.provide(Store),
    Layer.provide(Sql)
  )

/** An HTTP server: a client of the cluster, holding no session. */
export const Server = (port: number) =>
  // the cluster delivers an interrupted run again to the session's next runner: the server resumes
  // none itself (on a remote placement its supervisor is off unless `supervise` is given)
  WorkflowServer.serve({ workflows: [orders], port }).pipe(
    Layer.provide(ClusterPlacement.layer),
    Layer.provide(
      NodeClusterSocket.layer({ clientOnly: true, storage: "sql", shardingConfig: shardingConfig(undefined) })
    ),
    Layer.provide(Store),
    Layer.provide(Sql)
  )

const [role, port] = process.argv.slice(2)
if (role === "runner") {
  Layer.launch(Runner(Number(port ?? 34431))).pipe(NodeRuntime.runMain)
} else if (role === "server") {
  Layer.launch(Server(Number(port ?? 3000))).pipe(NodeRuntime.runMain)
} else {
  // three runners and two HTTP servers, this script each time; Ctrl-C stops them all
  const self = fileURLToPath(import.meta.url)
  const start = (...args: ReadonlyArray<string>) =>
    spawn(process.execPath, [...process.execArgv, self, ...args], { stdio: "inherit" })
  // the first runner creates the cluster's tables; the others start once it has had time to
  const children = [start("runner", "34431")]
  setTimeout(() => {
    children.push(start("runner", "34432"), start("runner", "34433"), start("server", "3001"), start("server", "3002"))
    console.log("HTTP servers: http://127.0.0.1:3001 and http://127.0.0.1:3002 (runners on ports 34431-34433)")
  }, 5000)
  process.on("SIGINT", () => {
    for (const child of children) child.kill("SIGTERM")
    process.exit(0)
  })
}
