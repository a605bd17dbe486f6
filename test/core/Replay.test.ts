import { Tool, Toolkit } from "@effect/ai"
import { assert, describe, expect, it } from "@effect/vitest"
import {
  Agent,
  Replay,
  Router,
  SessionState,
  SessionStore,
  Step,
  TestModel,
  Workflow,
  WorkflowError
} from "@sessionflow/core"
import { Effect, Exit, Layer, Schema } from "effect"
import { freshStores } from "../stores.js"

class Cart extends SessionState.Tag("test/ReplayCart")<Cart>()({
  items: Schema.Array(Schema.String),
  runs: Schema.Number
}) {}

const AddItem = Tool.make("add_item", {
  description: "Add an item",
  parameters: { item: Schema.String },
  success: Schema.String,
  dependencies: [Cart]
})
const Tools = Toolkit.make(AddItem)
const ToolsLive = Tools.toLayer({
  add_item: ({ item }) => Effect.as(Cart.update((s) => ({ ...s, items: [...s.items, item] })), `added ${item}`)
})

const assistant = Agent.make({ name: "Cart Assistant", instructions: "Manage the cart.", tools: Tools })

const count = Step.make("count", () => Effect.as(Cart.update((s) => ({ ...s, runs: s.runs + 1 })), "counted"))
const manage = Step.agent("manage", assistant)
const summary = Step.make("summary", () => Effect.map(Cart.get, (s) => `${s.items.length} items after ${s.runs} runs`))

const cart = (steps: ReadonlyArray<Step.Any>) =>
  Workflow.make({ name: "cart", state: Cart, sessionState: { items: [], runs: 0 }, steps })

const recorded = cart([count, manage, summary])

/** Two recorded runs of `recorded` on one session, read back from the store. */
const recordIn = (store: Layer.Layer<SessionStore.SessionStore, unknown>) =>
  Effect.gen(function*() {
    const sessionId = `replay-${crypto.randomUUID()}`
    yield* Workflow.run(recorded, "add milk", { sessionId, events: "stored" }).pipe(Replay.record)
    yield* Workflow.run(recorded, "add bread", { sessionId, events: "stored" }).pipe(Replay.record)
    // a run that did not record is left out
    yield* Workflow.run(recorded, "nothing", { sessionId, events: "stored" })
    return yield* Replay.fromStore(recorded, { sessionId })
  }).pipe(
    Effect.provide(Layer.mergeAll(
      store,
      TestModel.layer([
        TestModel.withUsage(TestModel.toolCalls(["add_item", { item: "milk" }]), { inputTokens: 10, outputTokens: 2 }),
        TestModel.text("Added milk."),
        TestModel.toolCalls(["add_item", { item: "bread" }]),
        TestModel.text("Added bread."),
        TestModel.text("Nothing to do.")
      ])
    )),
    Effect.provide(ToolsLive)
  )

const record = recordIn(SessionStore.layerMemory)

const mismatchOf = <A>(exit: Exit.Exit<A, WorkflowError.ReplayMismatch>): WorkflowError.ReplayMismatch => {
  assert(Exit.isFailure(exit))
  const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  assert(error instanceof WorkflowError.ReplayMismatch, String(exit.cause))
  return error
}

