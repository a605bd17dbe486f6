/**
 * The same workflows, run through `Workflow.run` / `stream` / `continue` /
 * `cancel`, with the local placement and with the cluster placement (one
 * process as a whole cluster: `@effect/cluster`'s `SingleRunner`, its
 * messages in SQLite): the same outcomes. On the cluster, the runs on one
 * session go through that session's entity one at a time, so many at once
 * never conflict and never run a step twice.
 */
import * as Entity from "@effect/cluster/Entity"
import * as HttpServer from "@effect/platform/HttpServer"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, expect, it } from "@effect/vitest"
import { ClusterPlacement } from "@sessionflow/cluster"
import { Placement, SessionState, SessionStore, Step, type StepInput, Workflow, WorkflowError } from "@sessionflow/core"
import { WorkflowServer } from "@sessionflow/server"
import { Cause, Chunk, Context, Effect, Exit, Fiber, Layer, Option, Schedule, Schema, Stream } from "effect"
import { parseEvents, request, streamRun } from "../server/utils.js"

class Counter
  extends SessionState.Tag("cluster/Counter")<Counter>()({ count: Schema.Number, seen: Schema.Array(Schema.String) })
{}

/** Per session: how many times the step ran, and the most that ran at once. */
const executions = new Map<string, number>()
const active = new Map<string, number>()
const maxActive = new Map<string, number>()

const counter = Workflow.make({
  name: "counter",
  input: Schema.String,
  state: Counter,
  sessionState: { count: 0, seen: [] }
}).pipe(
  Workflow.andThen("add", ({ input }) => track(input))
)

/**
 * The step body (its input is `session:label`): counts its
 * executions on the session, holds a little while, then adds one.
 */
function track(input: string) {
  return Effect.gen(function*() {
    const session = input.split(":")[0]!
    executions.set(session, (executions.get(session) ?? 0) + 1)
    const now = (active.get(session) ?? 0) + 1
    active.set(session, now)
    maxActive.set(session, Math.max(maxActive.get(session) ?? 0, now))
    yield* Effect.sleep("2 millis")
    active.set(session, (active.get(session) ?? 1) - 1)
    yield* Counter.update((s) => ({ count: s.count + 1, seen: [...s.seen, input] }))
    const state = yield* Counter.get
    return `${input} -> ${state.count}`
  })
}

class Refused extends Schema.TaggedError<Refused>()("Refused", { why: Schema.String }) {}

const failing = Workflow.make({ name: "failing", input: Schema.String }).pipe(
  Workflow.andThen("fail", ({ input }) =>
    input === "die"
      ? Effect.die(new Error("boom"))
      : input === "refuse"
      ? Effect.fail(new Refused({ why: "no" }))
      : Effect.succeed(input))
)

const throwing = Workflow.make({ name: "throwing", input: Schema.String }).pipe(
  Workflow.andThen(Step.promise("fail", () => Promise.reject(new Error("boom"))))
)

const Request = Schema.Struct({ item: Schema.String })
const Decision = Schema.Struct({ approved: Schema.Boolean })
const approvals = Workflow.make({ name: "approvals", input: Schema.String }).pipe(
  Workflow.andThen(Step.pause("approve", {
    payload: Request,
    response: Decision,
    ask: (input: StepInput.StepInput<string, string>) => Effect.succeed({ item: input.input }),
    resume: (decision) => Effect.succeed(decision.approved ? "approved" : "rejected")
  }))
)

/** Whether its step ran inside a session entity of the cluster. */
const where = Workflow.make({ name: "where" }).pipe(
  Workflow.andThen(
    "where",
    () => Effect.map(Effect.serviceOption(Entity.CurrentAddress), (address) => Option.isSome(address))
  )
)

/** A journaled step that takes a minute: a run to interrupt in the middle of it. */
const sleepy = Workflow.make({ name: "sleepy", durability: "step" }).pipe(
  Workflow.andThen("sleep", () => Effect.as(Effect.sleep("60 seconds"), "woke"))
)

