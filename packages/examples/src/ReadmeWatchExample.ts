import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { Effect, Fiber, Schema, Stream } from "effect"

class Visits extends SessionState.Tag("Visits")<Visits>()({ count: Schema.Number }) {}

const visit = Workflow.make({
  name: "visits",
  state: Visits,
  sessionState: { count: 0 },
  steps: [Step.make("count", () => Visits.update((s) => ({ count: s.count + 1 })))]
})

// the session's committed changes, from this process and every other one on the same store
const follow = Workflow.watch(visit, "user-1", { pollInterval: "100 millis" }).pipe(
  Stream.takeUntil((update) => update.state.count >= 3),
  Stream.map((update) => `version ${update.version}: ${update.state.count} visits (run ${update.runId})`),
  Stream.runCollect
)

export const watchProgram = Effect.gen(function*() {
  const watcher = yield* Effect.fork(follow)
  // runs here, or in another process (a server) on the same SQLite file
  for (const input of ["a", "b", "c"]) yield* Workflow.run(visit, input, { sessionId: "user-1" })
  return yield* Fiber.join(watcher) // [..., "version 3: 3 visits (run 5f0c…)"]
}).pipe(Effect.provide(SessionStore.layerMemory))
