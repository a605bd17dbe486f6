/**
 * Fixtures of the core tests: a typed list state, a step that appends to it,
 * a workflow of such steps, a tagged error, the memory store, and several
 * "processes" over one memory backend.
 */
import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { Effect, Schema, Stream } from "effect"

export class Items extends SessionState.Tag("test/Items")<Items>()({
  items: Schema.Array(Schema.String)
}) {}

export const append = (name: string, item: string = name) =>
  Step.make(name, () => Items.update((s) => ({ items: [...s.items, item] })))

export const itemsWorkflow = <const S extends ReadonlyArray<Step.Any>>(steps: S & Step.Chain<S, unknown, unknown>) =>
  Workflow.make<S, typeof Schema.Unknown, typeof Items>({ name: "items", state: Items, sessionState: { items: [] }, steps })

export class Boom extends Schema.TaggedError<Boom>()("Boom", { reason: Schema.String }) {}

export const memory = Effect.provide(SessionStore.layerMemory)

export type Store = SessionStore.Service

/** Two or more "processes" over one database. */
export const processes = Effect.sync(() => {
  const backend = SessionStore.makeMemoryBackend()
  let dead = new Set<Store>()
  const make = (): Store => {
    const guard = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.suspend(() => (dead.has(store) ? Effect.never : effect))
    const wrapped = {
      ...Object.fromEntries(
        Object.entries(backend).map(([name, method]) => [
          name,
          (...args: ReadonlyArray<unknown>) => guard((method as (...a: ReadonlyArray<unknown>) => Effect.Effect<unknown>)(...args))
        ])
      ),
      watch: (sessionId, options) => Stream.suspend(() => (dead.has(store) ? Stream.never : backend.watch(sessionId, options)))
    } as SessionStore.Backend
    const store = SessionStore.make(wrapped)
    return store
  }
  /** the process stops answering: its store never completes anything again */
  const crash = (store: Store) => Effect.sync(() => void (dead = new Set([...dead, store])))
  return { make, crash, backend }
})

/** Runs on the store of one "process". */
export const on = (store: Store) => Effect.provideService(SessionStore.SessionStore, store)

/** Streams on the store of one "process". */
export const onStream = (store: Store) => Stream.provideService(SessionStore.SessionStore, store)
