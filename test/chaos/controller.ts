/**
 * The chaos run's controller: starts the worker processes on one store,
 * injects faults from the seed for the run's duration, then lets the
 * supervisors settle what is left (answering the questions still open),
 * stops everything, reads the store's snapshot and checks the history.
 *
 * Faults: SIGKILL of any worker (restarted after a while, as a new
 * incarnation), SIGSTOP then SIGCONT (sometimes for longer than a lease),
 * on PostgreSQL `pg_terminate_backend` of one of a worker's connections and
 * a session row locked by another connection (`SELECT … FOR UPDATE`) for a
 * while, on SQLite the database's write lock held by another process
 * (`BEGIN IMMEDIATE`) past the store's `lockTimeout`.
 */
import { SessionStore, Workflow } from "@sessionflow/core"
import { Effect, ManagedRuntime } from "effect"
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import pg from "pg"
import { spawnTypeScript } from "../process.js"
import { storeLayer } from "../stores.js"
import { check, type CheckResult, report } from "./check.js"
import { applicationName, type ChaosConfig, replayCommand, storeOptions } from "./config.js"
import { append, type FaultKind, readFolder } from "./history.js"
import { deriveSeed, mulberry32 } from "./prng.js"
import { makeRecorder } from "./recorder.js"
import { takeSnapshot } from "./snapshot.js"
import { makeWorkflows } from "./workflows.js"

const workerScript = fileURLToPath(new URL("./worker.ts", import.meta.url))
const lockHolderScript = fileURLToPath(new URL("../store-sqlite/fixtures/lockHolder.ts", import.meta.url))

/** How long the supervisors get to settle what is left, at most. */
const settleMillis = 150_000

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Node's options for the workers: the packages' sources. */
const nodeOptions = [process.env.NODE_OPTIONS, "--conditions=@sessionflow/source"].filter(Boolean).join(" ")

interface Proc {
  readonly name: string
  readonly role: "client" | "supervisor"
  incarnation: number
  child: ChildProcessWithoutNullStreams | undefined
  state: "running" | "stopped" | "dead"
  exited: Promise<void>
}

export interface ChaosOutcome {
  readonly result: CheckResult
  readonly dir: string
}

