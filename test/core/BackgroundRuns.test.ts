/**
 * Background runs and their status: `Workflow.start` returns once the run is
 * registered and the run goes on in the caller's scope; `Workflow.getRunStatus`
 * says where a run stands; a run stopped with its scope is left for recovery;
 * `Workflow.cancel` of a running run stops its steps (at once through the same
 * store, at the next lease renewal through another) and commits nothing. On
 * memory, a SQLite file and PostgreSQL.
 */
import { assert, describe, it } from "@effect/vitest"
import { DurableRuns, SessionState, SessionStore, Workflow, WorkflowError, type WorkflowEvent } from "@sessionflow/core"
import { Chunk, Deferred, Effect, Exit, Fiber, Layer, Ref, Schema, SchemaAST, Scope, Stream } from "effect"
import * as fs from "node:fs"
import { freshStores } from "../stores.js"
import { processes } from "./utils.js"

class Items extends SessionState.Tag("background/Items")<Items>()({ items: Schema.Array(Schema.String) }) {}

/**
 * A two-step workflow: `first` appends "1"; `slow` says it started, waits for
 * `release`, then records its late effect and appends "2".
 */
const slowWorkflow = (
  effects: Ref.Ref<ReadonlyArray<string>>,
  started: Deferred.Deferred<void>,
  release: Deferred.Deferred<void>
) =>
  Workflow.make({ name: "slow", state: Items, sessionState: { items: [] }, input: Schema.String }).pipe(
    Workflow.andThen("first", () => Effect.as(Items.update((s) => ({ items: [...s.items, "1"] })), 1)),
    Workflow.andThen("slow", () =>
      Effect.gen(function*() {
        yield* Deferred.succeed(started, undefined)
        yield* Deferred.await(release)
        yield* Ref.update(effects, (e) => [...e, "late"])
        yield* Items.update((s) => ({ items: [...s.items, "2"] }))
        return "done"
      }))
  )

const fixture = Effect.gen(function*() {
  const effects = yield* Ref.make<ReadonlyArray<string>>([])
  const started = yield* Deferred.make<void>()
  const release = yield* Deferred.make<void>()
  return { effects, started, release, wf: slowWorkflow(effects, started, release) }
})

/** Waits (for real) until `read` holds, for at most 10 seconds. */
const eventually = <E, R>(read: Effect.Effect<boolean, E, R>) =>
  Effect.repeat(Effect.zipLeft(read, Effect.sleep("20 millis")), { until: (done) => done }).pipe(
    Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("timed out") })
  )