const workflows = [counter, failing, throwing, approvals, where, sleepy]

const local = SessionStore.layerMemory.pipe(Layer.merge(Placement.layerLocal))

const cluster = ClusterPlacement.layerSingleRunner({
  workflows,
  runnerStorage: "memory",
  shardingConfig: { entityMessagePollInterval: "200 millis" }
}).pipe(
  Layer.provideMerge(SessionStore.layerMemory),
  Layer.provide(SqliteClient.layer({ filename: ":memory:" }))
)

const placements = [["local", local], ["cluster", cluster]] as const

const unique = (prefix: string) => `${prefix}-${crypto.randomUUID()}`

describe.each(placements)("placement: %s", (name, layer) => {
  it.live("the run executes where the placement says: in this fiber, or in the session's entity", () =>
    Effect.gen(function*() {
      const output = yield* Workflow.run(where, null, { sessionId: unique("where") })
      expect(output.content).toBe(name === "cluster")
    }).pipe(Effect.provide(layer)))

  it.live("a run commits its state and returns its output; the next run on the session sees it", () =>
    Effect.gen(function*() {
      const sessionId = unique("one")
      const first = yield* Workflow.run(counter, `${sessionId}:a`, { sessionId })
      expect(first.content).toBe(`${sessionId}:a -> 1`)
      expect(first.sessionId).toBe(sessionId)
      expect(first.workflowName).toBe("counter")
      expect(first.state).toEqual({ count: 1, seen: [`${sessionId}:a`] })
      expect(first.stepOutputs.map((o) => [o.stepName, o.success])).toEqual([["add", true]])
      const second = yield* Workflow.run(counter, `${sessionId}:b`, { sessionId })
      expect(second.state.count).toBe(2)
      expect(yield* Workflow.getSessionState(counter, sessionId)).toEqual({
        count: 2,
        seen: [`${sessionId}:a`, `${sessionId}:b`]
      })
    }).pipe(Effect.provide(layer)))

  it.live("16 runs at once on one session: all applied, none conflicts, each step runs once, one at a time", () =>
    Effect.gen(function*() {
      const sessionId = unique("hot")
      const n = 16
      const outputs = yield* Effect.forEach(
        Array.from({ length: n }, (_, i) => i),
        (i) => Workflow.run(counter, `${sessionId}:${i}`, { sessionId }),
        { concurrency: "unbounded" }
      )
      expect(outputs.map((o) => o.state.count).sort((a, b) => a - b)).toEqual(
        Array.from({ length: n }, (_, i) => i + 1)
      )
      expect(executions.get(sessionId)).toBe(n)
      expect(maxActive.get(sessionId)).toBe(1)
      const history = yield* Workflow.getRunHistory(counter, sessionId)
      expect(history.filter((r) => r.status === "completed").length).toBe(n)
      expect((yield* Workflow.getSessionState(counter, sessionId)).count).toBe(n)
    }).pipe(Effect.provide(layer)))

  it.live("run options cross as they are: the user (owner checks), a state merged over the stored one", () =>
    Effect.gen(function*() {
      const sessionId = unique("opts")
      const first = yield* Workflow.run(counter, `${sessionId}:a`, {
        sessionId,
        userId: "alice",
        sessionState: { count: 10 }
      })
      expect(first.userId).toBe("alice")
      expect(first.state.count).toBe(11)
      const other = yield* Effect.flip(Workflow.run(counter, `${sessionId}:b`, { sessionId, userId: "bob" }))
      expect(other._tag).toBe("SessionOwnershipError")
      expect((yield* Workflow.getSession(counter, sessionId, { userId: "alice" })).userId).toBe("alice")
    }).pipe(Effect.provide(layer)))

  it.live("a run given a completed run's id returns its recorded output without running again", () =>
    Effect.gen(function*() {
      const sessionId = unique("idem")
      const runId = unique("run")
      const first = yield* Workflow.run(counter, `${sessionId}:x`, { sessionId, runId })
      const again = yield* Workflow.run(counter, `${sessionId}:x`, { sessionId, runId })
      expect(first.runId).toBe(runId)
      expect(again.runId).toBe(runId)
      expect(again.content).toBe(first.content)
      expect(executions.get(sessionId)).toBe(1)
    }).pipe(Effect.provide(layer)))

  it.live("typed failures: a bad input, a step's untyped failure, an unknown run", () =>
    Effect.gen(function*() {
      const sessionId = unique("fail")
      const bad = yield* Effect.flip(Workflow.run(counter, 42 as unknown as string, { sessionId }))
      expect(bad._tag).toBe("InputDecodeError")
      const thrown = yield* Effect.flip(Workflow.run(throwing, "x", { sessionId }))
      assert(thrown._tag === "StepError")
      expect(thrown.step).toBe("fail")
      expect(thrown.description).toBe("boom")
      const history = yield* Workflow.getRunHistory(throwing, sessionId)
      expect(history.map((r) => r.status)).toEqual(["error"])
      const died = yield* Effect.exit(Workflow.run(failing, "die", { sessionId: unique("die") }))
      assert(Exit.isFailure(died))
      expect(Cause.isDie(died.cause)).toBe(true)
      expect(Cause.pretty(died.cause)).toContain("boom")
      const unknown = yield* Effect.flip(Workflow.cancel(failing, unique("nope")))
      expect(unknown._tag).toBe("RunNotFound")
    }).pipe(Effect.provide(layer)))

  it.live("a stream carries the run's events, from RunStarted to RunCompleted", () =>
    Effect.gen(function*() {
      const sessionId = unique("stream")
      const events = yield* Workflow.stream(counter, `${sessionId}:s`, { sessionId }).pipe(
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray)
      )
      expect(events.map((e) => e._tag)).toEqual([
        "RunStarted",
        "StepStarted",
        "StateChanged",
        "StepCompleted",
        "RunCompleted"
      ])
      const last = events.at(-1)!
      assert(last._tag === "RunCompleted")
      expect(last.content).toBe(`${sessionId}:s -> 1`)
      expect(last.sessionId).toBe(sessionId)
    }).pipe(Effect.provide(layer)))

  it.live("a paused run continues with its answer; another is cancelled and ends", () =>
    Effect.gen(function*() {
      const sessionId = unique("pause")
      const paused = yield* Effect.flip(Workflow.run(approvals, "laptop", { sessionId }))
      assert(paused._tag === "RunPaused")
      expect(paused.payload).toEqual({ item: "laptop" })
      const blocked = yield* Effect.flip(Workflow.run(approvals, "phone", { sessionId }))
      assert(blocked._tag === "SessionPaused")
      const bad = yield* Effect.flip(Workflow.continue(approvals, paused.runId, { approved: "yes" }))
      expect(bad._tag).toBe("ResponseDecodeError")
      const done = yield* Workflow.continue(approvals, paused.runId, { approved: true })
      expect(done.content).toBe("approved")
      // the paused run's id, sent again: its recorded output now, not the old pause
      const again = yield* Workflow.run(approvals, "laptop", { sessionId, runId: paused.runId })
      expect(again.content).toBe("approved")

      const other = unique("pause")
      const streamed = yield* Workflow.stream(approvals, "desk", { sessionId: other }).pipe(
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray)
      )
      const last = streamed.at(-1)!
      assert(last._tag === "RunPaused")
      yield* Workflow.cancel(approvals, last.runId)
      const ended = yield* Effect.flip(Workflow.continue(approvals, last.runId, { approved: true }))
      expect(ended._tag).toBe("RunEnded")
      expect((yield* Workflow.getRunHistory(approvals, other)).map((r) => r.status)).toEqual(["cancelled"])
    }).pipe(Effect.provide(layer)))

  it.live("a run interrupted by its caller is cancelled (a runner keeping the shard does not hand it over)", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const runId = unique("interrupted")
      const fiber = yield* Effect.fork(Workflow.run(sleepy, null, { sessionId: unique("interrupted"), runId }))
      const stored = (until: (found: Option.Option<SessionStore.RunLookup>) => boolean) =>
        store.getRun(runId).pipe(
          Effect.filterOrFail(until, () => "not yet" as const),
          Effect.retry({ while: (error) => error === "not yet", schedule: Schedule.spaced("20 millis") }),
          Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error(`run ${runId} never got there`) })
        )
      yield* stored((found) => Option.isSome(found) && found.value._tag === "Active")
      yield* Fiber.interrupt(fiber)
      const ended = yield* stored((found) => Option.isSome(found) && found.value._tag === "Recorded")
      assert(Option.isSome(ended) && ended.value._tag === "Recorded")
      expect(ended.value.record.status).toBe("cancelled")
    }).pipe(Effect.provide(layer)))

  it.live("a step's own error: as it is in one process, as PlacementError (with its tag) from the cluster", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Workflow.run(failing, "refuse", { sessionId: unique("own") }))
      if (name === "local") {
        expect(error).toBeInstanceOf(Refused)
      } else {
        assert(error._tag === "PlacementError")
        expect(error.reason).toBe("remote")
        expect(error.description).toContain("Refused")
      }
    }).pipe(Effect.provide(layer)))
})