describe("Replay", () => {
  it.effect(
    "a recorded run replays green against the same workflow, from its start state, with its model replies",
    () =>
      Effect.gen(function*() {
        const runs = yield* record
        expect(runs.map((r) => r.input)).toEqual(["add milk", "add bread"])
        // the second run starts from the state the first one committed
        expect(runs[1]!.state).toEqual({ items: ["milk"], runs: 1 })
        expect(
          runs[0]!.events.filter((e) => e._tag === "ModelReplied").map((e) => e._tag === "ModelReplied" && e.reply)
        )
          .toEqual([
            {
              _tag: "ToolCalls",
              calls: [{ name: "add_item", params: { item: "milk" } }],
              usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 }
            },
            { _tag: "Text", text: "Added milk.", usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } }
          ])
        const replayed = yield* Replay.replayAll(recorded, runs).pipe(Effect.provide(ToolsLive))
        expect(replayed).toEqual([
          { runId: runs[0]!.runId, steps: 3, modelCalls: 2 },
          { runId: runs[1]!.runId, steps: 3, modelCalls: 2 }
        ])
      })
  )

  it.effect("a file of recorded runs round-trips through its Schema and replays", () =>
    Effect.gen(function*() {
      const runs = yield* record
      const file = JSON.parse(JSON.stringify(Replay.encodeFile("cart", runs, 0)))
      const decoded = Replay.decodeFile(file)
      expect(decoded.runs).toHaveLength(2)
      yield* Replay.replayAll(recorded, decoded.runs).pipe(Effect.provide(ToolsLive))
      expect(() => Replay.decodeFile({ ...file, format: "other" })).toThrow(/format/)
      expect(Replay.jsonSchema).toMatchObject({
        $defs: { RecordedRuns: { required: expect.arrayContaining(["format", "runs"]) } }
      })
    }))

  it.effect("a renamed step fails, naming the first difference", () =>
    Effect.gen(function*() {
      const runs = yield* record
      const renamed = cart([Step.make("tally", count.execute as never), manage, summary])
      const error = mismatchOf(yield* Effect.exit(Replay.replay(renamed, runs[0]!).pipe(Effect.provide(ToolsLive))))
      expect(error).toMatchObject({
        runId: runs[0]!.runId,
        kind: "step",
        at: "count",
        expected: "step 'count' (step) started",
        actual: "step 'tally' (step) started"
      })
      expect(error.message).toContain("replays differently (step) at count")
    }))

  it.effect("reordered steps fail at the first step that moved", () =>
    Effect.gen(function*() {
      const runs = yield* record
      const error = mismatchOf(
        yield* Effect.exit(Replay.replay(cart([manage, count, summary]), runs[0]!).pipe(Effect.provide(ToolsLive)))
      )
      expect(error).toMatchObject({
        kind: "step",
        expected: "step 'count' (step) started",
        actual: "step 'manage' (agent) started"
      })
    }))

  it.effect("a changed output fails naming the step and both values", () =>
    Effect.gen(function*() {
      const runs = yield* record
      const changed = cart([count, manage, Step.make("summary", () => Effect.succeed("done"))])
      const error = mismatchOf(yield* Effect.exit(Replay.replay(changed, runs[1]!).pipe(Effect.provide(ToolsLive))))
      expect(error).toMatchObject({ kind: "output", at: "summary", expected: "2 items after 2 runs", actual: "done" })
    }))

  it.effect("a changed state update fails naming the state path", () =>
    Effect.gen(function*() {
      const runs = yield* record
      const doubled = Step.make("count", () => Effect.as(Cart.update((s) => ({ ...s, runs: s.runs + 2 })), "counted"))
      const summaryOf = Step.make("summary", () =>
        Effect.succeed(runs[0]!.events.length > 0 ? "1 items after 1 runs" : ""))
      const error = mismatchOf(
        yield* Effect.exit(Replay.replay(cart([doubled, manage, summaryOf]), runs[0]!).pipe(Effect.provide(ToolsLive)))
      )
      expect(error).toMatchObject({ kind: "state", at: "state.runs", expected: "1", actual: "2" })
    }))

  it.effect("a workflow that calls the model more often than recorded fails at the model call", () =>
    Effect.gen(function*() {
      const runs = yield* record
      const twice = cart([count, manage, Step.agent("again", assistant), summary])
      const error = mismatchOf(yield* Effect.exit(Replay.replay(twice, runs[0]!).pipe(Effect.provide(ToolsLive))))
      expect(error).toMatchObject({ kind: "model", at: "model call #3", expected: "2 model calls" })
    }))

  it.effect("a router that picks another route fails as a decision", () =>
    Effect.gen(function*() {
      const a = Step.make("a", () => Effect.succeed("A"))
      const b = Step.make("b", () => Effect.succeed("B"))
      const routed = (pick: "a" | "b") =>
        Workflow.make({
          name: "routed",
          steps: [Router.make({
            name: "route",
            choices: [a, b],
            selector: () => Effect.succeed(pick)
          })]
        })
      const [run] = yield* Effect.gen(function*() {
        yield* Workflow.run(routed("a"), "x", { sessionId: "r", events: "stored" }).pipe(Replay.record)
        return yield* Replay.fromStore(routed("a"), { sessionId: "r" })
      }).pipe(Effect.provide(SessionStore.layerMemory))
      yield* Replay.replay(routed("a"), run!)
      const error = mismatchOf(yield* Effect.exit(Replay.replay(routed("b"), run!)))
      expect(error).toMatchObject({
        kind: "decision",
        at: "route",
        expected: "router selected a",
        actual: "router selected b"
      })
    }))

  it.effect("a run of another workflow is a mismatch, not a replay", () =>
    Effect.gen(function*() {
      const runs = yield* record
      const other = Workflow.make({ name: "other", state: Cart, sessionState: { items: [], runs: 0 }, steps: [count] })
      const error = mismatchOf(yield* Effect.exit(Replay.replay(other, runs[0]!)))
      expect(error).toMatchObject({ kind: "outcome", expected: "a run of workflow 'cart'" })
    }))
})

describe.each(freshStores)("Replay from the %s store", (_name, store) => {
  it.effect(
    "recorded runs are read back from the store and replay; a renamed step fails",
    () =>
      Effect.gen(function*() {
        const runs = yield* recordIn(store)
        expect(runs.map((r) => r.input)).toEqual(["add milk", "add bread"])
        yield* Replay.replayAll(recorded, runs).pipe(Effect.provide(ToolsLive))
        const renamed = cart([count, manage, Step.make("total", summary.execute as never)])
        const error = mismatchOf(yield* Effect.exit(Replay.replay(renamed, runs[1]!).pipe(Effect.provide(ToolsLive))))
        expect(error).toMatchObject({ kind: "step", at: "summary" })
      }),
    60_000
  )
})
