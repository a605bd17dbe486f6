/**
 * What the process tests of the cluster share: a fresh PostgreSQL database, a
 * side-effect file, three runner processes (`fixtures/runner.ts`) started one
 * after the other, HTTP server processes in front of them
 * (`fixtures/server.ts`), and the layer of a client of the cluster.
 */
import { expect } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { freshDatabase, withClient } from "../store-pg/pg.js"
import { spawnFixture, type Worker } from "../store-sqlite/processes.js"
import { clientLayer, shardsPerGroup } from "./fixtures/cluster.js"

/** A port nobody listens on now. */
const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** The lines of a side-effect file (none before it exists). */
export const lines = (file: string): Array<string> =>
  fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter((l) => l.length > 0) : []

/**
 * Until every shard is held and each of `runners` holds some: the shards
 * the first runner took move to the others as they join, and a shard that
 * moves in the middle of a test moves its sessions to another runner. The
 * shard locks are the advisory locks `SqlRunnerStorage` numbers 1000001 and
 * up (shard group "default"), each runner's on one connection, in the
 * test's database.
 */
const settled = (database: string, runners: number) =>
  Effect.repeat(
    Effect.zipLeft(
      withClient((sql) =>
        sql<{ shards: number; runners: number }>`
          SELECT count(*)::int AS shards, count(DISTINCT pid)::int AS runners FROM pg_locks
          WHERE locktype = 'advisory' AND granted AND classid = 0 AND objsubid = 1 AND objid BETWEEN 1000001 AND ${
          1000000 + shardsPerGroup
        }
            AND database = (SELECT oid FROM pg_database WHERE datname = ${database})`
      ),
      Effect.sleep("200 millis")
    ),
    { until: ([row]) => row !== undefined && row.shards === shardsPerGroup && row.runners === runners }
  ).pipe(Effect.timeoutFail({
    duration: "60 seconds",
    onTimeout: () => new Error("the shards did not settle over the runners")
  }))

/**
 * A fresh database, a side-effect file, three runners started one
 * after the other (their shards settled), their addresses, and the client's layer.
 */
export const cluster = Effect.gen(function*() {
  const database = yield* freshDatabase
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-cluster-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const effects = path.join(dir, "effects.log")
  /** each runner's address, as `@effect/cluster` keeps it (`host:port`), by its pid */
  const addresses = new Map<number, string>()
  const start = Effect.flatMap(
    freePort,
    (port) =>
      Effect.tap(
        spawnFixture("../../cluster/fixtures/runner.ts", [database, String(port), effects]),
        (runner) => Effect.sync(() => addresses.set(runner.pid, `127.0.0.1:${port}`))
      )
  )
  // the first one creates the cluster's tables; then the two others at once
  const first = yield* start
  yield* first.ready
  const others = yield* Effect.all([start, start])
  yield* Effect.forEach(others, (runner) => runner.ready, { concurrency: "unbounded" })
  const runners: ReadonlyArray<Worker> = [first, ...others]
  yield* settled(database, runners.length)
  return {
    database,
    effects,
    runners,
    addresses: addresses as ReadonlyMap<number, string>,
    client: clientLayer(database)
  }
})

/** `count` HTTP servers (cluster clients, holding no session) over the cluster's database: their base URLs. */
export const servers = (database: string, effects: string, count: number) =>
  Effect.forEach(
    Array.from({ length: count }),
    () =>
      Effect.gen(function*() {
        const port = yield* freePort
        const server = yield* spawnFixture("../../cluster/fixtures/server.ts", [database, String(port), effects])
        yield* server.ready
        return `http://127.0.0.1:${port}`
      }),
    { concurrency: "unbounded" }
  )

/**
 * Waits until a runner has durable runs half done (a `step-2` line of its
 * pid), lets it go into its next step, and kills it with SIGKILL: its pid,
 * when, and the runs it had started and not finished.
 */
export const killMidRun = (effects: string, runners: ReadonlyArray<Worker>) =>
  Effect.gen(function*() {
    const victim = yield* Effect.repeat(
      Effect.zipLeft(
        Effect.sync(() =>
          lines(effects).map((line) => line.split(" ") as [string, string, string]).find(([, step]) =>
            step === "step-2"
          )?.[2]
        ),
        Effect.sleep("20 millis")
      ),
      { until: (pid) => pid !== undefined }
    ).pipe(Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => new Error("no run reached step 2") }))
    const killed = runners.find((r) => String(r.pid) === victim)!
    // into its next step (a kill right after a step's effect,
    // before its journal entry, is the case `checkSteps` allows)
    yield* Effect.sleep("150 millis")
    yield* killed.kill
    const killedAt = Date.now()
    const doneBefore = new Set(lines(effects).filter((l) => l.includes(" step-4 ")).map((l) => l.split(" ")[0]))
    const interrupted = new Set(
      lines(effects).filter((l) => l.endsWith(` ${victim}`)).map((l) => l.split(" ")[0]!).filter((id) =>
        !doneBefore.has(id)
      )
    )
    return { victim: victim!, pid: killed.pid, killedAt, interrupted }
  })

const allSteps = ["step-1", "step-2", "step-3", "step-4"]

/**
 * Every step of every run completed once, in order; an interrupted run went
 * on elsewhere from its last journaled step. The one step that may show
 * twice is the victim's last one, when the kill fell between its effect and
 * its journal entry (it had not completed: the new owner runs it).
 */
export const checkSteps = (effects: string, runIds: ReadonlyArray<string>, victim: string) => {
  const all = lines(effects)
  for (const runId of runIds) {
    const mine = all.filter((l) => l.startsWith(`${runId} `)).map((l) => l.split(" ") as [string, string, string])
    const steps = mine.map(([, step]) => step)
    const onVictim = mine.filter(([, , pid]) => pid === victim).map(([, step]) => step)
    const elsewhere = mine.filter(([, , pid]) => pid !== victim).map(([, step]) => step)
    if (onVictim.length === 0 || elsewhere.length === 0) {
      expect(steps, runId).toEqual(allSteps)
      continue
    }
    expect(steps.slice(0, onVictim.length), runId).toEqual(onVictim)
    expect(onVictim, runId).toEqual(allSteps.slice(0, onVictim.length))
    const resumedFrom = allSteps.indexOf(elsewhere[0]!)
    expect([onVictim.length, onVictim.length - 1], `${runId}: ${steps.join(" ")}`).toContain(resumedFrom)
    expect(elsewhere, runId).toEqual(allSteps.slice(resumedFrom))
  }
}
