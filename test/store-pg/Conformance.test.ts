import { PgSessionStore } from "@sessionflow/store-pg"
import { Effect, Layer } from "effect"
import { suite } from "../core/SessionStoreSuite.js"
import { clientLayer, freshSchema, storeLayer } from "./pg.js"

suite("PgSessionStore.layer (fresh schema)", storeLayer())
suite(
  "PgSessionStore.layerStore (own PgClient, fresh schema, table workflow_session)",
  Layer.unwrapScoped(
    Effect.map(freshSchema, (schema) => PgSessionStore.layerStore({ schema, table: "workflow_session" }))
  ).pipe(Layer.provide(clientLayer))
)
