/**
 * Another process holds the database's write lock (`BEGIN IMMEDIATE` in a
 * separate OS process) while runs in this process want to commit: waiting for
 * the lock must not freeze this process, must be interruptible, must be
 * bounded, and must never commit a run whose caller saw a failure.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Cause, type Context, type Duration, Effect, Either, Fiber, Layer, Logger, Option } from "effect"
import { performance } from "node:perf_hooks"
import { spawnFixture, tempFile, type Worker } from "./processes.js"

/** How long the lock holder keeps the lock at most (if the test never releases it). */
const holdAtMostMillis = 8_000

const append = Workflow.make({
  name: "append",
  sessionState: { items: [] },
  steps: [
    Step.make(
      "append",
      (input) => SessionState.update((s) => ({ items: [...(s.items as ReadonlyArray<unknown>), input.input] }))
    )
  ]
})

/** Same, but its step never finishes on its own. */
const stuck = Workflow.make({
  name: "append",
  sessionState: { items: [] },
  steps: [Step.make("wait", () => Effect.never)]
})

/**
 * Counts timer ticks every 10 ms and records the longest gap between two:
 * a blocked event loop shows as a long gap.
 */
const eventLoopMonitor = Effect.acquireRelease(
  Effect.sync(() => {
    let last = performance.now()
    let longestGap = 0
    const timer = setInterval(() => {
      const now = performance.now()
      longestGap = Math.max(longestGap, now - last)
      last = now
    }, 10)
    return { timer, longestGap: () => Math.max(longestGap, performance.now() - last) }
  }),
  ({ timer }) => Effect.sync(() => clearInterval(timer))
)

/**
 * A database file with a session `s` (one completed run, items ["first"]),
 * the store on it in this process, and a separate process holding the
 * database's write lock.
 */
const lockedDatabase = (options?: { readonly lockTimeout?: Duration.DurationInput }) =>
  Effect.gen(function*() {
    const filename = yield* tempFile
    const context = yield* Layer.build(SqliteSessionStore.layer({ filename, lockTimeout: options?.lockTimeout }))
    yield* Workflow.run(append, "first", { sessionId: "s" }).pipe(Effect.provide(context))
    const holder = yield* spawnFixture("lockHolder.ts", [filename, String(holdAtMostMillis)])
    yield* holder.ready
    return { context, holder }
  })

/** The session's state, version and run history, read after the lock is released. */
const session = Effect.gen(function*() {
  const store = yield* SessionStore.SessionStore
  const stored = Option.getOrThrow(yield* store.load("s"))
  const runs = yield* store.runs("s", {})
  return { state: stored.state, version: stored.version, runs: runs.map((r) => [r.input, r.status]) }
})

const unchanged = { state: { items: ["first"] }, version: 1, runs: [["first", "completed"]] }

/** Lets the other process release the lock, waits until it did, and reads the session. */
const releaseAndRead = (holder: Worker, context: Context.Context<SessionStore.SessionStore>) =>
  Effect.gen(function*() {
    yield* holder.start
    assert.include(yield* holder.exit, "released")
    return yield* Effect.provide(session, context)
  })

/** What the run "second" would commit on session `s`. */
const secondCommit: SessionStore.Commit = {
  sessionId: "s",
  workflowName: "append",
  expectedVersion: 1,
  state: { items: ["first", "second"] },
  run: {
    runId: "r2",
    sessionId: "s",
    workflowName: "append",
    status: "completed",
    input: "second",
    startedAt: 1,
    completedAt: 2
  }
}

const isTimeout = <A>(result: Either.Either<A, unknown>) =>
  Either.isLeft(result) && Cause.isTimeoutException(result.left)

const elapsedSince = (start: number) => performance.now() - start