for (const [name, storeLayer] of freshStores) {
  describe(`background runs (${name})`, () => {
    const layer = Layer.fresh(storeLayer)

    it.live(
      "start returns the run id once the run is registered; the run goes on and its status follows it to Completed",
      () =>
        Effect.gen(function*() {
          const { effects, release, started, wf } = yield* fixture
          const scope = yield* Scope.make()
          const { runId, sessionId } = yield* Workflow.start(wf, "go", { sessionId: "bg" }).pipe(Scope.extend(scope))
          assert.strictEqual(sessionId, "bg")
          // registered before start returned: a status read right after finds it running
          const running = yield* Workflow.getRunStatus(wf, runId)
          assert.strictEqual(running._tag, "Running")
          assert(running._tag === "Running")
          assert.strictEqual(running.leaseExpired, false)
          assert.strictEqual(running.input, "go")
          yield* Deferred.await(started)
          yield* Deferred.succeed(release, undefined)
          yield* eventually(Effect.map(Workflow.getRunStatus(wf, runId), (s) => s._tag === "Completed"))
          const done = yield* Workflow.getRunStatus(wf, runId)
          assert(done._tag === "Completed")
          const content: string = done.content
          assert.strictEqual(content, "done")
          assert.deepStrictEqual((yield* Workflow.getSessionState(wf, "bg")).items, ["1", "2"])
          assert.deepStrictEqual(yield* Ref.get(effects), ["late"])
          yield* Scope.close(scope, Exit.void)
        }).pipe(Effect.provide(layer)),
      30_000
    )

    it.live(
      "start is refused with the run's error when the run is refused before it is registered",
      () =>
        Effect.gen(function*() {
          const { wf } = yield* fixture
          const refused = yield* Effect.flip(
            Effect.scoped(Workflow.start(wf, 42 as unknown as string, { sessionId: "bad" }))
          )
          assert.strictEqual(refused._tag, "InputDecodeError")
          const badId = yield* Effect.flip(Effect.scoped(Workflow.start(wf, "go", { runId: "" })))
          assert.strictEqual(badId._tag, "InvalidRunId")
        }).pipe(Effect.provide(layer)),
      30_000
    )

    it.live(
      "getRunStatus: RunNotFound for an unknown id or another workflow's run, SessionOwnershipError for another user's",
      () =>
        Effect.gen(function*() {
          const { release, wf } = yield* fixture
          yield* Deferred.succeed(release, undefined)
          const unknown = yield* Effect.flip(Workflow.getRunStatus(wf, "nope"))
          assert.strictEqual(unknown._tag, "RunNotFound")
          yield* Workflow.run(wf, "go", { sessionId: "mine", runId: "r-mine", userId: "alice" })
          const other = Workflow.make({ name: "other" })
          assert.strictEqual((yield* Effect.flip(Workflow.getRunStatus(other, "r-mine")))._tag, "RunNotFound")
          assert.strictEqual(
            (yield* Effect.flip(Workflow.getRunStatus(wf, "r-mine", { userId: "bob" })))._tag,
            "SessionOwnershipError"
          )
          const status = yield* Workflow.getRunStatus(wf, "r-mine", { userId: "alice" })
          assert.strictEqual(status._tag, "Completed")
          assert.strictEqual(status.userId, "alice")
        }).pipe(Effect.provide(layer)),
      30_000
    )

    it.live("a failed run's status is Failed, with its error", () =>
      Effect.gen(function*() {
        const failing = Workflow.make({ name: "failing" }).pipe(
          Workflow.andThen("boom", () =>
            Effect.fail(new WorkflowError.StepError({ step: "boom", description: "it broke" })))
        )
        yield* Effect.flip(Workflow.run(failing, "x", { sessionId: "f", runId: "r-failed" }))
        const failed = yield* Workflow.getRunStatus(failing, "r-failed")
        assert(failed._tag === "Failed")
        assert.include(failed.error, "it broke")
      }).pipe(Effect.provide(layer)), 30_000)

    it.live(
      "a run cancelled while it runs, through the same store, stops at once: RunEnded " +
        "(cancelled), its step's later effects never happen, nothing is committed",
      () =>
        Effect.gen(function*() {
          const { effects, started, wf } = yield* fixture
          // a long lease: only the cancel itself can stop the run in time
          const running = yield* Effect.fork(
            Workflow.stream(wf, "go", { sessionId: "c", runId: "r-cancel", leaseDuration: "1 minute" }).pipe(
              Stream.runCollect
            )
          )
          yield* Deferred.await(started)
          yield* Workflow.cancel(wf, "r-cancel")
          const exit = yield* Fiber.await(running).pipe(Effect.timeout("2 seconds"))
          assert(Exit.isFailure(exit))
          const error = yield* Effect.flip(exit)
          assert.instanceOf(error, WorkflowError.RunEnded)
          assert.strictEqual((error as WorkflowError.RunEnded).status, "cancelled")
          const status = yield* Workflow.getRunStatus(wf, "r-cancel")
          assert.strictEqual(status._tag, "Cancelled")
          // the session was created to hold the record, with nothing of the run in it
          assert.deepStrictEqual((yield* Workflow.getSessionState(wf, "c")).items, [])
          yield* Effect.sleep("100 millis")
          assert.deepStrictEqual(yield* Ref.get(effects), [])
          assert.deepStrictEqual(yield* Workflow.unfinishedRuns(wf), [])
        }).pipe(Effect.provide(layer)),
      30_000
    )

    it.live(
      "a background run cancelled through the same store ends Cancelled; its stored events end with RunCancelled",
      () =>
        Effect.gen(function*() {
          const { effects, started, wf } = yield* fixture
          const { runId } = yield* Workflow.start(wf, "go", {
            sessionId: "bc",
            events: "stored",
            leaseDuration: "1 minute"
          })
          yield* Deferred.await(started)
          yield* Workflow.cancel(wf, runId)
          yield* eventually(Effect.map(Workflow.getRunStatus(wf, runId), (s) => s._tag === "Cancelled"))
          // its last events are written just after the cancel is recorded
          const events = Chunk.toReadonlyArray(
            yield* Stream.runCollect(Workflow.events(wf, runId)).pipe(
              Effect.retry({ while: (error) => error._tag === "RunNotFound", times: 50 }),
              Effect.timeout("10 seconds")
            )
          )
          const tags = events.filter((e: WorkflowEvent.WorkflowEvent) => e.path.length === 0).map((e) => e._tag)
          assert.strictEqual(tags[0], "RunStarted")
          assert.strictEqual(tags[tags.length - 1], "RunCancelled")
          assert.deepStrictEqual(yield* Ref.get(effects), [])
          assert.strictEqual((yield* Effect.flip(Workflow.cancel(wf, runId)))._tag, "RunEnded")
        }).pipe(Effect.scoped, Effect.provide(layer)),
      30_000
    )

    it.live(
      "a background run whose scope closes is not cancelled: it is " +
        "left unfinished with its lease given up, and recovery completes it",
      () =>
        Effect.gen(function*() {
          const { effects, release, started, wf } = yield* fixture
          const scope = yield* Scope.make()
          const { runId } = yield* Workflow.start(wf, "go", {
            sessionId: "shutdown",
            durability: "step",
            leaseDuration: "1 minute"
          }).pipe(
            Scope.extend(scope)
          )
          yield* Deferred.await(started)
          yield* Scope.close(scope, Exit.void)
          const left = yield* Workflow.getRunStatus(wf, runId)
          assert(left._tag === "Running", left._tag)
          // given up at once: recovery need not wait for the lease
          assert.strictEqual(left.leaseExpired, true)
          assert.deepStrictEqual(yield* Ref.get(effects), [])
          yield* Deferred.succeed(release, undefined)
          const recovered = yield* Workflow.recover(wf)
          assert.deepStrictEqual(recovered.map((r) => [r.runId, Exit.isSuccess(r.outcome)]), [[runId, true]])
          const done = yield* Workflow.getRunStatus(wf, runId)
          assert.strictEqual(done._tag, "Completed")
          assert.deepStrictEqual((yield* Workflow.getSessionState(wf, "shutdown")).items, ["1", "2"])
        }).pipe(Effect.provide(layer)),
      30_000
    )
  })
}

