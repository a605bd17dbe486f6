/**
 * The conformance suite every `SessionStore` layer must pass. Each test builds
 * its own store from `layer`, so tests never see each other's sessions.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionStore, WorkflowError, type WorkflowEvent } from "@sessionflow/core"
import { Deferred, Effect, Either, Exit, Fiber, type Layer, Option, Queue, type Scope, TestClock } from "effect"
import { type Collecting, collecting, commitChanges, nextOf } from "./utils.js"

type Store = SessionStore.Service

const run = (
  sessionId: string,
  runId: string,
  extra: Partial<SessionStore.RunRecord> = {}
): SessionStore.RunRecord => ({
  runId,
  sessionId,
  workflowName: "wf",
  status: "completed",
  input: { message: `input of ${runId}` },
  content: `output of ${runId}`,
  startedAt: 100,
  completedAt: 200,
  ...extra
})

const create = (
  store: Store,
  sessionId: string,
  state: unknown,
  options: { readonly userId?: string; readonly workflowName?: string; readonly run?: SessionStore.RunRecord } = {}
) =>
  store.commit({
    sessionId,
    workflowName: options.workflowName ?? "wf",
    expectedVersion: 0,
    state,
    ...(options.userId === undefined ? {} : { userId: options.userId }),
    ...(options.run === undefined ? {} : { run: options.run })
  })

const loadSome = (store: Store, sessionId: string) =>
  Effect.flatMap(store.load(sessionId), (session) =>
    Option.match(session, {
      onNone: () => Effect.dieMessage(`session ${sessionId} should exist`),
      onSome: Effect.succeed
    }))

/** Waits until a fiber has either finished or suspended (for example on a lock). */
const settled = <A, E>(fiber: Fiber.RuntimeFiber<A, E>) =>
  Effect.repeat(fiber.status, { until: (status) => status._tag !== "Running" })

const ids = (infos: ReadonlyArray<SessionStore.SessionInfo>) => infos.map((info) => info.sessionId)

/** How often the watchers of these tests poll (for a polling backend), driven by the TestClock. */
const pollInterval = "100 millis"

/** Watches a session for the rest of the scope: the changes go to a queue. */
const watching = (store: Store, sessionId: string) => collecting(store.watch(sessionId, { pollInterval }))

type Watcher = Effect.Effect.Success<ReturnType<typeof watching>>

/** The next change a watcher receives (driving a polling backend with the TestClock). */
const next = (watcher: Watcher) => nextOf(watcher, pollInterval)

/** The next wake-up of a reader of an event log. */
const woken = (wakes: Collecting<void, unknown>) => nextOf(wakes, pollInterval)

/** The fields of a change a test compares (updatedAt depends on the clock). */
const seen = (change: SessionStore.SessionChange) => ({
  sessionId: change.sessionId,
  workflowName: change.workflowName,
  version: change.version,
  state: change.state,
  runId: change.runId
})

/** A `Log` event of a run (session "s"). */
const logEvent = (runId: string, seq: number): WorkflowEvent.WorkflowEvent => ({
  _tag: "Log",
  runId,
  sessionId: "s",
  seq,
  path: [],
  timestamp: 1000 + seq,
  message: `line ${seq}`
})

/** The event that ends a run. */
const endEvent = (runId: string, seq: number): WorkflowEvent.WorkflowEvent => ({
  _tag: "RunCompleted",
  runId,
  sessionId: "s",
  seq,
  path: [],
  timestamp: 1000 + seq,
  content: { done: [1, "two"] }
})

const logOf = (runId: string, from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => logEvent(runId, from + i))

const seqs = (events: ReadonlyArray<WorkflowEvent.WorkflowEvent>) => events.map((event) => event.seq)

const keep = { maxEvents: 1000, keepFor: 60_000 }

export interface SuiteOptions {
  /**
   * Two stores over one database (two processes), for the tests that need
   * them; without it those tests are left out.
   */
  readonly twoStores?: Effect.Effect<readonly [Store, Store], unknown, Scope.Scope> | undefined
  /** The store made with a `keepRuns` option, for the test of the bound on a session's records. */
  readonly keepingRuns?: ((keepRuns: number) => Layer.Layer<SessionStore.SessionStore, unknown>) | undefined
}

