/**
 * Three real runner processes (`fixtures/runner.ts`) on the local PostgreSQL,
 * talking over sockets, and this process as a client of the cluster (the
 * cluster placement, as a stateless app server would use it): runs on one
 * hot session never conflict and never run twice; a runner killed with
 * SIGKILL in the middle of durable runs loses none of them — the session's
 * next owner carries each on from its journal, every completed (journaled)
 * step ran once.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Workflow } from "@sessionflow/core"
import { Clock, Duration, Effect, Fiber } from "effect"
import { processExists } from "../store-sqlite/processes.js"
import { counter, durable, leaseDuration } from "./fixtures/cluster.js"
import { checkSteps, cluster, killMidRun, lines } from "./runners.js"

describe("a cluster of runner processes on PostgreSQL", () => {
  it.live(
    "24 runs at once on one hot session: all applied, none conflicts, each ran once, all on the session's runner",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { client, effects } = yield* cluster
        const wf = counter(effects)
        const sessionId = `hot-${crypto.randomUUID()}`
        const outputs = yield* Effect.forEach(
          Array.from({ length: 24 }, (_, i) => i),
          () => Workflow.run(wf, sessionId, { sessionId }),
          { concurrency: "unbounded" }
        ).pipe(Effect.provide(client))
        expect(outputs.map((o) => o.content).sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1))
        const ran = lines(effects).filter((l) => l.startsWith(`${sessionId} `))
        expect(ran.length).toBe(24)
        expect(new Set(ran.map((l) => l.split(" ")[1])).size).toBe(1)
        const state = yield* Workflow.getSessionState(wf, sessionId).pipe(Effect.provide(client))
        expect(state.count).toBe(24)
      })),
    120_000
  )

  it.live(
    "a runner killed in the middle of durable runs: each run completes on another runner, no completed step ran twice",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { client, effects, runners } = yield* cluster
        const wf = durable(effects)
        const runs = Array.from(
          { length: 9 },
          (_, i) => ({ sessionId: `s${i}-${crypto.randomUUID()}`, runId: `r${i}-${crypto.randomUUID()}` })
        )
        const fibers = yield* Effect.forEach(runs, ({ runId, sessionId }) =>
          Workflow.run(wf, null, { sessionId, runId, leaseDuration }).pipe(
            Effect.zip(Clock.currentTimeMillis),
            Effect.provide(client),
            Effect.fork
          ))
        const { interrupted, killedAt, pid, victim } = yield* killMidRun(effects, runners)
        assert.isFalse(processExists(pid))
        expect(interrupted.size).toBeGreaterThan(0)

        const results = yield* Effect.forEach(fibers, Fiber.join)
        for (const [output] of results) {
          expect(output.content).toBe(4)
          expect(output.state.items).toEqual(["1", "2", "3", "4"])
        }
        checkSteps(
          effects,
          runs.map((r) =>
            r.runId
          ),
          victim
        )
        const failover = Math.max(...results.filter(([o]) => interrupted.has(o.runId)).map(([, at]) => at)) - killedAt
        // the bound: the tuned health check, assignment refresh,
        // lease and poll intervals, plus the runs' remaining steps
        console.log(`failover: the interrupted runs completed ${failover} ms after the kill`)
        expect(failover).toBeLessThan(Duration.toMillis("20 seconds"))
      })),
    180_000
  )
})