describe("cancel across stores (another process)", () => {
  it.live(
    "a run cancelled through another store stops at its next lease " +
      "renewal: RunEnded (cancelled), nothing committed, no later effect",
    () =>
      Effect.gen(function*() {
        const backend = SessionStore.makeMemoryBackend()
        const [a, b] = [SessionStore.make(backend), SessionStore.make(backend)]
        const { effects, started, wf } = yield* fixture
        const running = yield* Effect.fork(
          Workflow.run(wf, "go", { sessionId: "x", runId: "r-x", leaseDuration: "600 millis" }).pipe(
            Effect.provideService(SessionStore.SessionStore, a)
          )
        )
        yield* Deferred.await(started)
        const cancelledAt = Date.now()
        yield* Workflow.cancel(wf, "r-x").pipe(Effect.provideService(SessionStore.SessionStore, b))
        const error = yield* Effect.flip(Fiber.join(running))
        // within one renewal (a third of the lease), with some slack
        assert.isAtMost(Date.now() - cancelledAt, 600)
        assert.instanceOf(error, WorkflowError.RunEnded)
        assert.strictEqual((error as WorkflowError.RunEnded).status, "cancelled")
        assert.deepStrictEqual(yield* Ref.get(effects), [])
        const state = yield* Workflow.getSessionState(wf, "x").pipe(Effect.provideService(SessionStore.SessionStore, b))
        assert.deepStrictEqual(state.items, [])
      }),
    30_000
  )
})