describe("cluster placement", () => {
  it("a session's entity id is its workflow and session, digested when too long for the message storage", () => {
    expect(ClusterPlacement.entityId("counter", "s1")).toBe("counter/s1")
    const long = ClusterPlacement.entityId("counter", "x".repeat(300))
    expect(long.length).toBeLessThanOrEqual(255)
    expect(long).toBe(ClusterPlacement.entityId("counter", "x".repeat(300)))
    expect(long).not.toBe(ClusterPlacement.entityId("counter", "x".repeat(301)))
  })

  it.live("a runner refuses a run of a workflow it does not have (typed)", () =>
    Effect.gen(function*() {
      const stranger = Workflow.make({ name: "stranger" }).pipe(Workflow.andThen("x", () => Effect.succeed(1)))
      const error = yield* Effect.flip(Workflow.run(stranger, "hi", { sessionId: unique("stranger") }))
      assert(error._tag === "PlacementError")
      expect(error.description).toContain("not registered")
      expect(error).toBeInstanceOf(WorkflowError.PlacementError)
    }).pipe(Effect.provide(cluster)))
})

describe("the HTTP server on the cluster placement", () => {
  it.scoped("runs posted to the server execute in the sessions' entities: as JSON and as server-sent events", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(
        WorkflowServer.serve({ workflows: [where, counter], port: 0 }).pipe(Layer.provide(cluster)) as Layer.Layer<
          HttpServer.HttpServer,
          unknown
        >
      )
      const address = Context.get(context, HttpServer.HttpServer).address
      assert(address._tag === "TcpAddress")
      const url = `http://127.0.0.1:${address.port}`
      const sessionId = unique("http")
      const json = yield* request(`${url}/workflows/where/runs`, { method: "POST", json: { input: null, sessionId } })
      expect(json.status).toBe(200)
      expect(json.body).toMatchObject({ sessionId, content: true, status: "completed" })
      const streamed = yield* streamRun(`${url}/workflows/where/runs`, { input: null, sessionId })
      const events = parseEvents(streamed.text)
      expect(events.at(-1)).toMatchObject({ _tag: "RunCompleted", content: true, sessionId })
      const bad = yield* request(`${url}/workflows/counter/runs`, { method: "POST", json: { input: 42, sessionId } })
      expect(bad.status).toBe(400)
    }))
})
