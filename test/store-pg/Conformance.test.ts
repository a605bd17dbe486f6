import { SessionStore } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { Effect, Layer } from "effect"
import { suite } from "../core/SessionStoreSuite.js"
import { clientLayer, freshSchema, storeLayer, testUrl } from "./pg.js"

/** Two stores, each on its own pool (as two app servers), over one fresh schema. */
const twoStores = Effect.gen(function*() {
  const schema = yield* freshSchema
  const open = Effect.map(
    Layer.build(PgSessionStore.layer({ url: testUrl, schema })),
    (context) => context.unsafeMap.get(SessionStore.SessionStore.key) as SessionStore.Service
  )
  return [yield* open, yield* open] as const
})

suite("PgSessionStore.layer (fresh schema)", storeLayer(), {
  twoStores,
  keepingRuns: (keepRuns) => storeLayer({ keepRuns })
})
suite(
  "PgSessionStore.layerStore (own PgClient, fresh schema, table workflow_session)",
  Layer.unwrapScoped(
    Effect.map(freshSchema, (schema) => PgSessionStore.layerStore({ schema, table: "workflow_session" }))
  ).pipe(Layer.provide(clientLayer))
)
