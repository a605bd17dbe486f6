/**
 * Type-level tests: `tsc -b` (part of `npm test`) fails if a `@ts-expect-error`
 * below stops being an error, i.e. if a workflow's errors or requirements stop
 * showing in its type.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Condition,
  Loop,
  Parallel,
  Router,
  SessionState,
  SessionStore,
  Step,
  Workflow,
  WorkflowError
} from "@sessionflow/core"
import { Context, Effect, Schema } from "effect"

class Db extends Context.Tag("test/Db")<Db, { readonly count: Effect.Effect<number> }>() {}
class Cart extends SessionState.Tag("test/Cart")<Cart>()({ items: Schema.Array(Schema.String) }) {}
class Other extends SessionState.Tag("test/Other")<Other>()({ n: Schema.Number }) {}
class DbDown extends Schema.TaggedError<DbDown>()("DbDown", {}) {}

const needsDb = Step.make("db", () => Effect.flatMap(Db, (db) => db.count))
const failsDbDown = Step.make("down", () => Effect.fail(new DbDown()))
const usesCart = Step.make("cart", () => Cart.update((s) => ({ items: [...s.items, "x"] })))
const usesOther = Step.make("other", () => Other.get)

const dbWorkflow = Workflow.make({
  name: "typed",
  state: Cart,
  sessionState: { items: [] },
  steps: [
    usesCart,
    Condition.make({ name: "c", evaluator: () => Effect.succeed(true), steps: [needsDb, failsDbDown] })
  ]
})

// the state tag the workflow provides is not a requirement; Db is
export const requiresDb: Effect.Effect<unknown, unknown, Db | SessionStore.SessionStore> = Workflow.run(dbWorkflow, "x")
// @ts-expect-error Db is required by a step and not provided
export const missingDb: Effect.Effect<unknown, unknown, SessionStore.SessionStore> = Workflow.run(dbWorkflow, "x")

// a step's typed error is in the run's error channel
export const handled = Workflow.run(dbWorkflow, "x").pipe(
  Effect.catchTag("DbDown", () => Effect.succeed("recovered"))
)
// @ts-expect-error an error no step raises cannot be caught by tag
export const notAnError = Workflow.run(dbWorkflow, "x").pipe(Effect.catchTag("NoSuchError", () => Effect.void))

// a step needing a state tag the workflow does not provide keeps it in R
const wrongState = Workflow.make({ name: "wrong", state: Cart, sessionState: { items: [] }, steps: [usesOther] })
// @ts-expect-error Other is not the workflow's state
export const otherMissing: Effect.Effect<unknown, unknown, SessionStore.SessionStore> = Workflow.run(wrongState, "x")

// the seed must fit the state schema
// @ts-expect-error items must be an array of strings
Workflow.make({ name: "bad-seed", state: Cart, sessionState: { items: [1] }, steps: [] })

// containers without errors or requirements of their own add none (no inference from the return type)
const mixed = Workflow.make({
  name: "mixed",
  steps: [
    Loop.make({ name: "loop", steps: [Step.make("noop", () => Effect.succeed(1))], maxIterations: 1 }),
    Parallel.make("par", [Step.make("p", () => Effect.succeed(1))]),
    Condition.make({ name: "c", evaluator: () => Effect.succeed(true), steps: [] })
  ]
})
export const mixedRun: Effect.Effect<unknown, Workflow.RunError, SessionStore.SessionStore> = Workflow.run(mixed, "x")
const routed = Workflow.make({
  name: "routed",
  steps: [Router.make({ name: "r", choices: [Step.make("a", () => Effect.void)], selector: () => Effect.succeed("a") })]
})
export const routedRun: Effect.Effect<
  unknown,
  Workflow.RunError | WorkflowError.RouterChoiceError,
  SessionStore.SessionStore
> = Workflow.run(routed, "x")

// requirements that mix the workflow's state with other services: only the others remain
const mixedRequirements = Workflow.make({
  name: "mixed-requirements",
  state: Cart,
  sessionState: { items: [] },
  steps: [
    Step.make("both", () => Effect.zipRight(Db, Cart.get)),
    Condition.make({
      name: "c",
      evaluator: () => Effect.zipRight(Db, Effect.map(Cart.get, (s) => s.items.length > 0)),
      steps: []
    }),
    Router.make({ name: "r", choices: [usesCart], selector: () => Effect.as(Effect.zipRight(Db, Cart.get), "cart") }),
    Loop.make({ name: "l", steps: [usesCart], endCondition: () => Effect.as(Effect.zipRight(Db, Cart.get), true) })
  ]
})
export const onlyDb: Effect.Effect<unknown, unknown, Db | SessionStore.SessionStore> = Workflow.run(
  mixedRequirements,
  "x"
)
// @ts-expect-error Db is still required
export const dbMissing: Effect.Effect<unknown, unknown, SessionStore.SessionStore> = Workflow.run(
  mixedRequirements,
  "x"
)

// getSessionState is typed by the workflow's state
export const typedState: Effect.Effect<ReadonlyArray<string>, unknown, SessionStore.SessionStore> = Effect.map(
  Workflow.getSessionState(dbWorkflow, "s"),
  (s) => s.items
)

// the WorkflowError Schema decodes every error the WorkflowError type names, and no other
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
export const errorSchemaCoversTheType: Same<
  Schema.Schema.Type<typeof WorkflowError.WorkflowError>,
  WorkflowError.WorkflowError
> = true

// durable time: a wait with a timeout gives Received | TimedOut, without one the value; a sleep passes its content on
const withTimeout = Step.waitFor("paid", Schema.Struct({ amount: Schema.Number }), { timeout: "1 day" })
export const receivedOrTimedOut: Same<
  Step.Output<typeof withTimeout>,
  Step.Received<{ readonly amount: number }> | Step.TimedOut
> = true
export const decodedValue: Same<Step.Output<ReturnType<typeof Step.waitFor<"paid", number, string>>>, number> = true
const slept = Workflow.make({ name: "slept", input: Schema.String }).pipe(
  Workflow.andThen(Step.sleep("nap", "1 hour")),
  Workflow.andThen("after", ({ previousStepContent }) => Effect.succeed(previousStepContent.length))
)
export const sleepPassesItsContentOn: Same<Workflow.Output<typeof slept>, number> = true
// a pause with a timeout: the content is resume's or onTimeout's
const timedPause = Step.pause("approve", {
  payload: Schema.Null,
  response: Schema.Boolean,
  ask: () => Effect.succeed(null),
  resume: (approved) => Effect.succeed(approved ? "yes" as const : "no" as const),
  timeout: { after: "1 day", onTimeout: () => Effect.succeed(0 as const) }
})
export const pauseOrTimeout: Same<Step.Output<typeof timedPause>, "yes" | "no" | 0> = true

describe("types", () => {
  it.effect("a provided requirement lets the workflow run", () =>
    Effect.gen(function*() {
      const out = yield* Workflow.run(dbWorkflow, "x").pipe(
        Effect.catchTag("DbDown", () => Effect.succeed("recovered")),
        Effect.provideService(Db, { count: Effect.succeed(7) }),
        Effect.provide(SessionStore.layerMemory)
      )
      expect(out).toBe("recovered")
    }))

  it("a WorkflowChanged error crosses the WorkflowError Schema", () => {
    const error = new WorkflowError.WorkflowChanged({
      runId: "r",
      workflowName: "w",
      recorded: "shape a",
      current: "shape b",
      difference: "step 2 renamed"
    })
    const encoded = Schema.encodeSync(WorkflowError.WorkflowError)(error)
    expect(Schema.decodeUnknownSync(WorkflowError.WorkflowError)(encoded)).toStrictEqual(error)
  })
})
