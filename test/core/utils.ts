/**
 * Fixtures of the core tests: a typed list state, a step that appends to it,
 * a workflow of such steps, one that appends its input, a tagged error, the memory store, and several
 * "processes" over one memory backend.
 */
import { SessionState, SessionStore, Step, Workflow, type WorkflowEvent } from "@sessionflow/core"
import {
  type Duration,
  Effect,
  Fiber,
  Option,
  Queue,
  Schema,
  type Scope,
  Stream,
  TestClock,
  TestServices
} from "effect"

export class Items extends SessionState.Tag("test/Items")<Items>()({
  items: Schema.Array(Schema.String)
}) {}

export const append = (name: string, item: string = name) =>
  Step.make(name, () => Items.update((s) => ({ items: [...s.items, item] })))

export const itemsWorkflow = <const S extends ReadonlyArray<Step.Any>>(steps: S & Step.Chain<S, unknown, unknown>) =>
  Workflow.make<S, typeof Schema.Unknown, typeof Items>({
    name: "items",
    state: Items,
    sessionState: { items: [] },
    steps
  })

/** A one-step workflow appending its input to the items. */
export const appendInput = itemsWorkflow([
  Step.make("add", (input) => Items.update((s) => ({ items: [...s.items, String(input.input)] })))
])

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
          (...args: ReadonlyArray<unknown>) =>
            guard((method as (...a: ReadonlyArray<unknown>) => Effect.Effect<unknown>)(...args))
        ])
      ),
      watch: (sessionId, options) =>
        Stream.suspend(() => (dead.has(store) ? Stream.never : backend.watch(sessionId, options))),
      watchEvents: (runId, options) =>
        Stream.suspend(() => (dead.has(store) ? Stream.never : backend.watchEvents(runId, options))),
      watchQueue: (sessionId, options) =>
        Stream.suspend(() => (dead.has(store) ? Stream.never : backend.watchQueue(sessionId, options)))
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

/** Runs a stream (e.g. a watch) for the rest of the scope, its elements going to a queue. */
export const collecting = <A, E, R>(
  stream: Stream.Stream<A, E, R>
): Effect.Effect<Collecting<A, E>, never, R | Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<A>()
    const fiber = yield* Effect.forkScoped(Stream.runForEach(stream, (a) => Queue.offer(queue, a)))
    return { queue, fiber }
  })

export interface Collecting<A, E> {
  readonly queue: Queue.Queue<A>
  readonly fiber: Fiber.RuntimeFiber<void, E>
}

/**
 * The next element a collected stream gives, advancing the TestClock by
 * `interval` while none has arrived (a polling watch then reads again); a
 * defect when the stream ended or nothing arrived after many intervals.
 */
export const nextOf = <A, E>(collected: Collecting<A, E>, interval: Duration.DurationInput = "100 millis") =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 500; attempt++) {
      const item = yield* Queue.poll(collected.queue)
      if (Option.isSome(item)) return item.value
      const ended = yield* Fiber.poll(collected.fiber)
      if (Option.isSome(ended)) return yield* Effect.dieMessage(`the stream ended: ${String(ended.value)}`)
      yield* TestClock.adjust(interval)
      // lets a store that hears of commits from outside the process (a socket) receive them
      yield* TestServices.provideLive(Effect.sleep("1 millis"))
    }
    return yield* Effect.dieMessage("nothing arrived")
  })

/** A commit as a workflow with `persist: "changes"` makes it (workflow "wf"): the new state and the changes to it. */
export const commitChanges = (
  store: Store,
  sessionId: string,
  expectedVersion: number,
  state: unknown,
  changes: ReadonlyArray<WorkflowEvent.StateChange>,
  record?: SessionStore.RunRecord
) =>
  store.commit({
    sessionId,
    workflowName: "wf",
    expectedVersion,
    state,
    changes,
    ...(record === undefined ? {} : { run: record })
  })

/** A commit with changes of `{ items }` at `version`: `item` appended to `items` (which is left as it is). */
export const commitAppend = (
  store: Store,
  sessionId: string,
  version: number,
  items: ReadonlyArray<string>,
  item: string
) =>
  commitChanges(store, sessionId, version, { items: [...items, item] }, [{
    op: "append",
    path: ["items"],
    items: [item]
  }])