describe("SqliteSessionStore while another process holds the write lock", () => {
  it.scopedLive(
    "a run under a timeout returns the timeout while the lock is " +
      "still held, without blocking the event loop, and commits nothing",
    () =>
      Effect.gen(function*() {
        const { context, holder } = yield* lockedDatabase()
        const monitor = yield* eventLoopMonitor
        const result = yield* Workflow.run(append, "second", { sessionId: "s" }).pipe(
          Effect.timeout("500 millis"),
          Effect.either,
          Effect.provide(context)
        )
        const longestGap = monitor.longestGap()
        // the caller got the timeout before the other process let go of the lock
        assert.isTrue(yield* holder.running)
        assert.isTrue(isTimeout(result))
        // timers kept firing while the run waited (before: one gap per busy timeout, 5 s)
        assert.isBelow(longestGap, 2_000)

        assert.deepStrictEqual(yield* releaseAndRead(holder, context), unchanged)
        // and the store works normally afterwards
        const next = yield* Workflow.run(append, "third", { sessionId: "s" }).pipe(Effect.provide(context))
        assert.deepStrictEqual(next.state, { items: ["first", "third"] })
      }),
    60_000
  )

  it.scopedLive(
    "a run without a timeout waits for the lock, then commits once and reports success",
    () =>
      Effect.gen(function*() {
        const { context, holder } = yield* lockedDatabase()
        const monitor = yield* eventLoopMonitor
        const fiber = yield* Workflow.run(append, "second", { sessionId: "s" }).pipe(
          Effect.provide(context),
          Effect.fork
        )
        yield* Effect.sleep("1 second")
        // still waiting, nothing written, and this process stays responsive
        assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
        assert.isTrue(yield* holder.running)
        assert.isBelow(monitor.longestGap(), 1_000)

        yield* holder.start
        const output = yield* Fiber.join(fiber)
        assert.deepStrictEqual(output.state, { items: ["first", "second"] })
        assert.include(yield* holder.exit, "released")
        assert.deepStrictEqual(yield* Effect.provide(session, context), {
          state: { items: ["first", "second"] },
          version: 2,
          runs: [["first", "completed"], ["second", "completed"]]
        })
      }),
    60_000
  )

  it.scopedLive(
    "a lock held longer than lockTimeout fails the run with a SessionStoreError and commits nothing",
    () =>
      Effect.gen(function*() {
        const { context, holder } = yield* lockedDatabase({ lockTimeout: "1 second" })
        const start = performance.now()
        const error = yield* Workflow.run(append, "second", { sessionId: "s" }).pipe(
          Effect.flip,
          Effect.provide(context)
        )
        const elapsed = elapsedSince(start)
        assert.isTrue(yield* holder.running)
        assert.instanceOf(error, WorkflowError.SessionStoreError)
        assert.strictEqual(error.method, "commit")
        assert.match(error.description, /locked by another connection for more than 1s/)
        // it did wait for the bound before giving up
        assert.isAtLeast(elapsed, 900)

        assert.deepStrictEqual(yield* releaseAndRead(holder, context), unchanged)
      }),
    60_000
  )

  it.scopedLive(
    "the record of a run interrupted in its steps does not wait for the lock for long: it is given up with a warning",
    () =>
      Effect.gen(function*() {
        const { context, holder } = yield* lockedDatabase()
        const warnings: Array<string> = []
        const logger = Logger.make(({ logLevel, message }) => {
          if (logLevel._tag === "Warning") warnings.push(String(message))
        })
        const result = yield* Workflow.run(stuck, "second", { sessionId: "s" }).pipe(
          Effect.timeout("300 millis"),
          Effect.either,
          Effect.provide(Layer.merge(Layer.succeedContext(context), Logger.replace(Logger.defaultLogger, logger)))
        )
        assert.isTrue(isTimeout(result))
        assert.isTrue(yield* holder.running)
        assert.isTrue(warnings.some((w) => w.includes("could not record failed run")), warnings.join("\n"))

        assert.deepStrictEqual(yield* releaseAndRead(holder, context), unchanged)
      }),
    60_000
  )

  it.scopedLive(
    "the record of an interrupted run waits for a lock that is released soon, and is kept",
    () =>
      Effect.gen(function*() {
        const { context, holder } = yield* lockedDatabase()
        const fiber = yield* Workflow.run(stuck, "second", { sessionId: "s" }).pipe(
          Effect.timeout("300 millis"),
          Effect.either,
          Effect.provide(context),
          Effect.fork
        )
        // released while the interrupted run's record waits for the lock
        yield* Effect.sleep("400 millis")
        yield* holder.start
        const result = yield* Fiber.join(fiber)
        assert.isTrue(isTimeout(result))
        yield* holder.exit
        assert.deepStrictEqual(yield* Effect.provide(session, context), {
          ...unchanged,
          runs: [["first", "completed"], ["second", "cancelled"]]
        })
      }),
    60_000
  )

  it.scopedLive("the store's own commit, interrupted while it waits, writes nothing", () =>
    Effect.gen(function*() {
      const { context, holder } = yield* lockedDatabase()
      const store = yield* Effect.provide(SessionStore.SessionStore, context)
      const result = yield* store.commit(secondCommit).pipe(Effect.timeout("300 millis"), Effect.either)
      assert.isTrue(isTimeout(result))
      assert.isTrue(yield* holder.running)

      assert.deepStrictEqual(yield* releaseAndRead(holder, context), unchanged)
    }), 60_000)

  it.scopedLive(
    "the store's own commit fails with SessionStoreError after lockTimeout, without blocking the event loop",
    () =>
      Effect.gen(function*() {
        const { context, holder } = yield* lockedDatabase({ lockTimeout: "1 second" })
        const store = yield* Effect.provide(SessionStore.SessionStore, context)
        const monitor = yield* eventLoopMonitor
        const error = yield* Effect.flip(store.commit(secondCommit))
        assert.isBelow(monitor.longestGap(), 1_000)
        assert.isTrue(yield* holder.running)
        assert.instanceOf(error, WorkflowError.SessionStoreError)
        assert.strictEqual(
          error.message,
          "SessionStore.commit: the database stayed locked by another connection for more than 1s (SQLITE_BUSY)"
        )

        assert.deepStrictEqual(yield* releaseAndRead(holder, context), unchanged)
      }),
    60_000
  )
})