export const suite = (
  name: string,
  layer: Layer.Layer<SessionStore.SessionStore, unknown>,
  options: SuiteOptions = {}
) =>
  describe(name, () => {
    const test = (title: string, body: (store: Store) => Effect.Effect<void, unknown>, timeout?: number) =>
      it.effect(title, () => Effect.flatMap(SessionStore.SessionStore, body).pipe(Effect.provide(layer)), timeout)

    const keepingRuns = options.keepingRuns
    if (keepingRuns !== undefined) {
      it.effect(
        "keepRuns: every 100th state commit of a session trims " +
          "its records to the most recent keepRuns, with their events",
        () =>
          Effect.gen(function*() {
            const store = yield* SessionStore.SessionStore
            for (let i = 1; i <= 99; i++) {
              yield* store.commit({
                sessionId: "k",
                workflowName: "wf",
                expectedVersion: i - 1,
                state: { n: i },
                run: run("k", `k${i}`)
              })
            }
            yield* store.appendEvents("k1", logOf("k1", 0, 2), keep)
            yield* store.appendEvents("k99", logOf("k99", 0, 2), keep)
            assert.strictEqual((yield* store.runs("k", {})).length, 99)
            yield* store.commit({
              sessionId: "k",
              workflowName: "wf",
              expectedVersion: 99,
              state: { n: 100 },
              run: run("k", "k100")
            })
            assert.deepStrictEqual((yield* store.runs("k", {})).map((r) => r.runId), ["k98", "k99", "k100"])
            assert.deepStrictEqual(yield* store.readEvents("k1"), [])
            assert.deepStrictEqual(seqs(yield* store.readEvents("k99")), [0, 1, 2])
          }).pipe(Effect.provide(keepingRuns(3))),
        60_000
      )
    }

    test("load of a missing session is None", (store) =>
      Effect.gen(function*() {
        assert.isTrue(Option.isNone(yield* store.load("missing")))
        assert.deepStrictEqual(yield* store.runs("missing", {}), [])
      }))

    test("the first commit creates the session at version 1 with its state, owner and run", (store) =>
      Effect.gen(function*() {
        yield* TestClock.adjust("1 second")
        const r1 = run("s1", "r1", { userId: "alice" })
        const version = yield* create(store, "s1", { count: 1 }, { userId: "alice", workflowName: "shop", run: r1 })
        assert.strictEqual(version, 1)
        const session = yield* loadSome(store, "s1")
        assert.deepStrictEqual(session, {
          sessionId: "s1",
          workflowName: "shop",
          userId: "alice",
          name: undefined,
          version: 1,
          createdAt: 1000,
          updatedAt: 1000,
          state: { count: 1 }
        })
        assert.deepStrictEqual(yield* store.runs("s1", {}), [r1])
      }))

    test("a run record keeps its token usage; a record without one reads back without it", (store) =>
      Effect.gen(function*() {
        const usage = { inputTokens: 30, outputTokens: 12, totalTokens: 42, reasoningTokens: 5, modelCalls: 2 }
        const r1 = run("s1", "r1", { usage })
        yield* create(store, "s1", { count: 1 }, { run: r1 })
        yield* store.commit({
          sessionId: "s1",
          workflowName: "wf",
          expectedVersion: 1,
          state: { count: 2 },
          run: run("s1", "r2")
        })
        const [first, second] = yield* store.runs("s1", {})
        assert.deepStrictEqual(first, r1)
        assert.notProperty(second, "usage")
        const found = Option.getOrUndefined(yield* store.getRun("r1"))
        assert.deepStrictEqual(found?._tag === "Recorded" ? found.record.usage : undefined, usage)
      }))

    test("a session created without a user has no owner", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { a: 1 })
        const session = yield* loadSome(store, "s1")
        assert.isUndefined(session.userId)
        // anyone may commit to it, and it stays without an owner
        assert.strictEqual(
          yield* store.commit({
            sessionId: "s1",
            workflowName: "wf",
            userId: "bob",
            expectedVersion: 1,
            state: { a: 2 }
          }),
          2
        )
        const after = yield* loadSome(store, "s1")
        assert.isUndefined(after.userId)
        assert.deepStrictEqual(after.state, { a: 2 })
      }))

    // -- kept versions -----------------------------------------------------------

    const commitState = (
      store: Store,
      sessionId: string,
      expectedVersion: number,
      state: unknown,
      extra: Partial<SessionStore.Commit> = {}
    ) => store.commit({ sessionId, workflowName: "wf", expectedVersion, state, ...extra })
    const versionOf = (store: Store, sessionId: string, version: number) =>
      Effect.map(store.loadVersion(sessionId, version), Option.getOrUndefined)

    test("versions: every commit of a state is kept, with its run, time and the top-level keys it changed", (store) =>
      Effect.gen(function*() {
        yield* TestClock.adjust("1 second")
        yield* create(store, "v1", { count: 1, items: [] }, { run: run("v1", "r1") })
        yield* TestClock.adjust("1 second")
        yield* commitState(store, "v1", 1, { count: 2, items: [] }, { run: run("v1", "r2") })
        yield* commitChanges(store, "v1", 2, { count: 2, items: ["a"], note: "n" }, [
          { op: "append", path: ["items"], items: ["a"] },
          { op: "set", path: ["note"], value: "n" }
        ])
        yield* commitState(store, "v1", 3, { items: ["a"], note: "n" })
        assert.deepStrictEqual(yield* store.versions("v1"), [
          { version: 1, runId: "r1", committedAt: 1000, changed: ["count", "items"] },
          { version: 2, runId: "r2", committedAt: 2000, changed: ["count"] },
          { version: 3, committedAt: 2000, changed: ["items", "note"] },
          { version: 4, committedAt: 2000, changed: ["count"] }
        ])
        assert.deepStrictEqual(yield* versionOf(store, "v1", 1), { count: 1, items: [] })
        assert.deepStrictEqual(yield* versionOf(store, "v1", 2), { count: 2, items: [] })
        assert.deepStrictEqual(yield* versionOf(store, "v1", 3), { count: 2, items: ["a"], note: "n" })
        assert.deepStrictEqual(yield* versionOf(store, "v1", 4), { items: ["a"], note: "n" })
        // never committed, or of a session that does not exist
        assert.isUndefined(yield* versionOf(store, "v1", 5))
        assert.isUndefined(yield* versionOf(store, "v1", 0))
        assert.isUndefined(yield* versionOf(store, "missing", 1))
        assert.deepStrictEqual(yield* store.versions("missing"), [])
        // a commit that leaves the state alone makes no version
        yield* store.commit({
          sessionId: "v1",
          workflowName: "wf",
          expectedVersion: 4,
          run: run("v1", "r5", { status: "error" })
        })
        assert.strictEqual((yield* store.versions("v1")).length, 4)
      }))

    test(
      "versions: keep N keeps the last N, each readable as committed, whatever the mix of states and changes",
      (store) =>
        Effect.gen(function*() {
          const history = { keep: 3 }
          yield* store.commit({
            sessionId: "kn",
            workflowName: "wf",
            expectedVersion: 0,
            state: { items: [] as Array<string> },
            history
          })
          const items: Array<string> = []
          for (let version = 1; version <= 12; version++) {
            const item = `i${version}`
            const next = { items: [...items, item] }
            yield* version % 4 === 0
              ? commitState(store, "kn", version, next, { history })
              : store.commit({
                sessionId: "kn",
                workflowName: "wf",
                expectedVersion: version,
                state: next,
                changes: [{ op: "append", path: ["items"], items: [item] }],
                history
              })
            items.push(item)
          }
          assert.deepStrictEqual((yield* store.versions("kn")).map((info) => info.version), [11, 12, 13])
          for (const version of [11, 12, 13]) {
            assert.deepStrictEqual(yield* versionOf(store, "kn", version), { items: items.slice(0, version - 1) })
          }
          assert.isUndefined(yield* versionOf(store, "kn", 10))
          assert.isUndefined(yield* versionOf(store, "kn", 1))
          // the session itself is as committed
          assert.deepStrictEqual((yield* loadSome(store, "kn")).state, { items })
        })
    )

    test("versions: keep none keeps none, and drops those kept before; keep all keeps every one", (store) =>
      Effect.gen(function*() {
        yield* create(store, "kx", { n: 0 })
        yield* commitState(store, "kx", 1, { n: 1 })
        assert.strictEqual((yield* store.versions("kx")).length, 2)
        yield* commitState(store, "kx", 2, { n: 2 }, { history: { keep: "none" } })
        assert.deepStrictEqual(yield* store.versions("kx"), [])
        assert.isUndefined(yield* versionOf(store, "kx", 3))
        for (let version = 3; version < 40; version++) {
          yield* commitChanges(store, "kx", version, { n: version }, [{ op: "set", path: ["n"], value: version }])
        }
        // the default keeps the last 20; the first version after none were kept names its keys
        // only from its changes
        const kept = yield* store.versions("kx")
        assert.deepStrictEqual(kept.map((info) => info.version), Array.from({ length: 20 }, (_, i) => 21 + i))
        assert.isTrue(kept.every((info) => info.changed?.join() === "n"))
        for (let version = 40; version < 70; version++) {
          yield* commitState(store, "kx", version, { n: version }, { history: { keep: "all" } })
        }
        const all = yield* store.versions("kx")
        assert.deepStrictEqual([all[0]?.version, all.at(-1)?.version, all.length], [21, 70, 50])
        assert.deepStrictEqual(yield* versionOf(store, "kx", 21), { n: 20 })
        assert.deepStrictEqual(yield* versionOf(store, "kx", 55), { n: 54 })
        // a whole state after a version not kept: what it changed is not known
        yield* commitState(store, "kx", 70, { n: 70 }, { history: { keep: "none" } })
        yield* commitState(store, "kx", 71, { n: 71 })
        assert.deepStrictEqual(yield* store.versions("kx"), [{ version: 72, committedAt: 0 }])
      }))

    test("versions: removing a session removes its versions", (store) =>
      Effect.gen(function*() {
        yield* create(store, "gone", { a: 1 })
        yield* commitState(store, "gone", 1, { a: 2 })
        assert.isTrue(yield* store.remove("gone"))
        assert.deepStrictEqual(yield* store.versions("gone"), [])
        yield* create(store, "gone", { b: 1 })
        assert.deepStrictEqual((yield* store.versions("gone")).map((info) => info.version), [1])
        assert.isUndefined(yield* versionOf(store, "gone", 2))
      }))

    test(
      "fork: a new session from a kept version, with the versions up " +
        "to it; commits on either leave the other alone",
      (store) =>
        Effect.gen(function*() {
          yield* create(store, "orig", { items: ["a"] }, {
            userId: "alice",
            run: run("orig", "r1", { userId: "alice" })
          })
          yield* store.commit({
            sessionId: "orig",
            workflowName: "wf",
            userId: "alice",
            expectedVersion: 1,
            state: { items: ["a", "b"] }
          })
          yield* store.commit({
            sessionId: "orig",
            workflowName: "wf",
            userId: "alice",
            expectedVersion: 2,
            state: { items: ["a", "b", "c"] }
          })
          yield* TestClock.adjust("3 seconds")
          const info = yield* store.fork({ sessionId: "orig", version: 2, newSessionId: "copy", userId: "alice" })
          assert.deepStrictEqual(
            [info.sessionId, info.workflowName, info.userId, info.version, info.createdAt],
            ["copy", "wf", "alice", 2, 3000]
          )
          const copy = yield* loadSome(store, "copy")
          assert.deepStrictEqual([copy.version, copy.state], [2, { items: ["a", "b"] }])
          assert.deepStrictEqual((yield* store.versions("copy")).map((v) => v.version), [1, 2])
          assert.deepStrictEqual(yield* store.runs("copy", {}), [])
          // the fork goes on from its version; the original is untouched
          yield* store.commit({
            sessionId: "copy",
            workflowName: "wf",
            userId: "alice",
            expectedVersion: 2,
            state: { items: ["a", "b", "x"] }
          })
          assert.deepStrictEqual((yield* loadSome(store, "orig")).state, { items: ["a", "b", "c"] })
          assert.deepStrictEqual(yield* versionOf(store, "orig", 3), { items: ["a", "b", "c"] })
          assert.deepStrictEqual(yield* versionOf(store, "copy", 3), { items: ["a", "b", "x"] })
          yield* store.commit({
            sessionId: "orig",
            workflowName: "wf",
            userId: "alice",
            expectedVersion: 3,
            state: { items: [] }
          })
          assert.deepStrictEqual((yield* loadSome(store, "copy")).state, { items: ["a", "b", "x"] })
          assert.strictEqual((yield* loadSome(store, "copy")).version, 3)
          // what a fork refuses
          const refused = (request: SessionStore.ForkRequest) => Effect.flip(store.fork(request))
          assert.strictEqual(
            (yield* refused({ sessionId: "orig", version: 2, newSessionId: "copy" }))._tag,
            "SessionExists"
          )
          assert.strictEqual(
            (yield* refused({ sessionId: "nope", version: 1, newSessionId: "c2" }))._tag,
            "SessionNotFound"
          )
          const missing = yield* refused({ sessionId: "orig", version: 9, newSessionId: "c2" })
          assert.deepStrictEqual(
            missing._tag === "VersionNotFound" ? [missing.reason, missing.latest] : missing._tag,
            ["missing", 4]
          )
          assert.isTrue(Option.isNone(yield* store.load("c2")))
          // versions no session reaches (past a 4-byte integer, fractional, negative) are not found, on every store
          for (const version of [2 ** 31 - 1, 2 ** 31, Number.MAX_SAFE_INTEGER, 1.5, -1]) {
            const beyond = yield* refused({ sessionId: "orig", version, newSessionId: "c3" })
            assert.strictEqual(beyond._tag, "VersionNotFound", `fork at ${version}`)
            assert.isTrue(Option.isNone(yield* store.loadVersion("orig", version)), `loadVersion at ${version}`)
          }
        })
    )

    test("fork: a version no longer kept is VersionNotFound (not-kept)", (store) =>
      Effect.gen(function*() {
        const history = { keep: 1 }
        yield* store.commit({ sessionId: "short", workflowName: "wf", expectedVersion: 0, state: { n: 1 }, history })
        yield* commitState(store, "short", 1, { n: 2 }, { history })
        const error = yield* Effect.flip(store.fork({ sessionId: "short", version: 1, newSessionId: "short-copy" }))
        assert.deepStrictEqual(error._tag === "VersionNotFound" ? [error.reason, error.latest] : error._tag, [
          "not-kept",
          2
        ])
        const info = yield* store.fork({ sessionId: "short", version: 2, newSessionId: "short-copy" })
        assert.isUndefined(info.userId)
        assert.deepStrictEqual((yield* loadSome(store, "short-copy")).state, { n: 2 })
      }))

    test("a commit with state bumps the version and replaces the state", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { count: 1 }, { run: run("s1", "r1") })
        yield* TestClock.adjust("5 seconds")
        const version = yield* store.commit({
          sessionId: "s1",
          workflowName: "wf",
          expectedVersion: 1,
          state: { count: 2, extra: ["x"] },
          run: run("s1", "r2")
        })
        assert.strictEqual(version, 2)
        const session = yield* loadSome(store, "s1")
        assert.strictEqual(session.version, 2)
        assert.deepStrictEqual(session.state, { count: 2, extra: ["x"] })
        assert.strictEqual(session.createdAt, 0)
        assert.strictEqual(session.updatedAt, 5000)
        assert.deepStrictEqual((yield* store.runs("s1", {})).map((r) => r.runId), ["r1", "r2"])
        assert.strictEqual(
          yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 2, state: { count: 3 } }),
          3
        )
        assert.strictEqual((yield* loadSome(store, "s1")).version, 3)
      }))

    test("a stale expectedVersion fails with SessionConflict and writes nothing", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { v: "one" }, { run: run("s1", "r1") })
        yield* store.commit({
          sessionId: "s1",
          workflowName: "wf",
          expectedVersion: 1,
          state: { v: "two" },
          run: run("s1", "r2")
        })
        yield* TestClock.adjust("1 minute")
        const error = yield* Effect.flip(
          store.commit({
            sessionId: "s1",
            workflowName: "wf",
            expectedVersion: 1,
            state: { v: "stale" },
            run: run("s1", "r3")
          })
        )
        assert.instanceOf(error, WorkflowError.SessionConflict)
        assert.deepInclude(error, { sessionId: "s1", expectedVersion: 1, actualVersion: 2 })
        const session = yield* loadSome(store, "s1")
        assert.deepStrictEqual(session.state, { v: "two" })
        assert.strictEqual(session.version, 2)
        assert.strictEqual(session.updatedAt, 0)
        assert.deepStrictEqual((yield* store.runs("s1", {})).map((r) => r.runId), ["r1", "r2"])
      }))

    test("expectedVersion 0 on an existing session fails with SessionConflict", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { v: "first" })
        const error = yield* Effect.flip(create(store, "s1", { v: "second" }, { run: run("s1", "r2") }))
        assert.instanceOf(error, WorkflowError.SessionConflict)
        assert.deepInclude(error, { sessionId: "s1", expectedVersion: 0, actualVersion: 1 })
        const session = yield* loadSome(store, "s1")
        assert.deepStrictEqual(session.state, { v: "first" })
        assert.strictEqual(session.version, 1)
        assert.deepStrictEqual(yield* store.runs("s1", {}), [])
      }))

    test("a non-zero expectedVersion on a missing session fails with SessionConflict and creates nothing", (store) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(
          store.commit({
            sessionId: "s1",
            workflowName: "wf",
            expectedVersion: 3,
            state: { v: 1 },
            run: run("s1", "r1")
          })
        )
        assert.instanceOf(error, WorkflowError.SessionConflict)
        assert.deepInclude(error, { sessionId: "s1", expectedVersion: 3, actualVersion: 0 })
        assert.isTrue(Option.isNone(yield* store.load("s1")))
        assert.deepStrictEqual(yield* store.runs("s1", {}), [])
      }))

    test("two concurrent commits on one version: exactly one wins", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { winner: "none" })
        const exits = yield* Effect.all(
          ["a", "b"].map((who) =>
            Effect.exit(
              store.commit({
                sessionId: "s1",
                workflowName: "wf",
                expectedVersion: 1,
                state: { winner: who },
                run: run("s1", who)
              })
            )
          ),
          { concurrency: "unbounded" }
        )
        const winners = exits.flatMap((exit, i) => (Exit.isSuccess(exit) ? [["a", "b"][i]] : []))
        assert.strictEqual(winners.length, 1)
        const loser = exits.find(Exit.isFailure)
        assert.isDefined(loser)
        const error = yield* Effect.flip(loser!)
        assert.instanceOf(error, WorkflowError.SessionConflict)
        const session = yield* loadSome(store, "s1")
        assert.deepStrictEqual(session.state, { winner: winners[0] })
        assert.strictEqual(session.version, 2)
        assert.deepStrictEqual((yield* store.runs("s1", {})).map((r) => r.runId), winners)
      }))

    test("a commit without state appends its run and leaves state and version alone", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { keep: true }, { run: run("s1", "r1") })
        yield* TestClock.adjust("2 seconds")
        const failed = run("s1", "r2", { status: "error", error: "boom" })
        // expectedVersion is not checked when no state is written
        const version = yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, run: failed })
        assert.strictEqual(version, 1)
        const session = yield* loadSome(store, "s1")
        assert.deepStrictEqual(session.state, { keep: true })
        assert.strictEqual(session.version, 1)
        assert.strictEqual(session.updatedAt, 2000)
        assert.deepStrictEqual(yield* store.runs("s1", {}), [run("s1", "r1"), failed])
      }))

    test("a commit without state on a missing session fails with SessionNotFound", (store) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(
          store.commit({ sessionId: "nope", workflowName: "wf", expectedVersion: 0, run: run("nope", "r1") })
        )
        assert.instanceOf(error, WorkflowError.SessionNotFound)
        assert.strictEqual(error.sessionId, "nope")
        assert.isTrue(Option.isNone(yield* store.load("nope")))
        assert.deepStrictEqual(yield* store.runs("nope", {}), [])
      }))

    test("a session owned by one user rejects commits from another user or from no user", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { owner: "alice" }, { userId: "alice", run: run("s1", "r1") })
        const attempts = [
          { userId: "bob", expectedVersion: 1, state: { owner: "bob" } },
          { expectedVersion: 1, state: { owner: "nobody" } },
          // ownership is checked before the version
          { userId: "bob", expectedVersion: 7, state: { owner: "bob" } },
          // and also for commits without state
          { userId: "bob", expectedVersion: 1 },
          {}
        ]
        for (const [i, attempt] of attempts.entries()) {
          const error = yield* Effect.flip(
            store.commit({
              sessionId: "s1",
              workflowName: "wf",
              expectedVersion: 1,
              ...attempt,
              run: run("s1", `x${i}`)
            })
          )
          assert.instanceOf(error, WorkflowError.SessionOwnershipError)
          assert.strictEqual(error.sessionId, "s1")
          assert.strictEqual(error.ownerId, "alice")
          assert.strictEqual(error.userId, "userId" in attempt ? attempt.userId : undefined)
        }
        const session = yield* loadSome(store, "s1")
        assert.deepStrictEqual(session.state, { owner: "alice" })
        assert.strictEqual(session.version, 1)
        assert.strictEqual(session.userId, "alice")
        assert.deepStrictEqual((yield* store.runs("s1", {})).map((r) => r.runId), ["r1"])
        // the owner still may
        assert.strictEqual(
          yield* store.commit({
            sessionId: "s1",
            workflowName: "wf",
            userId: "alice",
            expectedVersion: 1,
            state: { owner: "alice", n: 2 }
          }),
          2
        )
      }))

    test("list filters by workflow and user, most recently updated first, ties by session id", (store) =>
      Effect.gen(function*() {
        yield* TestClock.adjust("1 second")
        yield* create(store, "s1", {}, { workflowName: "alpha", userId: "u1" })
        yield* TestClock.adjust("1 second")
        yield* create(store, "s2", {}, { workflowName: "beta", userId: "u1" })
        yield* TestClock.adjust("1 second")
        yield* create(store, "s3", {}, { workflowName: "alpha", userId: "u2" })
        yield* TestClock.adjust("1 second")
        yield* create(store, "s4", {}, { workflowName: "alpha" })

        assert.deepStrictEqual(ids((yield* store.list({})).sessions), ["s4", "s3", "s2", "s1"])
        assert.deepStrictEqual(ids((yield* store.list({ workflowName: "alpha" })).sessions), ["s4", "s3", "s1"])
        assert.deepStrictEqual(ids((yield* store.list({ userId: "u1" })).sessions), ["s2", "s1"])
        assert.deepStrictEqual(ids((yield* store.list({ workflowName: "alpha", userId: "u1" })).sessions), ["s1"])
        assert.deepStrictEqual(ids((yield* store.list({ workflowName: "gamma" })).sessions), [])

        const [s3] = (yield* store.list({ userId: "u2" })).sessions
        assert.deepStrictEqual(s3, {
          sessionId: "s3",
          workflowName: "alpha",
          userId: "u2",
          name: undefined,
          version: 1,
          createdAt: 3000,
          updatedAt: 3000
        })

        // a run-only commit and a state commit both move a session to the front
        yield* TestClock.adjust("1 second")
        yield* store.commit({
          sessionId: "s1",
          workflowName: "alpha",
          userId: "u1",
          expectedVersion: 0,
          run: run("s1", "r1")
        })
        assert.deepStrictEqual(ids((yield* store.list({})).sessions), ["s1", "s4", "s3", "s2"])
        yield* TestClock.adjust("1 second")
        yield* store.commit({
          sessionId: "s2",
          workflowName: "beta",
          userId: "u1",
          expectedVersion: 1,
          state: { n: 1 }
        })
        assert.deepStrictEqual(ids((yield* store.list({})).sessions), ["s2", "s1", "s4", "s3"])

        // equal update times are ordered by session id
        yield* TestClock.adjust("1 second")
        yield* create(store, "t-b", {})
        yield* create(store, "t-c", {})
        yield* create(store, "t-a", {})
        assert.deepStrictEqual(ids((yield* store.list({})).sessions), ["t-a", "t-b", "t-c", "s2", "s1", "s4", "s3"])
      }))

    /** Every page of a listing from `after` on, each read with `limit`. */
    const walk = <A, C>(
      read: (
        after: C | undefined
      ) => Effect.Effect<{ readonly items: ReadonlyArray<A>; readonly next?: C | undefined }, unknown>,
      between: (page: number) => Effect.Effect<void, unknown> = () => Effect.void
    ) =>
      Effect.gen(function*() {
        const pages: Array<ReadonlyArray<A>> = []
        let after: C | undefined
        do {
          const page = yield* read(after)
          pages.push(page.items)
          after = page.next
          yield* between(pages.length)
        } while (after !== undefined && pages.length < 100)
        return pages
      })

    test(
      "list pages by keyset: a page of N holds N sessions, and the " +
        "cursor walks the listing once, in order, while sessions are added",
      (store) =>
        Effect.gen(function*() {
          // 23 sessions over 8 update times (ties ordered by id), two owners and the ownerless, two workflows
          const created: Array<string> = []
          for (let i = 0; i < 23; i++) {
            if (i % 3 === 0) yield* TestClock.adjust("1 second")
            const sessionId = `p${String(i).padStart(2, "0")}`
            yield* create(store, sessionId, { i }, {
              workflowName: i % 5 === 4 ? "other" : "wf",
              ...(i % 4 === 0 ? {} : { userId: i % 4 === 1 ? "ann" : "bob" })
            })
            created.push(sessionId)
          }
          const listed = (filter: SessionStore.ListFilter) =>
            walk((after: SessionStore.SessionCursor | undefined) =>
              Effect.map(store.list({ ...filter, after, limit: 4 }), (l) => ({ items: ids(l.sessions), next: l.next }))
            )
          for (
            const filter of [{}, { workflowName: "wf" }, { workflowName: "wf", userId: "ann" }, { userId: null }, {
              workflowName: "wf",
              userId: null,
              updatedSince: 3000
            }] satisfies ReadonlyArray<SessionStore.ListFilter>
          ) {
            const whole = ids((yield* store.list(filter)).sessions)
            const pages = yield* listed(filter)
            // full pages but the last; every session once, in the listing's order
            assert.deepStrictEqual(
              pages.map((p) => p.length),
              whole.map((_, i) => i).filter((i) => i % 4 === 0).map((i) => Math.min(4, whole.length - i)),
              JSON.stringify(filter)
            )
            assert.deepStrictEqual(pages.flat(), whole, JSON.stringify(filter))
          }
          assert.deepStrictEqual(
            ids((yield* store.list({ userId: null })).sessions),
            created.filter((_, i) => i % 4 === 0).reverse()
          )

          // sessions added (and one updated, to the front) between
          // pages are not met on the way: the rest comes once, in order
          const before = ids((yield* store.list({})).sessions)
          const pages = yield* walk(
            (after: SessionStore.SessionCursor | undefined) =>
              Effect.map(store.list({ after, limit: 5 }), (l) => ({ items: ids(l.sessions), next: l.next })),
            (page) =>
              Effect.gen(function*() {
                yield* TestClock.adjust("1 second")
                yield* create(store, `new-${page}`, {})
                if (page === 1) yield* store.setName(before[0]!, "renamed")
              })
          )
          assert.deepStrictEqual(pages.flat(), before)
          // a limit of 0 reads nothing; no limit reads all
          assert.deepStrictEqual(yield* store.list({ limit: 0 }), { sessions: [], broken: [] })
          assert.strictEqual((yield* store.list({})).next, undefined)
        })
    )

    test(
      "list searches ids and names in the store: A to Z in either " +
        "case, any other character as it is; pages of a search by keyset",
      (store) =>
        Effect.gen(function*() {
          for (
            const [sessionId, name] of [
              ["Order-7", undefined],
              ["q-order", undefined],
              ["x1", "Big ORDER"],
              ["x2", "ordinary"],
              ["x3", undefined],
              ["Émile", "Été"],
              ["x4", "100%_done"]
            ] as const
          ) {
            yield* TestClock.adjust("1 second")
            yield* create(store, sessionId, {})
            if (name !== undefined) yield* store.setName(sessionId, name)
          }
          const found = (search: string) => Effect.map(store.list({ search }), (l) => ids(l.sessions))
          assert.deepStrictEqual(yield* found("order"), ["x1", "q-order", "Order-7"])
          assert.deepStrictEqual(yield* found("ORD"), ["x2", "x1", "q-order", "Order-7"])
          assert.deepStrictEqual(yield* found("der-7"), ["Order-7"])
          // only A to Z are folded: É and é differ, on every store
          assert.deepStrictEqual(yield* found("É"), ["Émile"])
          assert.deepStrictEqual(yield* found("é"), ["Émile"])
          assert.deepStrictEqual(yield* found("émile"), [])
          // % and _ are characters, not patterns
          assert.deepStrictEqual(yield* found("%_"), ["x4"])
          assert.deepStrictEqual(yield* found("1%"), [])
          assert.deepStrictEqual(yield* found("nothing like it"), [])
          assert.strictEqual((yield* found("")).length, 7)
          // with the other filters, a page at a time
          const first = yield* store.list({ search: "o", limit: 2 })
          assert.deepStrictEqual(ids(first.sessions), ["x4", "x2"])
          const rest = yield* store.list({ search: "o", after: first.next })
          assert.deepStrictEqual([ids(rest.sessions), rest.next], [["x1", "q-order", "Order-7"], undefined])
          assert.deepStrictEqual(ids((yield* store.list({ search: "order", workflowName: "none" })).sessions), [])
        })
    )

    test("ties in a listing are ordered by code point (as UTF-8 bytes), the same on every store", (store) =>
      Effect.gen(function*() {
        for (const sessionId of ["t-\u{1F600}", "t-\uFFFD", "t-z"]) yield* create(store, sessionId, {})
        assert.deepStrictEqual(ids((yield* store.list({})).sessions), ["t-z", "t-\uFFFD", "t-\u{1F600}"])
        const first = yield* store.list({ limit: 2 })
        assert.deepStrictEqual(ids(first.sessions), ["t-z", "t-\uFFFD"])
        assert.deepStrictEqual(ids((yield* store.list({ limit: 2, after: first.next })).sessions), ["t-\u{1F600}"])
      }))

    test(
      "listRuns pages a workflow's unfinished and recorded runs " +
        "together, most recently started first, by user, status and session",
      (store) =>
        Effect.gen(function*() {
          const runIds = (listing: SessionStore.RunListing) =>
            listing.runs.map((r) =>
              r._tag === "Active" ? `${r.run.runId}:${r.run.status}` : `${r.record.runId}:${r.record.status}`
            )
          const statuses = ["completed", "error", "cancelled"] as const
          // 3 sessions (ann's, bob's, ownerless) with 6 records each, started 10 ms apart, two at each time
          for (const [s, userId] of [["sa", "ann"], ["sb", "bob"], ["sn", undefined]] as const) {
            for (let i = 0; i < 6; i++) {
              const record = run(s, `${s}-r${i}`, {
                status: statuses[i % 3]!,
                startedAt: 1000 + 10 * Math.floor(i / 2),
                ...(userId === undefined ? {} : { userId })
              })
              yield* store.commit({
                sessionId: s,
                workflowName: "wf",
                expectedVersion: i === 0 ? 0 : i,
                state: { i },
                run: record,
                ...(userId === undefined ? {} : { userId })
              })
            }
          }
          // another workflow's run is never listed
          yield* create(store, "so", {}, {
            workflowName: "other",
            run: run("so", "so-r0", { workflowName: "other", startedAt: 5000 })
          })
          // unfinished: ann's running and paused runs; her failed
          // run's id does not start again (listed once, as it ended)
          yield* store.startRun(active("sa-run", "sa", { userId: "ann", startedAt: 2000 }))
          yield* store.startRun(
            active("sa-paused", "sa", { userId: "ann", status: "paused", owner: "", startedAt: 1015 })
          )
          yield* store.startRun(active("sa-r1", "sa", { userId: "ann", startedAt: 3000 }))
          const pagesOf = (filter: SessionStore.RunListFilter) =>
            walk((after: SessionStore.RunCursor | undefined) =>
              Effect.map(store.listRuns({ ...filter, after, limit: 3 }), (l) => ({ items: runIds(l), next: l.next }))
            )
          const ann = yield* pagesOf({ workflowName: "wf", userId: "ann" })
          assert.deepStrictEqual(ann.flat(), [
            "sa-run:running",
            "sa-r4:error",
            "sa-r5:cancelled",
            "sa-paused:paused",
            "sa-r2:cancelled",
            "sa-r3:completed",
            "sa-r0:completed",
            "sa-r1:error"
          ])
          assert.deepStrictEqual(ann.map((p) => p.length), [3, 3, 2])
          assert.deepStrictEqual((yield* pagesOf({ workflowName: "wf", userId: null })).flat(), [
            "sn-r4:error",
            "sn-r5:cancelled",
            "sn-r2:cancelled",
            "sn-r3:completed",
            "sn-r0:completed",
            "sn-r1:error"
          ])
          assert.deepStrictEqual((yield* pagesOf({ workflowName: "wf", userId: "bob", status: "error" })).flat(), [
            "sb-r4:error",
            "sb-r1:error"
          ])
          assert.deepStrictEqual((yield* pagesOf({ workflowName: "wf", userId: "ann", status: "running" })).flat(), [
            "sa-run:running"
          ])
          assert.deepStrictEqual((yield* pagesOf({ workflowName: "wf", userId: "ann", status: "error" })).flat(), [
            "sa-r4:error",
            "sa-r1:error"
          ])
          assert.deepStrictEqual((yield* pagesOf({ workflowName: "wf", sessionId: "sb" })).flat().length, 6)
          assert.deepStrictEqual((yield* pagesOf({ workflowName: "other" })).flat(), ["so-r0:completed"])

          // runs started between pages (later than the cursor) are not met on the way; the rest comes once
          const whole = runIds(yield* store.listRuns({ workflowName: "wf" }))
          const walked = yield* walk(
            (after: SessionStore.RunCursor | undefined) =>
              Effect.map(
                store.listRuns({ workflowName: "wf", after, limit: 4 }),
                (l) => ({ items: runIds(l), next: l.next })
              ),
            (page) => Effect.asVoid(store.startRun(active(`late-${page}`, "sb", { startedAt: 4000 + page })))
          )
          assert.deepStrictEqual(walked.flat(), whole)
          assert.strictEqual(whole.length, 20)
        })
    )

    test("remove deletes the session and its history", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { n: 1 }, { run: run("s1", "r1") })
        yield* store.commit({
          sessionId: "s1",
          workflowName: "wf",
          expectedVersion: 1,
          state: { n: 2 },
          run: run("s1", "r2")
        })
        yield* store.setName("s1", "named")
        yield* create(store, "s2", { other: true }, { run: run("s2", "r3") })

        assert.isTrue(yield* store.remove("s1"))
        assert.isTrue(Option.isNone(yield* store.load("s1")))
        assert.deepStrictEqual(yield* store.runs("s1", {}), [])
        assert.deepStrictEqual(ids((yield* store.list({})).sessions), ["s2"])
        assert.isFalse(yield* store.remove("s1"))
        assert.isFalse(yield* store.remove("never-existed"))

        // the other session is untouched
        assert.deepStrictEqual((yield* loadSome(store, "s2")).state, { other: true })
        assert.deepStrictEqual((yield* store.runs("s2", {})).map((r) => r.runId), ["r3"])

        // a new session with the same id starts from scratch
        assert.strictEqual(yield* create(store, "s1", { fresh: true }, { run: run("s1", "r4") }), 1)
        const fresh = yield* loadSome(store, "s1")
        assert.isUndefined(fresh.name)
        assert.deepStrictEqual((yield* store.runs("s1", {})).map((r) => r.runId), ["r4"])
      }))

    test("setName names a session; a missing session fails with SessionNotFound", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { n: 1 })
        yield* TestClock.adjust("3 seconds")
        yield* store.setName("s1", "Weekend trip ✈️")
        const session = yield* loadSome(store, "s1")
        assert.strictEqual(session.name, "Weekend trip ✈️")
        assert.strictEqual(session.version, 1)
        assert.deepStrictEqual(session.state, { n: 1 })
        assert.strictEqual(session.updatedAt, 3000)
        assert.strictEqual((yield* store.list({})).sessions[0].name, "Weekend trip ✈️")

        yield* store.setName("s1", "Renamed")
        assert.strictEqual((yield* loadSome(store, "s1")).name, "Renamed")
        // later commits keep the name
        yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 1, state: { n: 2 } })
        assert.strictEqual((yield* loadSome(store, "s1")).name, "Renamed")

        const error = yield* Effect.flip(store.setName("missing", "x"))
        assert.instanceOf(error, WorkflowError.SessionNotFound)
        assert.strictEqual(error.sessionId, "missing")
        assert.isTrue(Option.isNone(yield* store.load("missing")))
      }))

    test("runs are kept oldest first, exactly as committed; limit keeps the most recent", (store) =>
      Effect.gen(function*() {
        const records = [
          run("s1", "r1", { userId: "alice", input: { nested: { list: [1, 2, 3] } }, startedAt: 1, completedAt: 2 }),
          run("s1", "r2", { status: "error", error: "step 'a' failed", startedAt: 3, completedAt: 4 }),
          run("s1", "r3", { status: "cancelled", content: null, input: "plain text", startedAt: 5, completedAt: 6 }),
          {
            runId: "r4",
            sessionId: "s1",
            workflowName: "wf",
            status: "completed",
            input: null,
            startedAt: 7,
            completedAt: 8
          } as const,
          run("s1", "r5", { content: { structured: ["output", 1] }, startedAt: 9, completedAt: 10 })
        ]
        yield* create(store, "s1", { n: 0 }, { userId: "alice", run: records[0] })
        yield* store.commit({
          sessionId: "s1",
          workflowName: "wf",
          userId: "alice",
          expectedVersion: 0,
          run: records[1]
        })
        yield* store.commit({
          sessionId: "s1",
          workflowName: "wf",
          userId: "alice",
          expectedVersion: 1,
          state: { n: 1 },
          run: records[2]
        })
        yield* create(store, "s2", {}, { run: run("s2", "other") })
        yield* store.commit({
          sessionId: "s1",
          workflowName: "wf",
          userId: "alice",
          expectedVersion: 2,
          state: { n: 2 },
          run: records[3]
        })
        yield* store.commit({
          sessionId: "s1",
          workflowName: "wf",
          userId: "alice",
          expectedVersion: 0,
          run: records[4]
        })

        assert.deepStrictEqual(yield* store.runs("s1", {}), records)
        assert.deepStrictEqual(yield* store.runs("s1", { limit: undefined }), records)
        assert.deepStrictEqual(yield* store.runs("s1", { limit: 2 }), records.slice(3))
        assert.deepStrictEqual(yield* store.runs("s1", { limit: 1 }), records.slice(4))
        assert.deepStrictEqual(yield* store.runs("s1", { limit: 5 }), records)
        assert.deepStrictEqual(yield* store.runs("s1", { limit: 50 }), records)
        assert.deepStrictEqual(yield* store.runs("s1", { limit: 0 }), [])
        assert.deepStrictEqual(yield* store.runs("s2", {}), [run("s2", "other")])
        // a commit without a run adds none
        assert.strictEqual(
          yield* store.commit({
            sessionId: "s1",
            workflowName: "wf",
            userId: "alice",
            expectedVersion: 3,
            state: { n: 3 }
          }),
          4
        )
        assert.strictEqual((yield* store.runs("s1", {})).length, 5)
      }))

    test("withSessionLock serialises two fibers on one session", (store) =>
      Effect.gen(function*() {
        const events: Array<string> = []
        const aInside = yield* Deferred.make<void>()
        const aRelease = yield* Deferred.make<void>()
        const a = yield* Effect.fork(
          store.withSessionLock("s1")(Effect.gen(function*() {
            events.push("a:start")
            yield* Deferred.succeed(aInside, undefined)
            yield* Deferred.await(aRelease)
            events.push("a:end")
          }))
        )
        yield* Deferred.await(aInside)
        const b = yield* Effect.fork(store.withSessionLock("s1")(Effect.sync(() => events.push("b"))))
        yield* settled(b)
        assert.deepStrictEqual(events, ["a:start"])
        assert.strictEqual((yield* b.status)._tag, "Suspended")
        yield* Deferred.succeed(aRelease, undefined)
        yield* Fiber.join(a)
        yield* Fiber.join(b)
        assert.deepStrictEqual(events, ["a:start", "a:end", "b"])
      }), 10_000)

    test(
      "withSessionLock: a fiber interrupted while it waits gives up its turn; an interrupted holder lets the lock go",
      (store) =>
        Effect.gen(function*() {
          const events: Array<string> = []
          const aInside = yield* Deferred.make<void>()
          const a = yield* Effect.fork(
            store.withSessionLock("s1")(Effect.zipRight(Deferred.succeed(aInside, undefined), Effect.never))
          )
          yield* Deferred.await(aInside)
          const b = yield* Effect.fork(store.withSessionLock("s1")(Effect.sync(() => events.push("b"))))
          const c = yield* Effect.fork(store.withSessionLock("s1")(Effect.sync(() => events.push("c"))))
          yield* settled(b)
          yield* settled(c)
          yield* Fiber.interrupt(b)
          assert.deepStrictEqual(events, [])
          assert.strictEqual((yield* c.status)._tag, "Suspended")
          yield* Fiber.interrupt(a)
          yield* Fiber.join(c)
          assert.deepStrictEqual(events, ["c"])
          // free again, and taken again at once
          yield* store.withSessionLock("s1")(Effect.sync(() => events.push("d")))
          assert.deepStrictEqual(events, ["c", "d"])
        }),
      10_000
    )

    test("withSessionLock does not serialise different sessions", (store) =>
      Effect.gen(function*() {
        const events: Array<string> = []
        const aInside = yield* Deferred.make<void>()
        const aRelease = yield* Deferred.make<void>()
        const a = yield* Effect.fork(
          store.withSessionLock("s1")(Effect.gen(function*() {
            events.push("a:start")
            yield* Deferred.succeed(aInside, undefined)
            yield* Deferred.await(aRelease)
            events.push("a:end")
          }))
        )
        yield* Deferred.await(aInside)
        const b = yield* Effect.fork(store.withSessionLock("s2")(Effect.sync(() => events.push("b"))))
        yield* settled(b)
        assert.strictEqual((yield* b.status)._tag, "Done")
        assert.deepStrictEqual(events, ["a:start", "b"])
        yield* Deferred.succeed(aRelease, undefined)
        yield* Fiber.join(a)
        assert.deepStrictEqual(events, ["a:start", "b", "a:end"])
      }), 10_000)

    test("read-modify-commit inside withSessionLock loses no update among concurrent fibers", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { items: [] })
        yield* Effect.forEach(
          Array.from({ length: 10 }, (_, i) => i),
          (i) =>
            store.withSessionLock("s1")(Effect.gen(function*() {
              const session = yield* loadSome(store, "s1")
              const items = (session.state as { items: Array<number> }).items
              yield* Effect.yieldNow()
              yield* store.commit({
                sessionId: "s1",
                workflowName: "wf",
                expectedVersion: session.version,
                state: { items: [...items, i] },
                run: run("s1", `r${i}`)
              })
            })),
          { concurrency: "unbounded", discard: true }
        )
        const session = yield* loadSome(store, "s1")
        const items = (session.state as { items: Array<number> }).items
        assert.deepStrictEqual([...items].sort((x, y) => x - y), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        assert.strictEqual(session.version, 11)
        assert.strictEqual((yield* store.runs("s1", {})).length, 10)
      }))

    test("states with nested objects and unicode round-trip exactly; the stored state is a copy", (store) =>
      Effect.gen(function*() {
        const state = {
          text: "héllo wörld — 日本語 — Ελληνικά — עברית 🎉👩‍👩‍👧‍👦",
          escapes: "quote \" backslash \\ newline \n tab \t nul \u0000 lone surrogate \ud800 end",
          "key with spaces & ünïcode 🔑": "value",
          nested: { list: [1, "two", { three: [3, null, true, false] }], empty: {}, emptyList: [] },
          numbers: { int: 42, negative: -7, float: 3.14159, big: Number.MAX_SAFE_INTEGER, tiny: 1e-12, zero: 0 },
          nothing: null
        }
        const input = structuredClone(state)
        yield* create(store, "s1", input)
        input.nested.list.push("mutated after commit")
        input.text = "mutated"
        assert.deepStrictEqual((yield* loadSome(store, "s1")).state, state)

        const loaded = (yield* loadSome(store, "s1")).state as typeof state
        loaded.nested.list.push("mutated after load")
        assert.deepStrictEqual((yield* loadSome(store, "s1")).state, state)

        // any JSON value is a state, including arrays and null
        yield* create(store, "s-array", [1, { a: "ü" }, []])
        assert.deepStrictEqual((yield* loadSome(store, "s-array")).state, [1, { a: "ü" }, []])
        yield* create(store, "s-null", null)
        assert.isNull((yield* loadSome(store, "s-null")).state)
        // a session id with unusual characters
        yield* create(store, "sessión/1 'quoted' \"ids\" 🎯", { ok: true })
        assert.deepStrictEqual((yield* loadSome(store, "sessión/1 'quoted' \"ids\" 🎯")).state, { ok: true })
      }))

    test("load with knownVersion leaves the state out while the session is at that version", (store) =>
      Effect.gen(function*() {
        assert.isTrue(Option.isNone(yield* store.load("s1", { knownVersion: 1 })))
        yield* create(store, "s1", { a: 1 })
        const same = yield* Effect.map(store.load("s1", { knownVersion: 1 }), Option.getOrThrow)
        assert.isTrue(same.unchanged)
        assert.isUndefined(same.state)
        assert.strictEqual(same.version, 1)
        assert.strictEqual(same.sessionId, "s1")

        yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 1, state: { a: 2 } })
        const changed = yield* Effect.map(store.load("s1", { knownVersion: 1 }), Option.getOrThrow)
        assert.notStrictEqual(changed.unchanged, true)
        assert.deepStrictEqual(changed.state, { a: 2 })
        assert.strictEqual(changed.version, 2)
        assert.isTrue((yield* Effect.map(store.load("s1", { knownVersion: 2 }), Option.getOrThrow)).unchanged)
        // a commit without state (a run record) keeps the version, so the state is still known
        yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 2, run: run("s1", "r1") })
        assert.isTrue((yield* Effect.map(store.load("s1", { knownVersion: 2 }), Option.getOrThrow)).unchanged)

        // removed and made anew: the version starts again, the creation time tells them apart
        yield* store.remove("s1")
        yield* TestClock.adjust("1 second")
        yield* create(store, "s1", { a: "new" })
        const remade = yield* Effect.map(store.load("s1", { knownVersion: 1 }), Option.getOrThrow)
        assert.strictEqual(remade.version, 1)
        assert.strictEqual(remade.createdAt, 1000)
        assert.notStrictEqual(remade.createdAt, same.createdAt)
      }))

    // -- commits with changes (`persist: "changes"`) -------------------------------
    // A store may keep the changes instead of the state, or ignore them; either
    // way every load and watcher sees exactly the committed state.

    test("commits with changes read back as their states, version after version", (store) =>
      Effect.gen(function*() {
        yield* create(store, "c1", { counter: 0, items: [], meta: { by: "x", gone: 1 } })
        let expected = { counter: 0, items: [] as Array<unknown>, meta: { by: "x" } as Record<string, unknown> }
        for (let n = 1; n <= 5; n++) {
          const item = { n, tags: [`t${n}`] }
          const next = { ...expected, counter: n, items: [...expected.items, item], meta: { by: `run ${n}` } }
          const version = yield* commitChanges(store, "c1", n, next, [
            { op: "set", path: ["counter"], value: n },
            { op: "append", path: ["items"], items: [item] },
            n === 1
              ? { op: "delete", path: ["meta", "gone"], previous: null }
              : { op: "set", path: ["meta", "by"], value: `run ${n}` },
            ...(n === 1 ? [{ op: "set" as const, path: ["meta", "by"], value: `run ${n}` }] : [])
          ])
          assert.strictEqual(version, n + 1)
          expected = next
          const loaded = yield* loadSome(store, "c1")
          // what a load hands out is the caller's own
          assert.deepStrictEqual([loaded.version, loaded.state], [n + 1, expected])
          ;(loaded.state as { items: Array<unknown> }).items.push("mutated")
          assert.deepStrictEqual((yield* loadSome(store, "c1")).state, expected)
        }
        assert.isTrue((yield* Effect.map(store.load("c1", { knownVersion: 6 }), Option.getOrThrow)).unchanged)
        // the values a commit hands in are copied: changing them later changes nothing stored
        const added = { n: 6 }
        yield* commitChanges(store, "c1", 6, { ...expected, items: [...expected.items, added] }, [
          { op: "append", path: ["items"], items: [added] }
        ])
        added.n = 666
        assert.deepStrictEqual(((yield* loadSome(store, "c1")).state as typeof expected).items.at(-1), { n: 6 })
      }))

    test("changes that outweigh the state are folded into it; loads stay exact before and after", (store) =>
      Effect.gen(function*() {
        yield* create(store, "big", { log: [] })
        const log: Array<string> = []
        const line = "x".repeat(10_000)
        // about 150,000 characters of changes on a state that starts empty
        for (let n = 1; n <= 15; n++) {
          const entry = `${n}:${line}`
          log.push(entry)
          yield* commitChanges(store, "big", n, { log: [...log] }, [{ op: "append", path: ["log"], items: [entry] }])
          const loaded = yield* loadSome(store, "big")
          assert.strictEqual(loaded.version, n + 1)
          assert.deepStrictEqual(
            (loaded.state as { log: Array<string> }).log.map((l) => l.split(":")[0]),
            log.map((l) => l.split(":")[0])
          )
          assert.deepStrictEqual(loaded.state, { log })
        }
      }))

    test("a whole-state commit after changes replaces the state and them; changes after it start from it", (store) =>
      Effect.gen(function*() {
        yield* create(store, "mix", { items: ["a"] })
        yield* commitChanges(store, "mix", 1, { items: ["a", "b"] }, [{ op: "append", path: ["items"], items: ["b"] }])
        yield* store.commit({ sessionId: "mix", workflowName: "wf", expectedVersion: 2, state: { items: ["z"] } })
        assert.deepStrictEqual((yield* loadSome(store, "mix")).state, { items: ["z"] })
        yield* commitChanges(store, "mix", 3, { items: ["z", "y"] }, [{ op: "append", path: ["items"], items: ["y"] }])
        const loaded = yield* loadSome(store, "mix")
        assert.deepStrictEqual([loaded.version, loaded.state], [4, { items: ["z", "y"] }])
      }))

    test("a commit with changes on a stale version is a SessionConflict and writes nothing", (store) =>
      Effect.gen(function*() {
        yield* create(store, "stale", { items: [] })
        yield* commitChanges(store, "stale", 1, { items: ["a"] }, [{ op: "append", path: ["items"], items: ["a"] }])
        const conflict = yield* Effect.flip(
          commitChanges(
            store,
            "stale",
            1,
            { items: ["b"] },
            [{ op: "append", path: ["items"], items: ["b"] }],
            run("stale", "late")
          )
        )
        assert.deepInclude(conflict, { _tag: "SessionConflict", expectedVersion: 1, actualVersion: 2 })
        const loaded = yield* loadSome(store, "stale")
        assert.deepStrictEqual([loaded.version, loaded.state], [2, { items: ["a"] }])
        assert.deepStrictEqual(yield* store.runs("stale", {}), [])
      }))

    test("watch sees the states that commits with changes made", (store) =>
      Effect.gen(function*() {
        yield* create(store, "wc", { items: [] })
        const watcher = yield* watching(store, "wc")
        assert.strictEqual((yield* next(watcher)).version, 1)
        yield* commitChanges(
          store,
          "wc",
          1,
          { items: ["a"] },
          [{ op: "append", path: ["items"], items: ["a"] }],
          run("wc", "r2")
        )
        assert.deepStrictEqual(seen(yield* next(watcher)), {
          sessionId: "wc",
          workflowName: "wf",
          version: 2,
          state: { items: ["a"] },
          runId: "r2"
        })
        yield* commitChanges(
          store,
          "wc",
          2,
          { items: ["a", "b"] },
          [{ op: "append", path: ["items"], items: ["b"] }],
          run("wc", "r3")
        )
        assert.deepStrictEqual(seen(yield* next(watcher)), {
          sessionId: "wc",
          workflowName: "wf",
          version: 3,
          state: { items: ["a", "b"] },
          runId: "r3"
        })
      }).pipe(Effect.scoped))

    test("remove drops the kept changes: a session made anew under the id has only its own state", (store) =>
      Effect.gen(function*() {
        yield* create(store, "again", { items: ["old"] })
        yield* commitChanges(store, "again", 1, { items: ["old", "older"] }, [{
          op: "append",
          path: ["items"],
          items: ["older"]
        }])
        assert.isTrue(yield* store.remove("again"))
        yield* create(store, "again", { items: [] })
        yield* commitChanges(store, "again", 1, { items: ["new"] }, [{ op: "append", path: ["items"], items: ["new"] }])
        const loaded = yield* loadSome(store, "again")
        assert.deepStrictEqual([loaded.version, loaded.state], [2, { items: ["new"] }])
      }))

    test("a state that is not plain JSON is stored as its JSON reads back", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { at: new Date(0), gone: undefined, list: [1, 2], "__proto__": { x: 1 } })
        const loaded = (yield* loadSome(store, "s1")).state as Record<string, unknown>
        assert.deepStrictEqual(loaded, JSON.parse(JSON.stringify({ at: new Date(0), list: [1, 2] })))
        yield* create(store, "s2", JSON.parse(`{"__proto__": {"x": 1}, "k": [1, {"v": null}]}`))
        const proto = (yield* loadSome(store, "s2")).state as Record<string, unknown>
        assert.deepStrictEqual(Object.keys(proto), ["__proto__", "k"])
        assert.strictEqual(Object.getPrototypeOf(proto), Object.prototype)
        assert.deepStrictEqual(JSON.stringify(proto), `{"__proto__":{"x":1},"k":[1,{"v":null}]}`)
      }))

    test("a kept change at a __proto__ key changes that key only, never a prototype", (store) =>
      Effect.gen(function*() {
        // a "__proto__" key the state has is kept and changed like any other
        yield* create(store, "own", JSON.parse(`{"__proto__": {"x": 1}, "n": 1}`))
        yield* commitChanges(store, "own", 1, JSON.parse(`{"__proto__": {"x": 2}, "n": 1}`), [
          { op: "set", path: ["__proto__", "x"], value: 2 }
        ])
        const own = (yield* loadSome(store, "own")).state as Record<string, unknown>
        assert.deepStrictEqual(JSON.stringify(own), `{"__proto__":{"x":2},"n":1}`)
        assert.strictEqual(Object.getPrototypeOf(own), Object.prototype)
        // one the state does not have is not the prototype: the change does not fit
        yield* create(store, "none", { n: 1 })
        const committed = yield* Effect.exit(commitChanges(store, "none", 1, { n: 1 }, [
          { op: "set", path: ["__proto__", "polluted"], value: true }
        ]))
        const loaded = yield* Effect.exit(store.load("none"))
        try {
          assert.isFalse("polluted" in {}, "Object.prototype was changed")
          assert.isTrue(Exit.isFailure(committed) || Exit.isFailure(loaded), "a change that does not fit was applied")
        } finally {
          delete (Object.prototype as Record<string, unknown>).polluted
        }
      }))

    test("run records are copies; a run whose input is not JSON is refused and nothing is written", (store) =>
      Effect.gen(function*() {
        const r1 = run("s1", "r1", { input: { list: ["a"] } })
        yield* create(store, "s1", { n: 1 }, { run: r1 })
        ;(r1.input as { list: Array<string> }).list.push("mutated after commit")
        const [stored] = yield* store.runs("s1", {})
        assert.deepStrictEqual(stored!.input, { list: ["a"] })
        ;(stored!.input as { list: Array<string> }).list.push("mutated after read")
        assert.deepStrictEqual((yield* store.runs("s1", {}))[0]!.input, { list: ["a"] })

        const cyclic: Record<string, unknown> = {}
        cyclic.self = cyclic
        const exit = yield* Effect.exit(
          store.commit({
            sessionId: "s1",
            workflowName: "wf",
            expectedVersion: 1,
            state: { n: 2 },
            run: run("s1", "r2", { input: cyclic })
          })
        )
        assert.isTrue(Exit.isFailure(exit))
        assert.deepStrictEqual((yield* loadSome(store, "s1")).state, { n: 1 })
        assert.strictEqual((yield* store.runs("s1", {})).length, 1)
      }))

    test("info gives what load gives, without the state; None for a missing session", (store) =>
      Effect.gen(function*() {
        assert.isTrue(Option.isNone(yield* store.info("missing")))
        yield* TestClock.adjust("2 seconds")
        yield* create(store, "s1", { big: [1, 2, 3] }, { userId: "alice", workflowName: "shop" })
        yield* store.setName("s1", "named")
        const { state: _state, ...expected } = yield* loadSome(store, "s1")
        assert.deepStrictEqual(yield* store.info("s1"), Option.some(expected))
        assert.deepStrictEqual(
          Option.map(yield* store.info("s1"), (i) => [i.userId, i.name, i.version]),
          Option.some(["alice", "named", 1])
        )
      }))

    // -- unfinished runs --------------------------------------------------------

    const active = (
      runId: string,
      sessionId: string,
      extra: Partial<SessionStore.ActiveRun> = {}
    ): SessionStore.ActiveRun => ({
      runId,
      sessionId,
      workflowName: "wf",
      status: "running",
      input: { message: `input of ${runId}` },
      owner: "owner-a",
      leaseExpiresAt: 1_000,
      baseVersion: 0,
      durability: "step",
      startedAt: 100,
      updatedAt: 100,
      ...extra
    })

    const journal: SessionStore.Journal = {
      next: 2,
      previous: "two",
      completed: [{ stepName: "one", content: "one", success: true }, {
        stepName: "two",
        content: "two",
        success: true
      }],
      outputs: { two: { stepName: "two", content: "two", success: true } },
      state: { items: ["a", "b"] },
      answers: {}
    }

    test("startRun registers an unfinished run once; getRun finds it, then its record", (store) =>
      Effect.gen(function*() {
        assert.isTrue(Option.isNone(yield* store.getRun("r1")))
        assert.isTrue(
          Option.isNone(
            yield* store.startRun(active("r1", "s1", { additionalData: { k: 1 }, initialState: { items: [] } }))
          )
        )
        const found = yield* store.getRun("r1")
        assert(Option.isSome(found) && found.value._tag === "Active")
        assert.deepStrictEqual(
          found.value.run,
          active("r1", "s1", { additionalData: { k: 1 }, initialState: { items: [] } })
        )
        // a second start of the same id is refused and shows the unfinished run
        const again = yield* store.startRun(active("r1", "s1", { owner: "owner-b" }))
        assert(Option.isSome(again) && again.value._tag === "Active")
        assert.strictEqual(again.value.run.owner, "owner-a")
        // a commit that ends the run removes it and records it
        yield* store.commit({
          sessionId: "s1",
          workflowName: "wf",
          expectedVersion: 0,
          state: { n: 1 },
          run: run("s1", "r1"),
          ends: { runId: "r1", owner: "owner-a" }
        })
        const recorded = yield* store.getRun("r1")
        assert(Option.isSome(recorded) && recorded.value._tag === "Recorded")
        assert.strictEqual(recorded.value.record.status, "completed")
        // a completed id cannot start again
        const completed = yield* store.startRun(active("r1", "s1"))
        assert(Option.isSome(completed) && completed.value._tag === "Recorded")
        assert.deepStrictEqual(yield* store.activeRuns({}), [])
      }))

    test("an ended run's id does not start again, whatever it ended with (failed, cancelled, abandoned)", (store) =>
      Effect.gen(function*() {
        const statuses = ["error", "cancelled", "abandoned"] as const
        yield* create(store, "s1", { n: 0 }, { run: run("s1", "r-error", { status: "error", error: "boom" }) })
        for (const status of statuses.slice(1)) {
          yield* store.commit({
            sessionId: "s1",
            workflowName: "wf",
            expectedVersion: 1,
            run: run("s1", `r-${status}`, { status, error: status })
          })
        }
        for (const status of statuses) {
          const existing = yield* store.startRun(active(`r-${status}`, "s1", { baseVersion: 1 }))
          assert(Option.isSome(existing) && existing.value._tag === "Recorded")
          assert.strictEqual(existing.value.record.status, status)
        }
        assert.deepStrictEqual(yield* store.activeRuns({}), [])
        assert.deepStrictEqual(
          (yield* store.runs("s1", {})).map((r) => [r.runId, r.status]),
          statuses.map((s) => [`r-${s}`, s])
        )
      }))

    test(
      "a record with an earlier record's run id, committed with a new state, replaces it and moves to the end",
      (store) =>
        Effect.gen(function*() {
          yield* create(store, "s1", { n: 0 }, { run: run("s1", "r1", { status: "error", error: "boom" }) })
          yield* store.commit({
            sessionId: "s1",
            workflowName: "wf",
            expectedVersion: 1,
            state: { n: 1 },
            run: run("s1", "r2")
          })
          assert.strictEqual(
            yield* store.commit({
              sessionId: "s1",
              workflowName: "wf",
              expectedVersion: 2,
              state: { n: 2 },
              run: run("s1", "r1")
            }),
            3
          )
          const runs = yield* store.runs("s1", {})
          assert.deepStrictEqual(runs.map((r) => [r.runId, r.status]), [["r2", "completed"], ["r1", "completed"]])
          assert.deepStrictEqual(Option.map(yield* store.load("s1"), (s) => s.state), Option.some({ n: 2 }))
        })
    )

    test(
      "activeRuns with dueBy lists the paused runs whose wake time has come, by a start, an update and a claim",
      (store) =>
        Effect.gen(function*() {
          const sleeping = (wakeAt: number): SessionStore.Pause => ({
            path: ["nap"],
            key: "0:nap#1",
            payload: null,
            pausedAt: 100,
            kind: "sleep",
            wakeAt
          })
          yield* store.startRun(
            active("early", "s1", { status: "paused", owner: "", leaseExpiresAt: 0, pause: sleeping(1_000) })
          )
          yield* store.startRun(
            active("late", "s2", { status: "paused", owner: "", leaseExpiresAt: 0, pause: sleeping(5_000) })
          )
          // a question without a timeout never wakes by itself; a running run is not due
          yield* store.startRun(
            active("asks", "s3", {
              status: "paused",
              owner: "",
              leaseExpiresAt: 0,
              pause: { path: ["q"], key: "0:q#1", payload: 1, pausedAt: 100 }
            })
          )
          yield* store.startRun(active("runs", "s4"))
          const due = (by: number) =>
            Effect.map(store.activeRuns({ dueBy: by }), (runs) => runs.map((r) => r.runId).sort())
          assert.deepStrictEqual(yield* due(999), [])
          assert.deepStrictEqual(yield* due(1_000), ["early"])
          assert.deepStrictEqual(yield* due(10_000), ["early", "late"])
          const found = yield* store.getRun("early")
          assert(Option.isSome(found) && found.value._tag === "Active")
          assert.deepStrictEqual(found.value.run.pause, sleeping(1_000))
          // a claim makes the run running: no longer due; pausing it again with a later time makes it due then
          yield* store.claimRun("early", { owner: "owner-b", now: 1_000, leaseExpiresAt: 2_000, pause: "0:nap#1" })
          assert.deepStrictEqual(yield* due(10_000), ["late"])
          yield* store.updateRun("early", "owner-b", {
            status: "paused",
            owner: "",
            leaseExpiresAt: 0,
            pause: sleeping(7_000)
          })
          assert.deepStrictEqual(yield* due(6_999), ["late"])
          assert.deepStrictEqual(yield* due(7_000), ["early", "late"])
          // removing the pause removes its wake time
          yield* store.updateRun("late", "", { pause: null })
          assert.deepStrictEqual(yield* due(10_000), ["early"])
        })
    )

    test("addSignal numbers a run's signals; signals reads them by name; they go when the run ends", (store) =>
      Effect.gen(function*() {
        yield* store.startRun(active("r1", "s1"))
        yield* store.startRun(active("r2", "s2"))
        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* store.addSignal("r1", "paid", { amount: 5 }), 1)
        assert.strictEqual(yield* store.addSignal("r1", "shipped", "today"), 2)
        assert.strictEqual(yield* store.addSignal("r1", "paid", { amount: 7 }), 3)
        assert.strictEqual(yield* store.addSignal("r2", "paid", null), 1)
        assert.deepStrictEqual(yield* store.signals("r1", { name: "paid" }), [
          { runId: "r1", seq: 1, name: "paid", value: { amount: 5 }, createdAt: 1000 },
          { runId: "r1", seq: 3, name: "paid", value: { amount: 7 }, createdAt: 1000 }
        ])
        assert.deepStrictEqual((yield* store.signals("r1")).map((signal) => [signal.seq, signal.name, signal.value]), [
          [1, "paid", { amount: 5 }],
          [2, "shipped", "today"],
          [3, "paid", { amount: 7 }]
        ])
        assert.deepStrictEqual(yield* store.signals("r2"), [{
          runId: "r2",
          seq: 1,
          name: "paid",
          value: null,
          createdAt: 1000
        }])
        // a run that is not unfinished takes no signal
        assert.strictEqual((yield* Effect.flip(store.addSignal("missing", "paid", 1)))._tag, "RunNotFound")
        // ended by its commit, or by endRun: its signals are gone, another run's stay
        yield* store.commit({
          sessionId: "s1",
          workflowName: "wf",
          expectedVersion: 0,
          state: { n: 1 },
          run: run("s1", "r1"),
          ends: { runId: "r1", owner: "owner-a" }
        })
        assert.deepStrictEqual(yield* store.signals("r1"), [])
        assert.strictEqual((yield* Effect.flip(store.addSignal("r1", "paid", 1)))._tag, "RunNotFound")
        assert.strictEqual((yield* store.signals("r2")).length, 1)
        yield* store.endRun("r2", run("s2", "r2", { status: "cancelled", error: "cancelled" }))
        assert.deepStrictEqual(yield* store.signals("r2"), [])
      }))

    test("updateRun changes a run of its owner only; RunLost for another owner or a run that ended", (store) =>
      Effect.gen(function*() {
        yield* store.startRun(active("r1", "s1"))
        yield* store.updateRun("r1", "owner-a", { leaseExpiresAt: 5_000, journal })
        const found = yield* store.getRun("r1")
        assert(Option.isSome(found) && found.value._tag === "Active")
        assert.strictEqual(found.value.run.leaseExpiresAt, 5_000)
        assert.deepStrictEqual(found.value.run.journal, journal)
        const other = yield* Effect.flip(store.updateRun("r1", "owner-b", { leaseExpiresAt: 9_000 }))
        assert.strictEqual(other._tag, "RunLost")
        // a pause, then its removal
        const pause: SessionStore.Pause = {
          path: ["approve"],
          key: "1:approve#1",
          payload: { amount: 5 },
          pausedAt: 300
        }
        yield* store.updateRun("r1", "owner-a", { status: "paused", owner: "", leaseExpiresAt: 0, pause })
        const paused = yield* store.getRun("r1")
        assert(Option.isSome(paused) && paused.value._tag === "Active")
        assert.deepStrictEqual([paused.value.run.status, paused.value.run.owner, paused.value.run.pause], [
          "paused",
          "",
          pause
        ])
        const lost = yield* Effect.flip(store.updateRun("r1", "owner-a", { leaseExpiresAt: 1 }))
        assert.strictEqual(lost._tag, "RunLost")
        yield* store.updateRun("r1", "", { pause: null })
        const unpaused = yield* store.getRun("r1")
        assert(Option.isSome(unpaused) && unpaused.value._tag === "Active")
        assert.isUndefined(unpaused.value.run.pause)
        assert.deepStrictEqual(unpaused.value.run.journal, journal)
        const gone = yield* Effect.flip(store.updateRun("missing", "owner-a", {}))
        assert.strictEqual(gone._tag, "RunLost")
      }))

    test(
      "updateRun's journal writes replace the journal, keep the rest of the run, and read back any JSON the same",
      (store) =>
        Effect.gen(function*() {
          const shape: SessionStore.WorkflowShape = { fingerprint: "f", steps: ["a step"] }
          yield* store.startRun(active("r1", "s1", { additionalData: { tenant: "t" }, initialState: { n: 0 }, shape }))
          yield* store.updateRun("r1", "owner-a", { journal })
          const odd: SessionStore.Journal = {
            ...journal,
            next: 3,
            previous: {
              text: "nul \u0000, quote \", back\\slash, é, 😀, line\nbreak",
              n: 1e21,
              small: 5e-324,
              neg: -1.5
            },
            state: { items: ["a", "b", "c"], nested: { empty: [], none: null, flag: false } }
          }
          yield* store.updateRun("r1", "owner-a", { journal: odd })
          yield* store.updateRun("r1", "owner-a", { leaseExpiresAt: 4_000 })
          const found = yield* store.getRun("r1")
          assert(Option.isSome(found) && found.value._tag === "Active")
          const run = found.value.run
          assert.deepStrictEqual(run.journal, odd)
          assert.deepStrictEqual(
            [run.input, run.additionalData, run.initialState, run.shape, run.leaseExpiresAt, run.owner, run.status],
            [{ message: "input of r1" }, { tenant: "t" }, { n: 0 }, shape, 4_000, "owner-a", "running"]
          )
          assert.deepStrictEqual((yield* store.activeRuns({ sessionId: "s1" }))[0], run)
          // another owner's journal write changes nothing
          assert.strictEqual((yield* Effect.flip(store.updateRun("r1", "owner-b", { journal })))._tag, "RunLost")
          assert.deepStrictEqual(
            Option.map(yield* store.getRun("r1"), (r) => r._tag === "Active" && r.run.journal),
            Option.some(odd)
          )
        })
    )

    test(
      "a run paused with a payload holding NUL and a lone surrogate is " +
        "claimed at its pause, journaled and read back exactly",
      (store) =>
        Effect.gen(function*() {
          const payload = { text: "a\u0000b", lone: "x\ud800y", nested: ["\u0000", "\udfff"] }
          const pause: SessionStore.Pause = { path: ["approve"], key: "1:approve#1", payload, pausedAt: 300 }
          yield* store.startRun(active("odd", "s1", { status: "paused", owner: "", leaseExpiresAt: 0, journal, pause }))
          // a claim at another pause changes nothing; at its own it takes the run
          assert.strictEqual(
            (yield* Effect.flip(
              store.claimRun("odd", { owner: "owner-b", now: 1_000, leaseExpiresAt: 5_000, pause: "2:other#1" })
            ))._tag,
            "PauseMismatch"
          )
          const claimed = yield* store.claimRun("odd", {
            owner: "owner-b",
            now: 1_000,
            leaseExpiresAt: 5_000,
            pause: "1:approve#1"
          })
          assert.deepStrictEqual([claimed.status, claimed.owner, claimed.pause], ["running", "owner-b", pause])
          // its next steps are journaled (the run's other data holds the payload)
          const next: SessionStore.Journal = { ...journal, next: 2 }
          yield* store.updateRun("odd", "owner-b", { journal: next })
          yield* store.updateRun("odd", "owner-b", { leaseExpiresAt: 6_000 })
          const found = yield* store.getRun("odd")
          assert(Option.isSome(found) && found.value._tag === "Active")
          assert.deepStrictEqual([found.value.run.journal, found.value.run.pause, found.value.run.leaseExpiresAt], [
            next,
            pause,
            6_000
          ])
          // paused again at the same kind of pause, and claimed again
          yield* store.updateRun("odd", "owner-b", {
            status: "paused",
            owner: "",
            leaseExpiresAt: 0,
            pause: { ...pause, key: "2:approve#1" }
          })
          const again = yield* store.claimRun("odd", {
            owner: "owner-c",
            now: 2_000,
            leaseExpiresAt: 7_000,
            pause: "2:approve#1"
          })
          assert.deepStrictEqual(again.pause?.payload, payload)
        })
    )

    test("updateRun starts a run over at a new base version and shape, without its journal (journal: null)", (store) =>
      Effect.gen(function*() {
        yield* store.startRun(active("r1", "s1", { journal, shape: { fingerprint: "old", steps: ["a step"] } }))
        const shape: SessionStore.WorkflowShape = { version: "v2", fingerprint: "new", steps: ["a step", "b step"] }
        yield* store.updateRun("r1", "owner-a", { baseVersion: 3, shape, journal: null, leaseExpiresAt: 7_000 })
        const found = yield* store.getRun("r1")
        assert(Option.isSome(found) && found.value._tag === "Active")
        const run = found.value.run
        assert.deepStrictEqual([run.baseVersion, run.shape, run.journal, run.leaseExpiresAt], [
          3,
          shape,
          undefined,
          7_000
        ])
        assert.isFalse("journal" in run)
        // and it is read back the same by a listing
        assert.deepStrictEqual((yield* store.activeRuns({ sessionId: "s1" }))[0], run)
      }))

    test("claimRun takes a paused run or an expired lease; a valid lease is RunInProgress; one claim wins", (store) =>
      Effect.gen(function*() {
        yield* store.startRun(active("r1", "s1", { leaseExpiresAt: 1_000 }))
        const busy = yield* Effect.flip(store.claimRun("r1", { owner: "owner-b", now: 999, leaseExpiresAt: 5_000 }))
        assert(busy._tag === "RunInProgress")
        assert.deepStrictEqual([busy.owner, busy.leaseExpiresAt], ["owner-a", 1_000])
        const claimed = yield* store.claimRun("r1", { owner: "owner-b", now: 1_001, leaseExpiresAt: 5_000 })
        assert.deepStrictEqual([claimed.status, claimed.owner, claimed.leaseExpiresAt], ["running", "owner-b", 5_000])
        // the second claim at the same moment finds the new lease
        const second = yield* Effect.flip(store.claimRun("r1", { owner: "owner-c", now: 1_001, leaseExpiresAt: 5_000 }))
        assert.strictEqual(second._tag, "RunInProgress")
        // the old owner has lost it
        assert.strictEqual(
          (yield* Effect.flip(store.updateRun("r1", "owner-a", { leaseExpiresAt: 9_000 })))._tag,
          "RunLost"
        )
        // a paused run is claimable whatever the time
        yield* store.updateRun("r1", "owner-b", { status: "paused", owner: "", leaseExpiresAt: 0 })
        const resumed = yield* store.claimRun("r1", { owner: "owner-c", now: 2_000, leaseExpiresAt: 6_000 })
        assert.deepStrictEqual([resumed.status, resumed.owner], ["running", "owner-c"])
        const missing = yield* Effect.flip(store.claimRun("missing", { owner: "x", now: 0, leaseExpiresAt: 1 }))
        assert.strictEqual(missing._tag, "RunNotFound")
      }))

    test(
      "claimRun from a gone owner takes its running run whatever the lease; " +
        "from another owner it is RunInProgress; of two such claims one wins",
      (store) =>
        Effect.gen(function*() {
          yield* store.startRun(active("r1", "s1", { leaseExpiresAt: 60_000 }))
          // naming an owner the run does not have takes nothing
          const wrong = yield* Effect.flip(
            store.claimRun("r1", { owner: "owner-b", now: 1_000, leaseExpiresAt: 9_000, from: "owner-x" })
          )
          assert(wrong._tag === "RunInProgress")
          assert.deepStrictEqual([wrong.owner, wrong.leaseExpiresAt], ["owner-a", 60_000])
          // naming its owner takes it, lease or not
          const taken = yield* store.claimRun("r1", {
            owner: "owner-b",
            now: 1_000,
            leaseExpiresAt: 9_000,
            from: "owner-a"
          })
          assert.deepStrictEqual([taken.status, taken.owner, taken.leaseExpiresAt], ["running", "owner-b", 9_000])
          // a second claim from the same (gone) owner finds the new owner's lease
          const late = yield* Effect.flip(
            store.claimRun("r1", { owner: "owner-c", now: 1_000, leaseExpiresAt: 9_000, from: "owner-a" })
          )
          assert(late._tag === "RunInProgress")
          assert.strictEqual(late.owner, "owner-b")
          assert.strictEqual(
            (yield* Effect.flip(store.updateRun("r1", "owner-a", { leaseExpiresAt: 70_000 })))._tag,
            "RunLost"
          )
          // two claims from the same gone owner at once: exactly one wins
          yield* store.startRun(active("r2", "s2", { leaseExpiresAt: 60_000 }))
          const both = yield* Effect.all(
            ["owner-d", "owner-e"].map((owner) =>
              Effect.either(store.claimRun("r2", { owner, now: 1_000, leaseExpiresAt: 9_000, from: "owner-a" }))
            ),
            { concurrency: "unbounded" }
          )
          const winners = both.filter(Either.isRight)
          assert.strictEqual(winners.length, 1)
          const losers = both.filter(Either.isLeft)
          assert.deepStrictEqual(losers.map((loser) => loser.left._tag), ["RunInProgress"])
          const found = yield* store.getRun("r2")
          assert(Option.isSome(found) && found.value._tag === "Active")
          assert.strictEqual(found.value.run.owner, winners[0]!.right.owner)
          // a paused run's claim is unchanged by `from`
          yield* store.updateRun("r1", "owner-b", { status: "paused", owner: "", leaseExpiresAt: 0 })
          const resumed = yield* store.claimRun("r1", {
            owner: "owner-f",
            now: 2_000,
            leaseExpiresAt: 6_000,
            from: "owner-z"
          })
          assert.deepStrictEqual([resumed.status, resumed.owner], ["running", "owner-f"])
        })
    )

    test(
      "claimRun of a continue from a gone owner takes its running run only " +
        "while it was continuing from that pause; the recorded answer reads back",
      (store) =>
        Effect.gen(function*() {
          const pause: SessionStore.Pause = {
            path: ["approve"],
            key: "approve#1",
            payload: { amount: 1 },
            pausedAt: 50
          }
          // a continue took the run at its pause and recorded its answer with it
          yield* store.startRun(
            active("r1", "s1", { leaseExpiresAt: 60_000, pause: { ...pause, answer: { response: { ok: true } } } })
          )
          // at another pause: refused, nothing changes
          const elsewhere = yield* Effect.flip(
            store.claimRun("r1", {
              owner: "owner-b",
              now: 1_000,
              leaseExpiresAt: 9_000,
              pause: "other#1",
              from: "owner-a"
            })
          )
          assert.strictEqual(elsewhere._tag, "RunInProgress")
          // from an owner it does not have: its lease holds
          const wrong = yield* Effect.flip(
            store.claimRun("r1", {
              owner: "owner-b",
              now: 1_000,
              leaseExpiresAt: 9_000,
              pause: "approve#1",
              from: "owner-x"
            })
          )
          assert.strictEqual(wrong._tag, "RunInProgress")
          // two such claims at once: exactly one wins, with the answer recorded
          const both = yield* Effect.all(
            ["owner-c", "owner-d"].map((owner) =>
              Effect.either(
                store.claimRun("r1", { owner, now: 1_000, leaseExpiresAt: 9_000, pause: "approve#1", from: "owner-a" })
              )
            ),
            { concurrency: "unbounded" }
          )
          const winners = both.filter(Either.isRight)
          assert.strictEqual(winners.length, 1)
          assert.deepStrictEqual(both.filter(Either.isLeft).map((loser) => loser.left._tag), ["RunInProgress"])
          const taken = winners[0]!.right
          assert.deepStrictEqual([taken.status, taken.leaseExpiresAt, taken.pause], ["running", 9_000, {
            ...pause,
            answer: { response: { ok: true } }
          }])
          // a running run that never paused is not taken by a continue
          yield* store.startRun(active("r2", "s2", { leaseExpiresAt: 60_000 }))
          const never = yield* Effect.flip(
            store.claimRun("r2", {
              owner: "owner-b",
              now: 1_000,
              leaseExpiresAt: 9_000,
              pause: "approve#1",
              from: "owner-a"
            })
          )
          assert.strictEqual(never._tag, "RunInProgress")
        })
    )

    test("a paused run shows on its session, which refuses state commits except the one that ends that run", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { n: 0 })
        yield* store.startRun(active("r1", "s1", { baseVersion: 1 }))
        assert.isUndefined((yield* loadSome(store, "s1")).pausedRunId)
        yield* store.updateRun("r1", "owner-a", {
          status: "paused",
          owner: "",
          leaseExpiresAt: 0,
          pause: { path: ["ask"], key: "0:ask#1", payload: null, pausedAt: 1 }
        })
        assert.strictEqual((yield* loadSome(store, "s1")).pausedRunId, "r1")
        const refused = yield* Effect.flip(
          store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 1, state: { n: 9 } })
        )
        assert(refused._tag === "SessionPaused")
        assert.strictEqual(refused.runId, "r1")
        // a new session's paused run: its first commit is refused too
        yield* store.startRun(active("r2", "s2", { baseVersion: 0 }))
        yield* store.updateRun("r2", "owner-a", {
          status: "paused",
          owner: "",
          leaseExpiresAt: 0,
          pause: { path: ["ask"], key: "0:ask#1", payload: null, pausedAt: 1 }
        })
        const first = yield* Effect.flip(
          store.commit({ sessionId: "s2", workflowName: "wf", expectedVersion: 0, state: { n: 1 } })
        )
        assert.deepStrictEqual(first._tag === "SessionPaused" ? first.runId : first._tag, "r2")
        assert.isTrue(Option.isNone(yield* store.load("s2")))
        // a record without a state change is still accepted
        yield* store.commit({
          sessionId: "s1",
          workflowName: "wf",
          expectedVersion: 1,
          run: run("s1", "other", { status: "error" })
        })
        // the paused run, claimed again, commits and ends
        yield* store.claimRun("r1", { owner: "owner-b", now: 10, leaseExpiresAt: 100 })
        assert.strictEqual(
          yield* store.commit({
            sessionId: "s1",
            workflowName: "wf",
            expectedVersion: 1,
            state: { n: 1 },
            run: run("s1", "r1"),
            ends: { runId: "r1", owner: "owner-b" }
          }),
          2
        )
        assert.isUndefined((yield* loadSome(store, "s1")).pausedRunId)
        assert.deepStrictEqual(yield* store.activeRuns({ sessionId: "s1" }), [])
      }))

    test(
      "findSession: a stored session as load reads it (or without " +
        "its state), else the unfinished runs on its id, oldest first",
      (store) =>
        Effect.gen(function*() {
          // an id nothing used: a new session with no runs
          assert.deepStrictEqual(yield* store.findSession("none"), { _tag: "New", runs: [] })
          // a stored session, with its state, as load reads it
          yield* create(store, "s1", { n: 1, items: ["a"] }, { userId: "ann" })
          const loaded = yield* loadSome(store, "s1")
          assert.deepStrictEqual(yield* store.findSession("s1"), { _tag: "Stored", session: loaded })
          // at a version the caller knows, or without its state: no state read
          const known = yield* store.findSession("s1", { knownVersion: 1 })
          const bare = yield* store.findSession("s1", { state: false })
          for (const found of [known, bare]) {
            assert(found._tag === "Stored")
            assert.strictEqual(found.session.unchanged, true)
            assert.isUndefined(found.session.state)
            assert.deepInclude(found.session, { sessionId: "s1", workflowName: "wf", userId: "ann", version: 1 })
          }
          // a stored session's paused run is named, its other unfinished runs are not listed
          yield* store.startRun(active("r1", "s1", { baseVersion: 1 }))
          const running = yield* store.findSession("s1", { state: false })
          assert(running._tag === "Stored")
          assert.isUndefined(running.session.pausedRunId)
          // its running runs are, with their owner and lease (what onBusy "reject" refuses for)
          assert.deepStrictEqual(running.session.running, [{ runId: "r1", owner: "owner-a", leaseExpiresAt: 1_000 }])
          yield* store.updateRun("r1", "owner-a", {
            status: "paused",
            owner: "",
            leaseExpiresAt: 0,
            pause: { path: ["ask"], key: "0:ask#1", payload: { q: 1 }, pausedAt: 1 }
          })
          const paused = yield* store.findSession("s1")
          assert(paused._tag === "Stored")
          assert.strictEqual(paused.session.pausedRunId, "r1")
          assert.deepStrictEqual(paused.session.state, { n: 1, items: ["a"] })
          // a new session's first runs, whole, oldest first, whatever their status
          yield* store.startRun(active("r3", "s2", { startedAt: 300, userId: "bob" }))
          yield* store.startRun(active("r2", "s2", { startedAt: 200, workflowName: "other" }))
          yield* store.updateRun("r2", "owner-a", {
            status: "paused",
            owner: "",
            leaseExpiresAt: 0,
            pause: { path: ["ask"], key: "0:ask#1", payload: null, pausedAt: 2 }
          })
          const first = yield* store.findSession("s2", { state: false })
          assert.deepStrictEqual(first, { _tag: "New", runs: yield* store.activeRuns({ sessionId: "s2" }) })
          assert(first._tag === "New")
          assert.deepStrictEqual(first.runs.map((r) => [r.runId, r.status, r.workflowName, r.userId]), [
            ["r2", "paused", "other", undefined],
            ["r3", "running", "wf", "bob"]
          ])
          assert.deepStrictEqual(yield* store.findSession("s2"), first)
          // the run of a session's queue that has its turn holds it, before it is registered too
          yield* store.enqueueRun({
            runId: "q1",
            sessionId: "s3",
            workflowName: "wf",
            input: 1,
            owner: "owner-q",
            leaseExpiresAt: 8_000,
            enqueuedAt: 0
          })
          assert.deepStrictEqual(yield* store.findSession("s3"), { _tag: "New", runs: [] })
          yield* store.takeQueueTurn("s3", "q1", { owner: "owner-q", now: 0, leaseExpiresAt: 8_000 })
          assert.deepStrictEqual(yield* store.findSession("s3"), {
            _tag: "New",
            runs: [],
            running: [{ runId: "q1", owner: "owner-q", leaseExpiresAt: 8_000, queued: true }]
          })
          // an id no store takes is found by no read
          assert.deepStrictEqual(yield* store.findSession("bad\u0000id"), { _tag: "New", runs: [] })
        })
    )

    test("a commit that ends a run it no longer owns is RunLost and writes nothing", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { n: 0 })
        yield* store.startRun(active("r1", "s1", { baseVersion: 1 }))
        yield* store.claimRun("r1", { owner: "owner-b", now: 5_000, leaseExpiresAt: 9_000 })
        const lost = yield* Effect.flip(
          store.commit({
            sessionId: "s1",
            workflowName: "wf",
            expectedVersion: 1,
            state: { n: 1 },
            run: run("s1", "r1"),
            ends: { runId: "r1", owner: "owner-a" }
          })
        )
        assert.strictEqual(lost._tag, "RunLost")
        const session = yield* loadSome(store, "s1")
        assert.deepStrictEqual([session.state, session.version], [{ n: 0 }, 1])
        assert.deepStrictEqual(yield* store.runs("s1", {}), [])
      }))

    test("endRun removes an unfinished run and records it; a new session is created to hold the record", (store) =>
      Effect.gen(function*() {
        yield* store.startRun(active("r1", "fresh", { initialState: { items: [] } }))
        yield* store.endRun("r1", run("fresh", "r1", { status: "cancelled", error: "cancelled" }))
        assert.deepStrictEqual((yield* loadSome(store, "fresh")).state, { items: [] })
        assert.deepStrictEqual((yield* store.runs("fresh", {})).map((r) => [r.runId, r.status]), [["r1", "cancelled"]])
        assert.isTrue(
          Option.isNone(
            yield* store.activeRuns({ sessionId: "fresh" }).pipe(Effect.map((runs) => Option.fromNullable(runs[0])))
          )
        )
        // with an owner: only that owner's run
        yield* store.startRun(active("r2", "fresh", { baseVersion: 1 }))
        assert.strictEqual(
          (yield* Effect.flip(store.endRun("r2", run("fresh", "r2", { status: "error" }), "owner-b")))._tag,
          "RunLost"
        )
        yield* store.endRun("r2", run("fresh", "r2", { status: "error" }), "owner-a")
        assert.strictEqual((yield* Effect.flip(store.endRun("r2", run("fresh", "r2"))))._tag, "RunNotFound")
        // the existing session's state is left alone
        assert.deepStrictEqual((yield* loadSome(store, "fresh")).state, { items: [] })
      }))

    test("activeRuns filters by session, workflow and status, oldest first; remove deletes a session's runs", (store) =>
      Effect.gen(function*() {
        yield* create(store, "s1", { n: 0 })
        yield* store.startRun(active("r2", "s1", { startedAt: 200 }))
        yield* store.startRun(active("r1", "s1", { startedAt: 100, status: "paused", owner: "", leaseExpiresAt: 0 }))
        yield* store.startRun(active("r3", "s2", { startedAt: 300, workflowName: "other" }))
        const ids = (runs: ReadonlyArray<SessionStore.ActiveRun>) => runs.map((r) => r.runId)
        assert.deepStrictEqual(ids(yield* store.activeRuns({})), ["r1", "r2", "r3"])
        assert.deepStrictEqual(ids(yield* store.activeRuns({ sessionId: "s1" })), ["r1", "r2"])
        assert.deepStrictEqual(ids(yield* store.activeRuns({ workflowName: "other" })), ["r3"])
        assert.deepStrictEqual(ids(yield* store.activeRuns({ status: "paused" })), ["r1"])
        yield* store.remove("s1")
        assert.deepStrictEqual(ids(yield* store.activeRuns({})), ["r3"])
      }))

    // -- ids ------------------------------------------------------------------------

    test(
      "ids a store could not give back exactly (NUL, a lone surrogate, " +
        "300 characters) are refused by writes and found by no read",
      (store) =>
        Effect.gen(function*() {
          for (const bad of ["a\u0000b", "lone-\ud800", "x".repeat(300)]) {
            const asSession = yield* Effect.flip(create(store, bad, { n: 1 }))
            assert.instanceOf(asSession, WorkflowError.SessionStoreError)
            assert.strictEqual(asSession.method, "commit")
            const asRun = yield* Effect.flip(create(store, "fine", { n: 1 }, { run: run("fine", bad) }))
            assert.instanceOf(asRun, WorkflowError.SessionStoreError)
            const started = yield* Effect.flip(store.startRun(active(bad, "fine")))
            assert.instanceOf(started, WorkflowError.InvalidRunId)
            assert.strictEqual(started.runId, bad)
            assert.instanceOf(yield* Effect.flip(store.startRun(active("fine", bad))), WorkflowError.SessionStoreError)
            assert.isTrue(Option.isNone(yield* store.load(bad)))
            assert.isTrue(Option.isNone(yield* store.info(bad)))
            assert.isTrue(Option.isNone(yield* store.getRun(bad)))
            assert.deepStrictEqual(yield* store.runs(bad, {}), [])
            assert.strictEqual(
              (yield* Effect.flip(store.claimRun(bad, { owner: "o", now: 1, leaseExpiresAt: 2 })))._tag,
              "RunNotFound"
            )
          }
          // nothing was stored; the longest id every store takes, with astral characters, comes back exactly
          assert.isTrue(Option.isNone(yield* store.info("fine")))
          const longest = `${"é".repeat(SessionStore.maxIdLength - 2)}😀`
          yield* create(store, longest, { n: 1 }, { run: run(longest, longest) })
          assert.deepStrictEqual((yield* store.list({})).sessions.map((s) => s.sessionId), [longest])
          assert.deepStrictEqual((yield* store.runs(longest, {})).map((r) => r.runId), [longest])
        })
    )

    // -- watching --------------------------------------------------------------

    test(
      "watch emits the current version first, then every later commit in order, with the run that made it",
      (store) =>
        Effect.gen(function*() {
          yield* TestClock.adjust("1 second")
          yield* create(store, "w1", { n: 1 }, { workflowName: "counter", run: run("w1", "r1") })
          const watcher = yield* watching(store, "w1")
          const first = yield* next(watcher)
          assert.deepStrictEqual(seen(first), {
            sessionId: "w1",
            workflowName: "counter",
            version: 1,
            state: { n: 1 },
            runId: "r1"
          })
          assert.strictEqual(first.updatedAt, 1000)
          // a state change outside a run has no runId
          yield* store.commit({ sessionId: "w1", workflowName: "counter", expectedVersion: 1, state: { n: 2 } })
          assert.deepStrictEqual(seen(yield* next(watcher)), {
            sessionId: "w1",
            workflowName: "counter",
            version: 2,
            state: { n: 2 },
            runId: undefined
          })
          yield* store.commit({
            sessionId: "w1",
            workflowName: "counter",
            expectedVersion: 2,
            state: { n: 3 },
            run: run("w1", "r3")
          })
          assert.deepStrictEqual(seen(yield* next(watcher)), {
            sessionId: "w1",
            workflowName: "counter",
            version: 3,
            state: { n: 3 },
            runId: "r3"
          })
        }).pipe(Effect.scoped)
    )

    test(
      "watch: a watcher is never silently behind: each change says " +
        "how many versions it coalesced, and the latest always arrives",
      (store) =>
        Effect.gen(function*() {
          yield* create(store, "w1", { n: 1 })
          const watcher = yield* watching(store, "w1")
          const start = yield* next(watcher)
          assert.deepStrictEqual([start.version, start.skipped], [1, 0])
          for (let n = 2; n <= 6; n++) {
            yield* store.commit({
              sessionId: "w1",
              workflowName: "wf",
              expectedVersion: n - 1,
              state: { n },
              run: run("w1", `r${n}`)
            })
          }
          const changes: Array<SessionStore.SessionChange> = []
          let last = start
          while (last.version < 6) {
            last = yield* next(watcher)
            changes.push(last)
          }
          // each change follows the previous one by the versions it coalesced: together, every version
          changes.reduce((previous, change) => {
            assert.strictEqual(
              change.version - change.skipped - 1,
              previous,
              `after ${previous}: ${change.version} skipping ${change.skipped}`
            )
            return change.version
          }, 1)
          assert.strictEqual(changes.reduce((sum, change) => sum + change.skipped + 1, 0), 5)
          assert.deepStrictEqual(seen(last), {
            sessionId: "w1",
            workflowName: "wf",
            version: 6,
            state: { n: 6 },
            runId: "r6"
          })
        }).pipe(Effect.scoped)
    )

    test(
      "watch: versions committed after the watch began and before a session's first read are counted as skipped",
      (store) =>
        Effect.gen(function*() {
          const watcher = yield* watching(store, "late")
          yield* TestClock.adjust("1 second")
          yield* create(store, "late", { n: 1 })
          yield* store.commit({ sessionId: "late", workflowName: "wf", expectedVersion: 1, state: { n: 2 } })
          let change = yield* next(watcher)
          let counted = change.skipped + 1
          while (change.version < 2) {
            change = yield* next(watcher)
            counted += change.skipped + 1
          }
          assert.deepStrictEqual([change.version, counted], [2, 2])
        }).pipe(Effect.scoped)
    )

    test("watch of a missing session emits nothing until it is created, then its version 1", (store) =>
      Effect.gen(function*() {
        const watcher = yield* watching(store, "later")
        // several poll intervals pass over the missing session
        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* Queue.size(watcher.queue), 0)
        yield* create(store, "other", { x: 1 })
        yield* create(store, "later", { items: ["a"] }, { run: run("later", "r1") })
        assert.deepStrictEqual(seen(yield* next(watcher)), {
          sessionId: "later",
          workflowName: "wf",
          version: 1,
          state: { items: ["a"] },
          runId: "r1"
        })
      }).pipe(Effect.scoped))

    test(
      "watch: a session created by a first run that did not complete arrives as version 1 without a runId",
      (store) =>
        Effect.gen(function*() {
          const watcher = yield* watching(store, "fresh")
          yield* store.startRun(active("r1", "fresh", { initialState: { items: [] } }))
          yield* store.endRun("r1", run("fresh", "r1", { status: "error", error: "boom" }))
          assert.deepStrictEqual(seen(yield* next(watcher)), {
            sessionId: "fresh",
            workflowName: "wf",
            version: 1,
            state: { items: [] },
            runId: undefined
          })
        }).pipe(Effect.scoped)
    )

    test("watch: commits that do not change the state (a run record, a name, an ended run) emit nothing", (store) =>
      Effect.gen(function*() {
        yield* create(store, "w1", { n: 1 }, { run: run("w1", "r1") })
        const watcher = yield* watching(store, "w1")
        assert.strictEqual((yield* next(watcher)).version, 1)
        yield* store.commit({ sessionId: "w1", workflowName: "wf", expectedVersion: 1, run: run("w1", "r2") })
        yield* store.setName("w1", "named")
        yield* store.startRun(active("r3", "w1", { baseVersion: 1 }))
        yield* store.endRun("r3", run("w1", "r3", { status: "cancelled" }))
        yield* TestClock.adjust("1 second")
        yield* store.commit({
          sessionId: "w1",
          workflowName: "wf",
          expectedVersion: 1,
          state: { n: 2 },
          run: run("w1", "r4")
        })
        // the next change is the state commit: nothing came in between
        assert.deepStrictEqual(seen(yield* next(watcher)), {
          sessionId: "w1",
          workflowName: "wf",
          version: 2,
          state: { n: 2 },
          runId: "r4"
        })
        assert.strictEqual(yield* Queue.size(watcher.queue), 0)
      }).pipe(Effect.scoped))

    test(
      "watch: a session removed and created again is reported only above the last version the stream emitted",
      (store) =>
        Effect.gen(function*() {
          yield* create(store, "w1", { n: 1 })
          const watcher = yield* watching(store, "w1")
          assert.strictEqual((yield* next(watcher)).version, 1)
          yield* store.commit({ sessionId: "w1", workflowName: "wf", expectedVersion: 1, state: { n: 2 } })
          assert.strictEqual((yield* next(watcher)).version, 2)
          assert.isTrue(yield* store.remove("w1"))
          yield* TestClock.adjust("1 second")
          yield* create(store, "w1", { again: 1 })
          yield* TestClock.adjust("1 second")
          yield* store.commit({ sessionId: "w1", workflowName: "wf", expectedVersion: 1, state: { again: 2 } })
          yield* TestClock.adjust("1 second")
          yield* store.commit({
            sessionId: "w1",
            workflowName: "wf",
            expectedVersion: 2,
            state: { again: 3 },
            run: run("w1", "r3")
          })
          assert.deepStrictEqual(seen(yield* next(watcher)), {
            sessionId: "w1",
            workflowName: "wf",
            version: 3,
            state: { again: 3 },
            runId: "r3"
          })
        }).pipe(Effect.scoped)
    )

    test("watch follows one session only; two watchers of one session each see every change", (store) =>
      Effect.gen(function*() {
        yield* create(store, "a", { n: 1 })
        const a1 = yield* watching(store, "a")
        const a2 = yield* watching(store, "a")
        assert.strictEqual((yield* next(a1)).version, 1)
        assert.strictEqual((yield* next(a2)).version, 1)
        yield* create(store, "b", { n: 100 })
        yield* store.commit({ sessionId: "b", workflowName: "wf", expectedVersion: 1, state: { n: 101 } })
        yield* store.commit({ sessionId: "a", workflowName: "wf", expectedVersion: 1, state: { n: 2 } })
        assert.deepStrictEqual(seen(yield* next(a1)), {
          sessionId: "a",
          workflowName: "wf",
          version: 2,
          state: { n: 2 },
          runId: undefined
        })
        assert.deepStrictEqual(seen(yield* next(a2)), {
          sessionId: "a",
          workflowName: "wf",
          version: 2,
          state: { n: 2 },
          runId: undefined
        })
      }).pipe(Effect.scoped))

    /**
     * A session with `n` runs (each its own state commit), ending
     * at `completedAt` 100, 200, …; r<i>'s log has i+1 events.
     */
    const history = (store: Store, sessionId: string, n: number, workflowName = "wf") =>
      Effect.gen(function*() {
        for (let i = 1; i <= n; i++) {
          const runId = `${sessionId}-r${i}`
          yield* store.commit({
            sessionId,
            workflowName,
            expectedVersion: i - 1,
            state: { n: i },
            run: run(sessionId, runId, { workflowName, completedAt: i * 100 })
          })
          yield* store.appendEvents(runId, logOf(runId, 0, i), keep)
        }
      })
    const runIds = (store: Store, sessionId: string) =>
      Effect.map(store.runs(sessionId, {}), (runs) => runs.map((r) => r.runId))

    test(
      "prune: keepLast keeps each session's most recent records of the workflow, removing the others with their events",
      (store) =>
        Effect.gen(function*() {
          yield* history(store, "p1", 5)
          yield* history(store, "p2", 2)
          yield* history(store, "p3", 3, "other")
          const pruned = yield* store.prune({ workflowName: "wf", keepLast: 2 })
          // p1 loses r1, r2, r3 (2 + 3 + 4 events)
          assert.deepStrictEqual(pruned, { runs: 3, events: 9 })
          assert.deepStrictEqual(yield* runIds(store, "p1"), ["p1-r4", "p1-r5"])
          assert.deepStrictEqual(yield* runIds(store, "p2"), ["p2-r1", "p2-r2"])
          assert.deepStrictEqual(yield* runIds(store, "p3"), ["p3-r1", "p3-r2", "p3-r3"])
          assert.deepStrictEqual(yield* store.readEvents("p1-r3"), [])
          assert.deepStrictEqual(seqs(yield* store.readEvents("p1-r4")), [0, 1, 2, 3, 4])
          assert.isTrue(Option.isNone(yield* store.getRun("p1-r1")))
          // the sessions and their states stay
          assert.deepStrictEqual((yield* loadSome(store, "p1")).state, { n: 5 })
          // keepLast 0 of one session: all of its records
          assert.deepStrictEqual(yield* store.prune({ sessionId: "p2", keepLast: 0 }), { runs: 2, events: 5 })
          assert.deepStrictEqual(yield* runIds(store, "p2"), [])
          assert.deepStrictEqual(yield* runIds(store, "p1"), ["p1-r4", "p1-r5"])
        })
    )

    test(
      "prune: endedBefore removes the records of runs that ended before it; a record either rule names goes",
      (store) =>
        Effect.gen(function*() {
          yield* history(store, "p1", 5)
          yield* history(store, "p2", 1)
          assert.deepStrictEqual(yield* store.prune({}), { runs: 0, events: 0 })
          assert.deepStrictEqual(yield* store.prune({ sessionId: "p1", endedBefore: 300 }), { runs: 2, events: 5 })
          assert.deepStrictEqual(yield* runIds(store, "p1"), ["p1-r3", "p1-r4", "p1-r5"])
          assert.deepStrictEqual(yield* runIds(store, "p2"), ["p2-r1"])
          // r3 by age, r4 by count
          assert.deepStrictEqual(yield* store.prune({ workflowName: "wf", endedBefore: 350, keepLast: 1 }), {
            runs: 3,
            events: 11
          })
          assert.deepStrictEqual(yield* runIds(store, "p1"), ["p1-r5"])
          assert.deepStrictEqual(yield* runIds(store, "p2"), [])
          assert.deepStrictEqual(yield* store.prune({ workflowName: "missing", keepLast: 0 }), { runs: 0, events: 0 })
        })
    )

    test("event log: appended events read back in order, after a seq, limited, or the latest", (store) =>
      Effect.gen(function*() {
        yield* store.appendEvents("r1", logOf("r1", 0, 4), keep)
        yield* store.appendEvents("r1", [...logOf("r1", 5, 6), endEvent("r1", 7)], keep)
        yield* store.appendEvents("other", logOf("other", 0, 2), keep)
        const all = yield* store.readEvents("r1")
        assert.deepStrictEqual(all, [...logOf("r1", 0, 6), endEvent("r1", 7)])
        assert.deepStrictEqual(seqs(yield* store.readEvents("r1", { after: 4 })), [5, 6, 7])
        assert.deepStrictEqual(seqs(yield* store.readEvents("r1", { after: 1, limit: 3 })), [2, 3, 4])
        assert.deepStrictEqual(seqs(yield* store.readEvents("r1", { latest: true, limit: 2 })), [6, 7])
        assert.deepStrictEqual(seqs(yield* store.readEvents("r1", { after: 7 })), [])
        assert.deepStrictEqual(yield* store.readEvents("missing"), [])
        // an event whose seq is stored already is dropped: the first one stays
        yield* store.appendEvents("other", [{ ...logEvent("other", 2), timestamp: 5 }, logEvent("other", 3)], keep)
        assert.deepStrictEqual(yield* store.readEvents("other"), logOf("other", 0, 3))
      }))

    test(
      "event log: a log ends with its terminal event: nothing is appended after it, a second one is dropped",
      (store) =>
        Effect.gen(function*() {
          yield* store.appendEvents("r1", [...logOf("r1", 0, 2), endEvent("r1", 3)], keep)
          // events after the end, and another end, in one batch or apart: none is stored
          yield* store.appendEvents("r1", [logEvent("r1", 4), endEvent("r1", 5)], keep)
          yield* store.appendEvents("r1", [endEvent("r1", 6)], keep)
          assert.deepStrictEqual(seqs(yield* store.readEvents("r1")), [0, 1, 2, 3])
          // an end amid a batch closes the log for the rest of it
          yield* store.appendEvents("r2", [logEvent("r2", 0), endEvent("r2", 1), logEvent("r2", 2)], keep)
          assert.deepStrictEqual(seqs(yield* store.readEvents("r2")), [0, 1])
        })
    )

    test("event log: an event that is not JSON, or of another run, is refused and nothing is stored", (store) =>
      Effect.gen(function*() {
        const bad = { ...endEvent("r1", 0), content: { n: 1n } } as WorkflowEvent.WorkflowEvent
        const refused = yield* Effect.flip(store.appendEvents("r1", [logEvent("r1", 0), bad], keep))
        assert.strictEqual(refused._tag, "SessionStoreError")
        const stranger = yield* Effect.flip(store.appendEvents("r1", [logEvent("r2", 0)], keep))
        assert.strictEqual(stranger._tag, "SessionStoreError")
        assert.deepStrictEqual(yield* store.readEvents("r1"), [])
      }))

    test("event log: a run keeps its latest maxEvents events", (store) =>
      Effect.gen(function*() {
        const retention = { maxEvents: 3, keepFor: 60_000 }
        yield* store.appendEvents("r1", logOf("r1", 0, 1), retention)
        assert.deepStrictEqual(seqs(yield* store.readEvents("r1")), [0, 1])
        yield* store.appendEvents("r1", logOf("r1", 2, 5), retention)
        assert.deepStrictEqual(seqs(yield* store.readEvents("r1")), [3, 4, 5])
      }))

    test("event log: the logs of runs that ended more than keepFor ago go when another run ends", (store) =>
      Effect.gen(function*() {
        const retention = { maxEvents: 100, keepFor: 60_000 }
        yield* store.appendEvents("old", [logEvent("old", 0), endEvent("old", 1)], retention)
        yield* store.appendEvents("paused", logOf("paused", 0, 1), retention)
        yield* TestClock.adjust("30 seconds")
        yield* store.appendEvents("recent", [endEvent("recent", 0)], retention)
        // not yet past its retention
        assert.deepStrictEqual(seqs(yield* store.readEvents("old")), [0, 1])
        yield* TestClock.adjust("31 seconds")
        yield* store.appendEvents("last", [endEvent("last", 0)], retention)
        assert.deepStrictEqual(yield* store.readEvents("old"), [])
        // a run that has not ended keeps its log; one that ended 31 seconds ago too
        assert.deepStrictEqual(seqs(yield* store.readEvents("paused")), [0, 1])
        assert.deepStrictEqual(seqs(yield* store.readEvents("recent")), [0])
      }))

    test("event log: watchEvents wakes at once, then after each append of the run", (store) =>
      Effect.gen(function*() {
        const wakes = yield* collecting(store.watchEvents("r1", { pollInterval }))
        yield* woken(wakes)
        yield* store.appendEvents("r1", logOf("r1", 0, 0), keep)
        yield* woken(wakes)
        const ids = yield* Effect.flip(
          Effect.scoped(
            Effect.flatMap(collecting(store.watchEvents("bad\u0000id")), (c) => c.fiber.await.pipe(Effect.flatten))
          )
        )
        assert.strictEqual(ids._tag, "SessionStoreError")
      }).pipe(Effect.scoped))

    const queued = (
      store: Store,
      sessionId: string,
      runId: string,
      leaseExpiresAt: number,
      input: unknown = { n: runId }
    ) =>
      store.enqueueRun({
        runId,
        sessionId,
        workflowName: "wf",
        input,
        owner: store.owner,
        leaseExpiresAt,
        enqueuedAt: 0
      })
    const turn = (
      store: Store,
      runId: string,
      now: number,
      leaseExpiresAt = now + 10_000,
      sessionId = runId.startsWith("o") ? "q-other" : runId.startsWith("from") ? "shared-q" : "q"
    ) => store.takeQueueTurn(sessionId, runId, { owner: store.owner, now, leaseExpiresAt })

    test("queue: runs take their turn in arrival order, one at a time per session", (store) =>
      Effect.gen(function*() {
        const t1 = yield* queued(store, "q", "r1", 10_000, { text: "first", at: [1, 2] })
        const t2 = yield* queued(store, "q", "r2", 10_000)
        const other = yield* queued(store, "q-other", "o1", 10_000)
        assert.isTrue(t1 < t2 && t2 < other)
        // r2 waits for r1, queued before it; another session's queue is its own
        assert.strictEqual(yield* turn(store, "r2", 0), "waiting")
        assert.strictEqual(yield* turn(store, "o1", 0), "taken")
        assert.strictEqual(yield* turn(store, "r1", 0), "taken")
        // taken again (a renewal), and still waiting while r1 has its turn
        assert.strictEqual(yield* turn(store, "r1", 0), "taken")
        assert.strictEqual(yield* turn(store, "r2", 0), "waiting")
        const listed = yield* store.queuedRuns({ sessionId: "q" })
        assert.deepStrictEqual(listed.map((run) => [run.runId, run.status, run.ticket, run.workflowName]), [
          ["r1", "running", t1, "wf"],
          ["r2", "waiting", t2, "wf"]
        ])
        assert.deepStrictEqual(listed[0]!.input, { text: "first", at: [1, 2] })
        assert.strictEqual(listed[0]!.owner, store.owner)
        assert.deepStrictEqual((yield* store.queuedRuns({})).map((run) => run.runId), ["r1", "r2", "o1"])
        assert.deepStrictEqual(yield* store.queuedRuns({ workflowName: "other" }), [])
        // one run by its id, with the other filters or alone
        assert.deepStrictEqual(
          (yield* store.queuedRuns({ runId: "r2" })).map((run) => [run.runId, run.status, run.ticket]),
          [["r2", "waiting", t2]]
        )
        assert.deepStrictEqual(
          (yield* store.queuedRuns({ runId: "o1", workflowName: "wf" })).map((run) => run.sessionId),
          ["q-other"]
        )
        assert.deepStrictEqual(yield* store.queuedRuns({ runId: "o1", sessionId: "q" }), [])
        assert.deepStrictEqual(yield* store.queuedRuns({ runId: "nobody" }), [])
        assert.deepStrictEqual(yield* store.queuedRuns({ runId: "bad\u0000run" }), [])
        // only its owner takes it out
        assert.isFalse(yield* store.leaveQueue("q", "r1", "someone else"))
        assert.isTrue(yield* store.leaveQueue("q", "r1", store.owner))
        assert.isFalse(yield* store.leaveQueue("q", "r1"))
        assert.strictEqual(yield* turn(store, "r2", 0), "taken")
        // a run id is queued once
        const twice = yield* Effect.flip(queued(store, "q", "r2", 10_000))
        assert.strictEqual(twice._tag, "SessionStoreError")
        // an id no store takes is refused, and found nowhere
        const badId = yield* Effect.flip(queued(store, "bad\u0000session", "r9", 10_000))
        assert.strictEqual(badId._tag, "SessionStoreError")
        assert.strictEqual(yield* turn(store, "r2", 0, 10_000, "bad\u0000session"), "lost")
        assert.deepStrictEqual(yield* store.queuedRuns({ sessionId: "bad\u0000session" }), [])
      }))

    test("queue: a run whose lease expired is dropped by the next look, and finds itself lost", (store) =>
      Effect.gen(function*() {
        yield* queued(store, "q", "dead", 1_000)
        yield* queued(store, "q", "alive", 10_000)
        assert.strictEqual(yield* turn(store, "dead", 0, 1_000), "taken")
        // at 1,000 the lease still holds: alive waits
        assert.strictEqual(yield* turn(store, "alive", 1_000), "waiting")
        // past it, the dead run's caller no longer renews: dropped, alive's turn
        assert.strictEqual(yield* turn(store, "alive", 1_001), "taken")
        assert.deepStrictEqual((yield* store.queuedRuns({ sessionId: "q" })).map((run) => run.runId), ["alive"])
        assert.strictEqual(yield* turn(store, "dead", 1_002), "lost")
        // another owner's look at a run is no renewal of it
        assert.strictEqual(
          yield* store.takeQueueTurn("q", "alive", { owner: "someone else", now: 0, leaseExpiresAt: 0 }),
          "lost"
        )
        // nor a look at it on another session
        assert.strictEqual(yield* turn(store, "alive", 1_001, 20_000, "q-other"), "lost")
      }))

    test("queue: a dropped run that never started is recorded abandoned on its session; never on a new one", (store) =>
      Effect.gen(function*() {
        // a new session is not created for it (a first run running on it would find it moved on)
        yield* store.enqueueRun({
          runId: "unseen",
          sessionId: "q",
          workflowName: "wf",
          input: "x",
          owner: "dead",
          leaseExpiresAt: 1_000,
          enqueuedAt: 5
        })
        yield* queued(store, "q", "first", 10_000)
        assert.strictEqual(yield* turn(store, "first", 1_001), "taken")
        assert.isTrue(Option.isNone(yield* store.getRun("unseen")))
        assert.isTrue(Option.isNone(yield* store.load("q")))
        yield* store.leaveQueue("q", "first", store.owner)
        // on an existing session it is
        yield* create(store, "q", { items: [] })
        yield* store.enqueueRun({
          runId: "gone",
          sessionId: "q",
          workflowName: "wf",
          input: "x",
          owner: "dead",
          leaseExpiresAt: 1_000,
          enqueuedAt: 5,
          // it keeps its events: its log gets its end
          startedWith: { events: "stored" }
        })
        // (a plain run, with no entry, may have had its turn and logged its start: its end comes after)
        yield* store.appendEvents("gone", [{
          _tag: "RunStarted",
          runId: "gone",
          sessionId: "q",
          seq: 0,
          path: [],
          timestamp: 5,
          workflowName: "wf",
          input: "x"
        }], SessionStore.defaultEventRetention)
        // a run that started has its own entry or record, which tell what became of it: no record for its entry
        yield* store.enqueueRun({
          runId: "started",
          sessionId: "q",
          workflowName: "wf",
          input: "y",
          owner: "dead",
          leaseExpiresAt: 1_000,
          enqueuedAt: 6
        })
        yield* store.startRun(active("started", "q", { owner: "dead", leaseExpiresAt: 1_000 }))
        yield* queued(store, "q", "alive", 10_000)
        assert.strictEqual(yield* turn(store, "alive", 1_001), "waiting")
        const started = yield* store.getRun("started")
        assert(Option.isSome(started) && started.value._tag === "Active")
        const found = yield* store.getRun("gone")
        assert(Option.isSome(found) && found.value._tag === "Recorded")
        assert.deepStrictEqual(
          [
            found.value.record.status,
            found.value.record.sessionId,
            found.value.record.startedAt,
            found.value.record.input
          ],
          ["abandoned", "q", 5, "x"]
        )
        assert.deepStrictEqual(
          (yield* store.readEvents("gone")).map((event) => [event._tag, event.seq, event.runId, event.path]),
          [["RunStarted", 0, "gone", []], ["RunFailed", 1, "gone", []]]
        )
        // a run that keeps no events gets none
        assert.deepStrictEqual(yield* store.readEvents("started"), [])
        // leaveQueue with a record writes it in the same write, on the existing session
        yield* queued(store, "q", "left", 10_000)
        assert.isTrue(
          yield* store.leaveQueue(
            "q",
            "left",
            store.owner,
            run("q", "left", { status: "cancelled", error: "cancelled while queued" })
          )
        )
        const left = yield* store.getRun("left")
        assert(Option.isSome(left) && left.value._tag === "Recorded")
        assert.strictEqual(left.value.record.status, "cancelled")
        // cancelled while queued, a run that keeps its events ends its log with RunCancelled
        yield* store.enqueueRun({
          runId: "left-logged",
          sessionId: "q",
          workflowName: "wf",
          input: "z",
          owner: store.owner,
          leaseExpiresAt: 10_000,
          enqueuedAt: 7,
          startedWith: { events: "stored", maxEvents: 5 }
        })
        assert.isTrue(
          yield* store.leaveQueue(
            "q",
            "left-logged",
            store.owner,
            run("q", "left-logged", { status: "cancelled", error: "cancelled while queued" })
          )
        )
        assert.deepStrictEqual((yield* store.readEvents("left-logged")).map((event) => event._tag), ["RunCancelled"])
        // not there (any more): nothing written
        assert.isFalse(yield* store.leaveQueue("q", "left", store.owner, run("q", "left", { status: "error" })))
        assert.strictEqual((yield* store.runs("q", {})).filter((r) => r.runId === "left").length, 1)
      }))

    test(
      "queue: no turn while another unfinished run of the session " +
        "holds it (running, abandoned or paused)",
      (store) =>
        Effect.gen(function*() {
          yield* store.startRun(active("holder", "q", { leaseExpiresAt: 500 }))
          yield* queued(store, "q", "next", 10_000)
          // its lease expired at 500: abandoned, it still holds the session until it is carried on or ended
          assert.strictEqual(yield* turn(store, "next", 1_000), "waiting")
          yield* store.claimRun("holder", { owner: "owner-b", now: 1_000, leaseExpiresAt: 9_000 })
          assert.strictEqual(yield* turn(store, "next", 1_000), "waiting")
          yield* store.updateRun("holder", "owner-b", {
            status: "paused",
            owner: "",
            leaseExpiresAt: 0,
            pause: { path: ["q"], key: "0:q#1", payload: 1, pausedAt: 1 }
          })
          assert.strictEqual(yield* turn(store, "next", 1_000), "waiting")
          yield* store.endRun("holder", run("q", "holder", { status: "cancelled", error: "cancelled" }))
          assert.strictEqual(yield* turn(store, "next", 1_000), "taken")
          // the run's own entry does not hold it
          yield* store.startRun(active("next", "q"))
          assert.strictEqual(yield* turn(store, "next", 1_000), "taken")
        })
    )

    test("queue: a background run whose caller stopped is never dropped; one taker takes it over", (store) =>
      Effect.gen(function*() {
        const carry: SessionStore.QueuedCarry = {
          durability: "step",
          startedWith: { events: "stored", leaseMillis: 1_500 }
        }
        yield* store.enqueueRun({
          runId: "bg",
          sessionId: "q",
          workflowName: "wf",
          input: "x",
          owner: "dead",
          leaseExpiresAt: 1_000,
          enqueuedAt: 5,
          carry
        })
        yield* queued(store, "q", "next", 10_000)
        // its lease expired: it stays, first, and holds the session's queue
        assert.strictEqual(yield* turn(store, "next", 1_001), "waiting")
        const [first] = yield* store.queuedRuns({ sessionId: "q" })
        assert.deepStrictEqual([first?.runId, first?.carry], ["bg", carry])
        // not before its lease expired, not from another owner than its own
        const adopt = (from: string, now: number, owner = "taker-a") =>
          store.adoptQueued("q", "bg", { from, owner, now, leaseExpiresAt: now + 5_000 })
        assert.isTrue(Option.isNone(yield* adopt("dead", 999)))
        assert.isTrue(Option.isNone(yield* adopt("someone", 1_001)))
        // a gone owner's is taken whatever its lease
        assert.isTrue(
          Option.isSome(
            yield* store.adoptQueued("q", "bg", {
              from: "dead",
              owner: "taker-a",
              now: 0,
              leaseExpiresAt: 9_000,
              gone: true
            })
          )
        )
        // of two takers, one: the second finds it another's
        assert.isTrue(Option.isNone(yield* adopt("dead", 1_001, "taker-b")))
        const [taken] = yield* store.queuedRuns({ sessionId: "q" })
        assert.deepStrictEqual([taken?.runId, taken?.owner, taken?.leaseExpiresAt, taken?.carry], [
          "bg",
          "taker-a",
          9_000,
          carry
        ])
        // its new owner takes its turn, ahead of the run queued after it
        assert.strictEqual(
          yield* store.takeQueueTurn("q", "bg", { owner: "taker-a", now: 1_002, leaseExpiresAt: 9_000 }),
          "taken"
        )
        assert.strictEqual(yield* turn(store, "next", 1_002), "waiting")
        // a plain queued run (no carry) is never taken over
        yield* queued(store, "q2", "plain", 1_000)
        assert.isTrue(
          Option.isNone(
            yield* store.adoptQueued("q2", "plain", {
              from: store.owner,
              owner: "x",
              now: 2_000,
              leaseExpiresAt: 9_000
            })
          )
        )
      }))

    test("queue: watchQueue wakes the waiting when a run leaves the session's queue", (store) =>
      Effect.gen(function*() {
        const wakes = yield* collecting(store.watchQueue("q", { pollInterval }))
        yield* woken(wakes)
        yield* queued(store, "q", "r1", 10_000)
        yield* store.leaveQueue("q", "r1")
        yield* woken(wakes)
      }).pipe(Effect.scoped))

    const putSchedule = (store: Store, name: string, cron: string, nextTick: number, workflowName = "wf") =>
      store.putSchedule({ workflowName, name, cron, nextTick, now: 50 })

    test("schedules: stored once, kept with the same cron, replaced with a new cron", (store) =>
      Effect.gen(function*() {
        const first = yield* putSchedule(store, "nightly", "0 2 * * *", 1_000)
        assert.deepStrictEqual(first, {
          workflowName: "wf",
          name: "nightly",
          cron: "0 2 * * *",
          nextTick: 1_000,
          updatedAt: 50
        })
        // the same cron again (another process starting): its stored next tick is kept
        assert.strictEqual((yield* putSchedule(store, "nightly", "0 2 * * *", 9_000)).nextTick, 1_000)
        yield* putSchedule(store, "hourly", "0 * * * *", 500)
        yield* putSchedule(store, "hourly", "0 * * * *", 700, "other")
        assert.deepStrictEqual((yield* store.schedules({ workflowName: "wf" })).map((s) => [s.name, s.nextTick]), [
          ["hourly", 500],
          ["nightly", 1_000]
        ])
        assert.deepStrictEqual((yield* store.schedules({})).map((s) => [s.workflowName, s.name]), [
          ["other", "hourly"],
          ["wf", "hourly"],
          ["wf", "nightly"]
        ])
        // a new cron: replaced, with its next tick
        const changed = yield* putSchedule(store, "nightly", "0 3 * * *", 2_000)
        assert.deepStrictEqual([changed.cron, changed.nextTick], ["0 3 * * *", 2_000])
        assert.deepStrictEqual((yield* store.schedules({ workflowName: "wf" })).map((s) => s.cron), [
          "0 * * * *",
          "0 3 * * *"
        ])
        // a name no store takes is refused, and found nowhere
        const bad = yield* Effect.flip(putSchedule(store, "bad\u0000name", "0 * * * *", 1))
        assert.strictEqual(bad._tag, "SessionStoreError")
        assert.isFalse(yield* store.claimScheduleTick("wf", "bad\u0000name", { tick: 1, next: 2, now: 1 }))
        assert.deepStrictEqual(yield* store.schedules({ workflowName: "bad\u0000wf" }), [])
      }))

    test("schedules: a tick is claimed once, only from the next tick the claimer read", (store) =>
      Effect.gen(function*() {
        yield* putSchedule(store, "every", "* * * * * *", 1_000)
        // a stale read (another tick) claims nothing
        assert.isFalse(yield* store.claimScheduleTick("wf", "every", { tick: 999, next: 2_000, now: 1_000 }))
        assert.isTrue(yield* store.claimScheduleTick("wf", "every", { tick: 1_000, next: 2_000, now: 1_005 }))
        assert.isFalse(yield* store.claimScheduleTick("wf", "every", { tick: 1_000, next: 2_000, now: 1_006 }))
        const [claimed] = yield* store.schedules({ workflowName: "wf" })
        assert.deepStrictEqual([claimed!.nextTick, claimed!.lastFiredAt, claimed!.updatedAt], [2_000, 1_005, 1_005])
        // the same cron again keeps the moved tick and when it fired
        const again = yield* putSchedule(store, "every", "* * * * * *", 1_000)
        assert.deepStrictEqual([again.nextTick, again.lastFiredAt], [2_000, 1_005])
        // no such schedule: nothing to claim
        assert.isFalse(yield* store.claimScheduleTick("wf", "missing", { tick: 1_000, next: 2_000, now: 1_000 }))
      }))

    const twoStores = options.twoStores
    if (twoStores !== undefined) {
      it.effect("schedules: two stores over one database race for one tick: exactly one claims it", () =>
        Effect.gen(function*() {
          const [a, b] = yield* twoStores
          yield* putSchedule(a, "race", "* * * * * *", 1_000)
          // b reads the schedule a stored, with its next tick
          assert.strictEqual((yield* putSchedule(b, "race", "* * * * * *", 5_000)).nextTick, 1_000)
          for (let tick = 1_000; tick < 6_000; tick += 1_000) {
            const claims = yield* Effect.all([
              a.claimScheduleTick("wf", "race", { tick, next: tick + 1_000, now: tick }),
              b.claimScheduleTick("wf", "race", { tick, next: tick + 1_000, now: tick })
            ], { concurrency: "unbounded" })
            assert.strictEqual(claims.filter(Boolean).length, 1, `tick ${tick}: ${claims}`)
          }
          assert.strictEqual((yield* b.schedules({ workflowName: "wf" }))[0]!.nextTick, 6_000)
        }).pipe(Effect.scoped))

      it.effect("event log: a run's events appended by one store are read and followed by another", () =>
        Effect.gen(function*() {
          const [a, b] = yield* twoStores
          const wakes = yield* collecting(b.watchEvents("shared-run", { pollInterval }))
          yield* woken(wakes)
          yield* a.appendEvents("shared-run", logOf("shared-run", 0, 2), keep)
          yield* woken(wakes)
          assert.deepStrictEqual(seqs(yield* b.readEvents("shared-run")), [0, 1, 2])
          yield* a.appendEvents("shared-run", [endEvent("shared-run", 3)], keep)
          yield* woken(wakes)
          assert.deepStrictEqual(seqs(yield* b.readEvents("shared-run", { after: 2 })), [3])
        }).pipe(Effect.scoped))

      it.effect("queue: two stores over one database share a session's queue", () =>
        Effect.gen(function*() {
          const [a, b] = yield* twoStores
          const wakes = yield* collecting(b.watchQueue("shared-q", { pollInterval }))
          yield* woken(wakes)
          yield* queued(a, "shared-q", "from-a", 10_000)
          yield* queued(b, "shared-q", "from-b", 10_000)
          assert.strictEqual(yield* turn(b, "from-b", 0), "waiting")
          assert.strictEqual(yield* turn(a, "from-a", 0), "taken")
          assert.deepStrictEqual(
            (yield* b.queuedRuns({ sessionId: "shared-q" })).map((run) => [run.runId, run.owner]),
            [
              ["from-a", a.owner],
              ["from-b", b.owner]
            ]
          )
          yield* a.leaveQueue("shared-q", "from-a", a.owner)
          yield* woken(wakes)
          assert.strictEqual(yield* turn(b, "from-b", 0), "taken")
        }).pipe(Effect.scoped))

      it.effect("watch: two stores over one database see each other's commits", () =>
        Effect.gen(function*() {
          const [a, b] = yield* twoStores
          const onA = yield* watching(a, "shared")
          const onB = yield* watching(b, "shared")
          yield* create(a, "shared", { by: ["a"] }, { run: run("shared", "ra") })
          const fromA = { sessionId: "shared", workflowName: "wf", version: 1, state: { by: ["a"] }, runId: "ra" }
          assert.deepStrictEqual(seen(yield* next(onA)), fromA)
          assert.deepStrictEqual(seen(yield* next(onB)), fromA)
          yield* b.commit({
            sessionId: "shared",
            workflowName: "wf",
            expectedVersion: 1,
            state: { by: ["a", "b"] },
            run: run("shared", "rb")
          })
          const fromB = { sessionId: "shared", workflowName: "wf", version: 2, state: { by: ["a", "b"] }, runId: "rb" }
          assert.deepStrictEqual(seen(yield* next(onA)), fromB)
          assert.deepStrictEqual(seen(yield* next(onB)), fromB)
          // a late watcher on the other store starts from the current version
          const late = yield* watching(a, "shared")
          assert.deepStrictEqual(seen(yield* next(late)), fromB)
        }).pipe(Effect.scoped))

      it.effect("two stores over one database: one commits changes, the other loads and continues the state", () =>
        Effect.gen(function*() {
          const [a, b] = yield* twoStores
          yield* create(a, "passed", { items: ["a0"] })
          yield* commitChanges(a, "passed", 1, { items: ["a0", "a1"] }, [{
            op: "append",
            path: ["items"],
            items: ["a1"]
          }])
          assert.deepStrictEqual((yield* loadSome(b, "passed")).state, { items: ["a0", "a1"] })
          yield* commitChanges(b, "passed", 2, { items: ["a0", "a1", "b2"] }, [{
            op: "append",
            path: ["items"],
            items: ["b2"]
          }])
          const seenByA = yield* loadSome(a, "passed")
          assert.deepStrictEqual([seenByA.version, seenByA.state], [3, { items: ["a0", "a1", "b2"] }])
        }).pipe(Effect.scoped))
    }
  })
