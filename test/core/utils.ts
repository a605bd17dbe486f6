/**
 * Fixtures of the core tests: a typed list state, a step that appends to it,
 * a workflow of such steps, a tagged error, and the memory store.
 */
import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { Effect, Schema } from "effect"

export class Items extends SessionState.Tag("test/Items")<Items>()({
  items: Schema.Array(Schema.String)
}) {}

export const append = (name: string, item: string = name) =>
  Step.make(name, () => Items.update((s) => ({ items: [...s.items, item] })))

export const itemsWorkflow = <const S extends ReadonlyArray<Step.Any>>(steps: S & Step.Chain<S, unknown, unknown>) =>
  Workflow.make<S, typeof Schema.Unknown, typeof Items>({ name: "items", state: Items, sessionState: { items: [] }, steps })

export class Boom extends Schema.TaggedError<Boom>()("Boom", { reason: Schema.String }) {}

export const memory = Effect.provide(SessionStore.layerMemory)