export const runChaos = async (config: ChaosConfig, schema: string | undefined): Promise<ChaosOutcome> => {
  const controllerFile = `${config.dir}/controller.jsonl`
  const note = (text: string) => {
    append(controllerFile, { type: "note", t: Date.now(), text })
    console.log(`chaos: ${text}`)
  }
  const fault = (kind: FaultKind, target: string, pid?: number, detail?: string) =>
    append(controllerFile, { type: "fault", t: Date.now(), kind, target, pid, detail })
  fs.writeFileSync(`${config.dir}/meta.json`, JSON.stringify({ ...config, command: replayCommand(config) }, null, 2))

  const runtime = ManagedRuntime.make(storeLayer(config.spec, storeOptions(config, "controller")))
  // the store is created (migrated) once, before the processes race for it
  await runtime.runPromise(Effect.asVoid(SessionStore.SessionStore))
  const pgClient = config.store === "pg"
    ? new pg.Client({ connectionString: process.env.SESSIONFLOW_TEST_DATABASE_URL })
    : undefined
  await pgClient?.connect()

  // ---------------------------------------------------------------------------
  // processes
  // ---------------------------------------------------------------------------

  const procs: Array<Proc> = [
    ...Array.from({ length: config.supervisors }, (_, i) => ({ name: `sup${i}`, role: "supervisor" as const })),
    ...Array.from({ length: config.clients }, (_, i) => ({ name: `c${i}`, role: "client" as const }))
  ].map((p) => ({ ...p, incarnation: 0, child: undefined, state: "dead", exited: Promise.resolve() }))

  /** once the faults stop: supervisors are started without the schedule */
  let settling = false
  const start = (proc: Proc): Promise<void> => {
    proc.incarnation++
    const child = spawnTypeScript(workerScript, [
      proc.role,
      proc.name,
      String(proc.incarnation),
      JSON.stringify(config)
    ], {
      env: { ...process.env, NODE_OPTIONS: nodeOptions, CHAOS_SETTLING: settling ? "1" : "" }
    })
    proc.child = child
    proc.state = "running"
    const log = fs.createWriteStream(`${config.dir}/log-${proc.name}.txt`, { flags: "a" })
    log.write(`--- incarnation ${proc.incarnation}, pid ${child.pid}\n`)
    child.stdout.pipe(log, { end: false })
    child.stderr.pipe(log, { end: false })
    append(controllerFile, {
      type: "proc",
      t: Date.now(),
      name: proc.name,
      role: proc.role,
      pid: child.pid!,
      event: "start"
    })
    proc.exited = new Promise((resolve) =>
      child.on("close", (code, signal) => {
        append(controllerFile, {
          type: "proc",
          t: Date.now(),
          name: proc.name,
          role: proc.role,
          pid: child.pid!,
          event: "exit",
          code: code ?? signal
        })
        if (proc.child === child) proc.state = "dead"
        resolve()
      })
    )
    return new Promise((resolve) => {
      let out = ""
      const timer = setTimeout(resolve, 60_000)
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString()
        if (out.split("\n").includes("ready")) {
          clearTimeout(timer)
          resolve()
        }
      })
      child.on("close", () => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  const kill = async (proc: Proc) => {
    if (proc.state === "dead" || proc.child === undefined) return
    proc.child.kill("SIGKILL")
    await proc.exited
  }

  await Promise.all(procs.filter((p) => p.role === "supervisor").map(start))
  await Promise.all(procs.filter((p) => p.role === "client").map(start))
  note(`started ${config.supervisors} supervisors and ${config.clients} clients on ${config.spec}`)

  // ---------------------------------------------------------------------------
  // faults
  // ---------------------------------------------------------------------------

  const rng = mulberry32(deriveSeed(config.seed, "controller"))
  const pending: Array<Promise<unknown>> = []
  let locked = false

  const sampleConnections = async () => {
    if (pgClient === undefined) return
    const { rows } = await pgClient.query<{ app: string; n: string }>(
      "SELECT application_name AS app, count(*) AS n FROM pg_stat_activity WHERE application_name LIKE " +
        "'chaos-%' GROUP BY 1"
    )
    append(controllerFile, {
      type: "conns",
      t: Date.now(),
      counts: Object.fromEntries(rows.map((r) => [r.app, Number(r.n)]))
    })
  }
  const sampler = setInterval(() => {
    sampleConnections().catch(() => {})
  }, 500)

  const holdLock = async (millis: number) => {
    locked = true
    try {
      if (pgClient === undefined) {
        const holder = spawnTypeScript(lockHolderScript, [`${config.spec}`, String(millis)])
        await new Promise<void>((resolve) => {
          let out = ""
          holder.stdout.on("data", (chunk: Buffer) => {
            if (out.includes("ready\n")) return
            out += chunk.toString()
            if (out.includes("ready\n")) fault("lock", "sqlite", holder.pid, `${millis} ms`)
          })
          holder.on("close", () => resolve())
        })
        fault("unlock", "sqlite", holder.pid)
      } else {
        const sessionId = rng.pick(config.sessions)
        const client = new pg.Client({
          connectionString: process.env.SESSIONFLOW_TEST_DATABASE_URL,
          application_name: "chaos-lock"
        })
        await client.connect()
        try {
          await client.query("BEGIN")
          await client.query(`SELECT 1 FROM "${schema}".sessionflow_sessions WHERE session_id = $1 FOR UPDATE`, [
            sessionId
          ])
          fault("lock", sessionId, undefined, `${millis} ms`)
          await sleep(millis)
          await client.query("COMMIT")
          fault("unlock", sessionId)
        } finally {
          await client.end().catch(() => {})
        }
      }
    } finally {
      locked = false
    }
  }

  const terminate = async (proc: Proc) => {
    if (pgClient === undefined) return
    const { rows } = await pgClient.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid",
      [applicationName(proc.name)]
    )
    if (rows.length === 0) return
    const victim = rows[rng.int(0, rows.length - 1)]!.pid
    await pgClient.query("SELECT pg_terminate_backend($1)", [victim])
    fault("terminate", proc.name, proc.child?.pid, `backend ${victim}`)
  }

  let faults = 0
  const chaosEnd = Date.now() + config.seconds * 1000
  while (Date.now() < chaosEnd) {
    await sleep(rng.int(1000, 3500))
    const kind = rng.weighted({ kill: 3, stop: 3, terminate: pgClient === undefined ? 0 : 2, lock: 1 })
    const proc = rng.pick(procs)
    const downFor = rng.int(300, 3 * config.leaseMillis)
    if (kind === "lock") {
      if (locked) continue
      pending.push(holdLock(rng.int(500, config.lockTimeoutMillis + 2500)).catch((e) => note(`lock failed: ${e}`)))
      faults++
      continue
    }
    if (proc.state !== "running" || proc.child === undefined) continue
    const pid = proc.child.pid!
    faults++
    switch (kind) {
      case "kill": {
        fault("kill", proc.name, pid)
        pending.push(
          kill(proc).then(() => sleep(downFor)).then(() => (Date.now() < chaosEnd + 5000 ? start(proc) : undefined))
        )
        break
      }
      case "stop": {
        proc.child.kill("SIGSTOP")
        proc.state = "stopped"
        fault("stop", proc.name, pid, `${downFor} ms`)
        const child = proc.child
        pending.push(
          sleep(downFor).then(() => {
            if (proc.child === child && proc.state === "stopped") {
              child.kill("SIGCONT")
              proc.state = "running"
              fault("cont", proc.name, pid)
            }
          })
        )
        break
      }
      case "terminate": {
        pending.push(terminate(proc).catch((e) => note(`terminate failed: ${e}`)))
        break
      }
    }
  }
  note(`faults stop (${faults} injected)`)
  await Promise.all(pending)

  // ---------------------------------------------------------------------------
  // settle
  // ---------------------------------------------------------------------------

  for (const proc of procs) {
    if (proc.state === "stopped") {
      proc.child?.kill("SIGCONT")
      proc.state = "running"
      fault("cont", proc.name, proc.child?.pid)
    }
  }
  // the supervisors settle without the schedule, whose ticks would never let the sessions rest
  settling = true
  await Promise.all(procs.filter((p) => p.role === "supervisor" && p.state !== "dead").map(kill))
  await Promise.all(procs.filter((p) => p.role === "supervisor").map(start))
  for (const proc of procs) {
    if (proc.role === "client" && proc.state === "running") proc.child?.stdin.write("stop\n")
  }
  const clientsDone = Promise.all(procs.filter((p) => p.role === "client").map((p) => p.exited))
  if (await Promise.race([clientsDone.then(() => true), sleep(20_000).then(() => false)]) === false) {
    note("clients did not stop within 20 s: killed")
    await Promise.all(procs.filter((p) => p.role === "client").map(kill))
  }
  note("clients stopped; settling")

  const workflows = makeWorkflows(`${config.dir}/effects.jsonl`)
  const { recorded } = makeRecorder(`${config.dir}/history-controller.jsonl`, "controller", 1)
  const settleEnd = Date.now() + settleMillis
  let settled = false
  while (Date.now() < settleEnd) {
    const left = await runtime.runPromise(Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const active = yield* store.activeRuns({})
      const queued = yield* store.queuedRuns({})
      // questions nobody will answer now: answered here, naming their pause
      for (const run of active) {
        if (run.workflowName === workflows.pause.name && run.pause?.kind === "question") {
          yield* recorded(
            "continue",
            {
              wf: run.workflowName,
              runId: run.runId,
              response: { ok: true, by: "controller" },
              options: { pause: run.pause.key }
            },
            Workflow.continue(workflows.pause, run.runId, { ok: true, by: "controller" }, {
              pause: run.pause.key,
              leaseDuration: `${config.leaseMillis} millis`
            })
          )
        }
      }
      return active.length + queued.length
    }))
    if (left === 0) {
      settled = true
      break
    }
    await sleep(500)
  }
  note(settled ? "settled: no run unfinished, none queued" : `not settled after ${settleMillis / 1000} s`)
  clearInterval(sampler)
  await Promise.all(procs.map(kill))

  // ---------------------------------------------------------------------------
  // snapshot and check
  // ---------------------------------------------------------------------------

  const lines = readFolder(config.dir)
  const runIds = new Set<string>()
  for (const line of lines) if (line.type === "effect") runIds.add(line.runId)
  const snapshot = await runtime.runPromise(takeSnapshot(runIds))
  fs.writeFileSync(`${config.dir}/snapshot.json`, JSON.stringify(snapshot))
  await runtime.dispose()
  await pgClient?.end()
  const result = check(lines, snapshot, config)
  console.log(report(result, config))
  return { result, dir: config.dir }
}
