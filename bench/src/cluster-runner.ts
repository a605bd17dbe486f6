/**
 * A runner process of `cluster.ts`: `cluster-runner.ts <schema> <port> <effects>`.
 * Runs the bench's workflows for the sessions its shards hold; prints
 * `ready` once started, and runs until killed.
 */
import { NodeClusterSocket, NodeRuntime } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ClusterPlacement } from "../../packages/cluster/src/index.ts"
import { layers, shardingConfig, workflows } from "./cluster-workflows.ts"

const [schema, port, effects] = process.argv.slice(2) as [string, string, string]
const { durable, hot } = workflows(effects)
const { sql, store } = layers(schema, 6)

Layer.launch(
  ClusterPlacement.layerRunner({ workflows: [hot, durable], failoverWait: "30 seconds" }).pipe(
    Layer.tap(() => Effect.sync(() => console.log("ready"))),
    Layer.provide(NodeClusterSocket.layer({ storage: "sql", shardingConfig: shardingConfig(Number(port)) })),
    Layer.provide(store),
    Layer.provide(sql)
  )
).pipe(NodeRuntime.runMain)
