/**
 * Three real runner processes (`fixtures/runner.ts`) on the local PostgreSQL
 * and this process as a client of the cluster, with real faults from another
 * PostgreSQL connection:
 *
 * - a runner whose shard lock refresh is held up (its `cluster_runners` row
 *   locked) gives up its shards and interrupts the run in the middle of a
 *   step: the run is handed over, not cancelled — carried on from its
 *   journal, completed once, its caller answered with its output;
 * - a run whose failure could not be recorded (its row locked past the
 *   record's timeout) is answered `RunUnfinished`, and a runner carries it on
 *   to its end.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, expect, it } from "@effect/vitest"
import { SessionStore, Workflow } from "@sessionflow/core"
import { Deferred, Effect, Fiber, Option, Redacted, Schedule } from "effect"
import * as fs from "node:fs"
import { databaseUrl } from "../store-pg/pg.js"
import { flaky, gate, gated, leaseDuration, runnerStoreName } from "./fixtures/cluster.js"
import { cluster, lines } from "./runners.js"

/** Runs `f` on a short-lived client of the test's `database`. */
const withDatabase = <A, E>(database: string, f: (sql: PgClient.PgClient) => Effect.Effect<A, E>) =>
  Effect.scoped(
    Effect.flatMap(
      PgClient.make({ url: Redacted.make(databaseUrl(database)), applicationName: "sessionflow-test" }),
      f
    )
  ).pipe(Effect.provide(Reactivity.layer))

/**
 * Holds the rows `lock` selects (`SELECT ... FOR UPDATE`) in a transaction of
 * another connection until the effect it returns is run (after the rows are
 * locked): the number of rows it locked, and that release.
 */
const holdRows = (database: string, lock: (sql: PgClient.PgClient) => Effect.Effect<ReadonlyArray<unknown>, unknown>) =>
  Effect.gen(function*() {
    const locked = yield* Deferred.make<number>()
    const release = yield* Deferred.make<void>()
    const holder = yield* withDatabase(database, (sql) =>
      Effect.gen(function*() {
        const rows = yield* lock(sql)
        yield* Deferred.succeed(locked, rows.length)
        yield* Deferred.await(release)
      }).pipe(sql.withTransaction)).pipe(Effect.forkScoped)
    const count = yield* Deferred.await(locked)
    return { count, release: Effect.zipRight(Deferred.succeed(release, undefined), Fiber.join(holder)) }
  })

/** Polls `check` every 100 ms until it gives a value, failing after `seconds`. */
const eventually = <A, E, R>(what: string, seconds: number, check: Effect.Effect<Option.Option<A>, E, R>) =>
  check.pipe(
    Effect.flatMap((found) =>
      Option.match(found, { onNone: () => Effect.fail("not yet" as const), onSome: Effect.succeed })
    ),
    Effect.retry({ while: (error) => error === "not yet", schedule: Schedule.spaced("100 millis") }),
    Effect.timeoutFail({ duration: `${seconds} seconds`, onTimeout: () => new Error(`timed out waiting: ${what}`) })
  )

/** The lines of the side-effect file of one run, without its run id. */
const linesOf = (effects: string, runId: string) =>
  lines(effects).filter((line) => line.startsWith(`${runId} `)).map((line) => line.slice(runId.length + 1))

/** The stored state of run `runId`. */
const runOf = (runId: string) => Effect.flatMap(SessionStore.SessionStore, (store) => store.getRun(runId))

