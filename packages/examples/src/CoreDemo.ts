/**
 * A small, model-free demo of the core engine: a condition, a router and a
 * parallel block over one shared, typed session state, run three times on one
 * session.
 *
 * @since 0.1.0
 */
import { Condition, Parallel, Router, SessionState, SessionStore, Step, Workflow, WorkflowEvent } from "@sessionflow/core"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

/**
 * @since 0.1.0
 * @category state
 */
export class Visits extends SessionState.Tag("@sessionflow/examples/Visits")<Visits>()({
  visits: Schema.Number,
  greeted: Schema.Boolean,
  log: Schema.Array(Schema.String)
}) {}

const note = (line: string) => Visits.update((s) => ({ ...s, log: [...s.log, line] }))

const greet = Step.make("greet", () =>
  Effect.as(Visits.update((s) => ({ ...s, greeted: true, log: [...s.log, "greeted"] })), "Welcome!"))

const count = Step.make("count", () =>
  Visits.modify((s) => [`visit #${s.visits + 1}`, { ...s, visits: s.visits + 1 }]))

const shortAnswer = Step.make("short", (input) => Effect.as(note(`short: ${input.input}`), "short answer"))
const longAnswer = Step.make("long", (input) => Effect.as(note(`long: ${input.input}`), "a long, careful answer"))

/**
 * @since 0.1.0
 * @category workflows
 */
export const demoWorkflow = Workflow.make({
  name: "core-demo",
  description: "Greets once, counts visits, routes by input length",
  state: Visits,
  sessionState: { visits: 0, greeted: false, log: [] },
  steps: [
    Condition.make({
      name: "first visit?",
      evaluator: () => Visits.get.pipe(Effect.map((s) => !s.greeted)),
      steps: [greet]
    }),
    Parallel.make("bookkeeping", [count, Step.make("audit", (input) => Effect.as(note(`audit: ${input.input}`), "audited"))]),
    Router.make({
      name: "answer",
      choices: [shortAnswer, longAnswer],
      selector: (input) => Effect.succeed(String(input.input).length > 20 ? "long" : "short")
    })
  ]
})

/**
 * Runs the demo on the in-memory store, printing every event and the state
 * after each run.
 *
 * @since 0.1.0
 * @category main
 */
export const main = Effect.gen(function*() {
  yield* Console.log("sessionflow core demo (in-memory store, no model)\n")
  for (const input of ["hi", "what is the state of my session?", "bye"]) {
    yield* Console.log(`» ${input}`)
    yield* Workflow.stream(demoWorkflow, input, { sessionId: "demo" }).pipe(
      Stream.runForEach((event) => Console.log(`  ${String(event.seq).padStart(2)} ${WorkflowEvent.format(event)}`))
    )
    const state = yield* Workflow.getSessionState(demoWorkflow, "demo")
    yield* Console.log(`  state: ${JSON.stringify(state)}\n`)
  }
  const history = yield* Workflow.getRunHistory(demoWorkflow, "demo")
  yield* Console.log(`session 'demo' has ${history.length} runs: ${history.map((r) => r.status).join(", ")}`)
}).pipe(Effect.provide(SessionStore.layerMemory))
