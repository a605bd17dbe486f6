/**
 * Three real runner processes (`fixtures/runner.ts`) on the local PostgreSQL,
 * talking over sockets, and this process as a client of the cluster (the
 * cluster placement, as a stateless app server would use it): runs on one
 * hot session never conflict and never run twice; a runner killed with
 * SIGKILL in the middle of durable runs loses none of them — the session's
 * next owner carries each on from its journal, every completed (journaled)
 * step ran once.
 */
import { NodeClusterSocket } from "@effect/platform-node"
import { assert, describe, expect, it } from "@effect/vitest"
import { ClusterPlacement } from "@sessionflow/cluster"
import { Workflow } from "@sessionflow/core"
import { Clock, Duration, Effect, Fiber, Layer } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { freshSchema } from "../store-pg/pg.js"
import { processExists, spawnFixture, type Worker } from "../store-sqlite/processes.js"
import { counter, durable, layers, leaseDuration, shardingConfig } from "./fixtures/cluster.js"

/** A port nobody listens on now. */
const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

const lines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter((l) => l.length > 0) : [])

/** A fresh schema, a side-effect file, three runners started one after the other, and the client's layer. */
const cluster = Effect.gen(function*() {
  const schema = yield* freshSchema
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-cluster-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const effects = path.join(dir, "effects.log")
  const start = Effect.flatMap(freePort, (port) => spawnFixture("../../cluster/fixtures/runner.ts", [schema, String(port), effects]))
  // the first one creates the cluster's tables; then the two others at once
  const first = yield* start
  yield* first.ready
  const others = yield* Effect.all([start, start])
  yield* Effect.forEach(others, (runner) => runner.ready, { concurrency: "unbounded" })
  const runners: ReadonlyArray<Worker> = [first, ...others]
  const { sql, store } = layers(schema)
  const client = ClusterPlacement.layer.pipe(
    Layer.provideMerge(store),
    Layer.provide(NodeClusterSocket.layer({ clientOnly: true, storage: "sql", shardingConfig: shardingConfig(undefined) })),
    Layer.provide(sql)
  )
  return { effects, runners, client }
})

describe("a cluster of runner processes on PostgreSQL", () => {
  it.live("24 runs at once on one hot session: all applied, none conflicts, each ran once, all on the session's runner", () =>
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
    })), 120_000)

  it.live("a runner killed in the middle of durable runs: each run completes on another runner, no completed step ran twice", () =>
    Effect.scoped(Effect.gen(function*() {
      const { client, effects, runners } = yield* cluster
      const wf = durable(effects)
      const runs = Array.from({ length: 9 }, (_, i) => ({ sessionId: `s${i}-${crypto.randomUUID()}`, runId: `r${i}-${crypto.randomUUID()}` }))
      const fibers = yield* Effect.forEach(runs, ({ runId, sessionId }) =>
        Workflow.run(wf, null, { sessionId, runId, leaseDuration }).pipe(
          Effect.zip(Clock.currentTimeMillis),
          Effect.provide(client),
          Effect.fork
        ))
      // a runner that has runs half done: kill it after their second step
      const victim = yield* Effect.repeat(
        Effect.zipLeft(
          Effect.sync(() => {
            const byPid = new Map<string, Array<string>>()
            for (const line of lines(effects)) {
              const [runId, step, pid] = line.split(" ") as [string, string, string]
              if (step === "step-2") byPid.set(pid, [...(byPid.get(pid) ?? []), runId])
            }
            return [...byPid.entries()].find(([, ids]) => ids.length > 0)?.[0]
          }),
          Effect.sleep("20 millis")
        ),
        { until: (pid) => pid !== undefined }
      ).pipe(Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => new Error("no run reached step 2") }))
      const killed = runners.find((r) => String(r.pid) === victim)!
      // into its next step (a kill right after a step's effect, before its journal entry, is the case below)
      yield* Effect.sleep("150 millis")
      yield* killed.kill
      const killedAt = yield* Clock.currentTimeMillis
      assert.isFalse(processExists(killed.pid))
      const doneBefore = new Set(lines(effects).filter((l) => l.includes(" step-4 ")).map((l) => l.split(" ")[0]))
      const interrupted = new Set(
        lines(effects).filter((l) => l.endsWith(` ${victim}`)).map((l) => l.split(" ")[0]!).filter((id) => !doneBefore.has(id))
      )
      expect(interrupted.size).toBeGreaterThan(0)

      const results = yield* Effect.forEach(fibers, Fiber.join)
      for (const [output] of results) {
        expect(output.content).toBe(4)
        expect(output.state.items).toEqual(["1", "2", "3", "4"])
      }
      // every step of every run completed once, in order; an interrupted run went on elsewhere from
      // its last journaled step. The one step that may show twice is the victim's last one, when the
      // kill fell between its effect and its journal entry (it had not completed: the new owner runs it)
      const all = lines(effects)
      for (const { runId } of runs) {
        const mine = all.filter((l) => l.startsWith(`${runId} `)).map((l) => l.split(" ") as [string, string, string])
        const steps = mine.map(([, step]) => step)
        const onVictim = mine.filter(([, , pid]) => pid === victim).map(([, step]) => step)
        const elsewhere = mine.filter(([, , pid]) => pid !== victim).map(([, step]) => step)
        if (onVictim.length === 0 || elsewhere.length === 0) {
          expect(steps, runId).toEqual(["step-1", "step-2", "step-3", "step-4"])
          continue
        }
        expect(steps.slice(0, onVictim.length), runId).toEqual(onVictim)
        expect(onVictim, runId).toEqual(["step-1", "step-2", "step-3", "step-4"].slice(0, onVictim.length))
        const resumedFrom = ["step-1", "step-2", "step-3", "step-4"].indexOf(elsewhere[0]!)
        expect([onVictim.length, onVictim.length - 1], `${runId}: ${steps.join(" ")}`).toContain(resumedFrom)
        expect(elsewhere, runId).toEqual(["step-1", "step-2", "step-3", "step-4"].slice(resumedFrom))
      }
      const failover = Math.max(...results.filter(([o]) => interrupted.has(o.runId)).map(([, at]) => at)) - killedAt
      // the bound: the tuned health check, assignment refresh, lease and poll intervals, plus the runs' remaining steps
      console.log(`failover: the interrupted runs completed ${failover} ms after the kill`)
      expect(failover).toBeLessThan(Duration.toMillis("20 seconds"))
    })), 180_000)
})