describe("a supervisor that stops (a shutdown)", () => {
  it.live(
    "leaves the run it was resuming unfinished, its lease given " +
      "up, instead of cancelling it; the next supervisor completes it",
    () =>
      Effect.gen(function*() {
        const { crash, make } = yield* processes
        const [a, b, c] = [make(), make(), make()]
        // (the dead process's step is never released: only the resumed one's effects count)
        const { started, wf } = yield* fixture
        const { effects, release } = yield* fixture
        // a run whose process dies in its slow step: abandoned after its short lease
        yield* Effect.fork(
          Workflow.run(wf, "go", { sessionId: "sup", runId: "r-sup", durability: "step", leaseDuration: "200 millis" })
            .pipe(
              Effect.provideService(SessionStore.SessionStore, a)
            )
        )
        yield* Deferred.await(started)
        yield* crash(a)
        // b's supervisor resumes it; its slow step blocks, and b shuts down
        const startedAgain = yield* Deferred.make<void>()
        const supervised = slowWorkflow(effects, startedAgain, release)
        const scope = yield* Scope.make()
        yield* Layer.buildWithScope(
          DurableRuns.layer({ workflows: [supervised], pollInterval: "50 millis", leaseDuration: "1 minute" }).pipe(
            Layer.provide(Layer.succeed(SessionStore.SessionStore, b))
          ),
          scope
        )
        yield* Deferred.await(startedAgain).pipe(Effect.timeout("10 seconds"))
        yield* Scope.close(scope, Exit.void)
        const left = yield* Workflow.getRunStatus(wf, "r-sup").pipe(Effect.provideService(SessionStore.SessionStore, c))
        assert(left._tag === "Running", left._tag)
        assert.strictEqual(left.leaseExpired, true)
        // the next process's supervisor carries it on at once, and it completes
        yield* Deferred.succeed(release, undefined)
        yield* Layer.launch(DurableRuns.layer({ workflows: [supervised], pollInterval: "50 millis" })).pipe(
          Effect.provideService(SessionStore.SessionStore, c),
          Effect.race(
            eventually(Effect.map(Workflow.getRunStatus(wf, "r-sup"), (s) => s._tag === "Completed")).pipe(
              Effect.provideService(SessionStore.SessionStore, c)
            )
          )
        )
        assert.deepStrictEqual(yield* Ref.get(effects), ["late"])
        const state = yield* Workflow.getSessionState(wf, "sup").pipe(
          Effect.provideService(SessionStore.SessionStore, c)
        )
        assert.deepStrictEqual(state.items, ["1", "2"])
      }),
    30_000
  )
})

/** The tags of `Workflow.RunStatus`, checked both ways at compile time. */
type StatusTag = Workflow.RunStatus["_tag"]
type Expected =
  | "Queued"
  | "Running"
  | "Paused"
  | "Sleeping"
  | "Waiting"
  | "Completed"
  | "Failed"
  | "Cancelled"
  | "Abandoned"
const exactly: [StatusTag] extends [Expected] ? [Expected] extends [StatusTag] ? true : false : false = true

describe("the run lifecycle", () => {
  it("RunStatus has exactly the states of the core README's lifecycle table, each with its tag", () => {
    assert.isTrue(exactly)
    const schemaTags = Workflow.RunStatus.members.map((member) => {
      const ast = member.fields._tag.ast
      return ast._tag === "PropertySignatureDeclaration" && SchemaAST.isLiteral(ast.type) ? ast.type.literal : undefined
    })
    const readme = fs.readFileSync(new URL("../../packages/core/README.md", import.meta.url), "utf8")
    const section = readme.slice(
      readme.indexOf("### The run lifecycle"),
      readme.indexOf("**Every transition is one conditional write.**")
    )
    const rows = section.split("\n").filter((line) =>
      line.startsWith("| ") && !line.startsWith("| state") && !line.startsWith("|---")
    )
    const tableTags = rows.map((row) => row.split("|")[2]!.trim()).filter((tag) => tag !== "—").map((tag) =>
      tag.replaceAll("`", "")
    )
    assert.deepStrictEqual(tableTags, schemaTags)
    const states: Array<Expected> = [
      "Queued",
      "Running",
      "Paused",
      "Sleeping",
      "Waiting",
      "Completed",
      "Failed",
      "Cancelled",
      "Abandoned"
    ]
    assert.deepStrictEqual(schemaTags, states)
    // and the states still to come are listed, without a tag
    assert.deepStrictEqual(
      rows.filter((row) => row.split("|")[2]!.trim() === "—").map((row) => row.split("|")[1]!.trim()),
      [
        "scheduled"
      ]
    )
  })
})