describe("a cluster of runner processes on PostgreSQL: handoffs and unfinished runs", () => {
  it.live(
    "a runner whose shard lock refresh is held up hands its run over: the run is released (not cancelled), " +
      "carried on from its journal, completed once, its caller answered with its output",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { addresses, client, database, effects } = yield* cluster
        const wf = gated(effects)
        const sessionId = `handoff-${crypto.randomUUID()}`
        const runId = `r-${crypto.randomUUID()}`
        const caller = yield* Workflow.run(wf, null, { sessionId, runId, leaseDuration }).pipe(
          Effect.either,
          Effect.provide(client),
          Effect.fork
        )
        // the run is in the middle of its second step (held there by its gate) on the session's runner
        const victim = yield* eventually(
          "the run's step 2",
          60,
          Effect.sync(() =>
            Option.fromNullable(
              linesOf(effects, runId).find((line) => line.startsWith("step-2-started "))?.split(" ")[1]
            )
          )
        )
        const address = addresses.get(Number(victim))
        assert.isDefined(address)
        const before = yield* runOf(runId).pipe(Effect.provide(client))
        assert(Option.isSome(before) && before.value._tag === "Active")
        expect(before.value.run.leaseExpiresAt).toBeGreaterThan(0)

        // another connection holds the runner's row: its next shard lock refresh
        // (an UPDATE of that row) waits past its interval, and the runner gives up its shards
        const held = yield* holdRows(
          database,
          (sql) => sql`SELECT address FROM cluster_runners WHERE address = ${address!} FOR UPDATE`
        )
        expect(held.count).toBe(1)
        // until the run is given up by its runner: released (lease given up, still
        // unfinished), or (the bug) ended. Its shards stay that runner's while the
        // row is held (it releases their locks only once its lock storage answers again)
        const given = yield* eventually(
          "the runner to give the run up",
          90,
          Effect.map(runOf(runId), (found) =>
            Option.filter(found, (lookup) => lookup._tag === "Recorded" || lookup.run.leaseExpiresAt === 0))
        ).pipe(Effect.provide(client))
        yield* held.release
        assert.strictEqual(given._tag, "Active", `the run was ended: ${JSON.stringify(given)}`)
        if (given._tag === "Active") {
          expect(given.run.status).toBe("running")
          // its journal kept: step 1 done
          expect(given.run.journal?.next).toBe(1)
        }

        // step 2 may go on now, wherever the run is carried on
        fs.writeFileSync(gate(effects, runId), "")
        const answered = yield* Fiber.join(caller)
        assert(answered._tag === "Right", `the caller was told ${JSON.stringify(answered)}`)
        expect(answered.right.runId).toBe(runId)
        expect(answered.right.content).toBe(3)
        expect(answered.right.state.items).toEqual(["1", "2", "3"])

        const history = yield* Workflow.getRunHistory(wf, sessionId).pipe(Effect.provide(client))
        expect(history.map((run) => [run.runId, run.status])).toEqual([[runId, "completed"]])
        // each completed (journaled) step ran once; the step in flight started again
        const steps = linesOf(effects, runId).map((line) =>
          line.split(" ")[0]
        )
        expect(steps.filter((step) => step !== "step-2-started")).toEqual(["step-1", "step-2", "step-3"])
        expect(steps.filter((step) => step === "step-2-started").length).toBeGreaterThanOrEqual(2)
      })),
    240_000
  )

  it.live(
    "a run answered RunUnfinished (its failure could not be recorded) is carried on by a runner to its end",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { client, database, effects } = yield* cluster
        const wf = flaky(effects)
        const sessionId = `unfinished-${crypto.randomUUID()}`
        const runId = `r-${crypto.randomUUID()}`
        const caller = yield* Workflow.run(wf, null, { sessionId, runId, leaseDuration }).pipe(
          Effect.flip,
          Effect.provide(client),
          Effect.fork
        )
        // its first attempt is in its step (held there by its gate), the run in the store
        yield* eventually(
          "the run's first attempt",
          60,
          Effect.sync(() => Option.liftPredicate(linesOf(effects, runId), (ls) => ls.length > 0))
        )
        yield* eventually(
          "the run in the store",
          30,
          Effect.map(runOf(runId), (found) => Option.filter(found, (lookup) => lookup._tag === "Active"))
        ).pipe(Effect.provide(client))

        // another connection holds the run's row: recording its failure waits past the record's timeout
        const held = yield* holdRows(
          database,
          (sql) => sql`SELECT run_id FROM sessionflow_sessions_active WHERE run_id = ${runId} FOR UPDATE`
        )
        expect(held.count).toBe(1)
        fs.writeFileSync(gate(effects, runId), "")
        const told = yield* Fiber.join(caller)
        // a record statement still waiting for the row is cut: it must not land once the row is free
        yield* withDatabase(database, (sql) =>
          sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
              WHERE application_name = ${runnerStoreName} AND wait_event_type = 'Lock'`)
        yield* held.release
        expect((told as { readonly _tag?: string })._tag, String(told)).toBe("RunUnfinished")

        // a runner (the one holding the session's shard) carries it on once its lease expired
        const ended = yield* eventually(
          "a runner to carry the run on to its end",
          120,
          Effect.map(runOf(runId), (found) => Option.filter(found, (lookup) => lookup._tag === "Recorded"))
        ).pipe(Effect.provide(client))
        assert(ended._tag === "Recorded")
        expect(ended.record.status).toBe("completed")
        expect(linesOf(effects, runId).map((line) => line.split(" ")[0])).toEqual(["attempt", "attempt"])
        const history = yield* Workflow.getRunHistory(wf, sessionId).pipe(Effect.provide(client))
        expect(history.map((run) => [run.runId, run.status])).toEqual([[runId, "completed"]])
        const state = yield* Workflow.getSessionState(wf, sessionId).pipe(Effect.provide(client))
        expect(state.items).toEqual(["attempt-2"])
        // the run id gives the completed run
        const again = yield* Workflow.run(wf, null, { sessionId, runId }).pipe(Effect.provide(client))
        expect(again.content).toBe(2)
      })),
    240_000
  )
})
