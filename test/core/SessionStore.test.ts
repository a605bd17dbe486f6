import { SessionStore } from "@sessionflow/core"
import { Effect, Layer } from "effect"
import { suite } from "./SessionStoreSuite.js"

suite("SessionStore.layerMemory", SessionStore.layerMemory, {
  // two stores over one memory backend behave like two processes over one database
  twoStores: Effect.sync(() => {
    const backend = SessionStore.makeMemoryBackend()
    return [SessionStore.make(backend), SessionStore.make(backend)] as const
  }),
  keepingRuns: (keepRuns) =>
    Layer.sync(SessionStore.SessionStore, () => SessionStore.make(SessionStore.makeMemoryBackend({ keepRuns })))
})
