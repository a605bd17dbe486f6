/**
 * The chaos checker on small histories written by hand: a clean one passes,
 * and each invariant catches the case it is for (the shapes of the known
 * lifecycle bugs among them).
 */
import { assert, describe, it } from "@effect/vitest"
import type { SessionStore } from "@sessionflow/core"
import { check, type Invariant } from "./check.js"
import type { ChaosConfig } from "./config.js"
import type { Line, StepEffect } from "./history.js"
import type { Snapshot, SnapshotEvent } from "./snapshot.js"

const config: ChaosConfig = {
  store: "sqlite",
  spec: "sessions.db",
  seed: 1,
  seconds: 10,
  clients: 3,
  supervisors: 2,
  dir: "chaos",
  leaseMillis: 1500,
  sessions: ["s0"],
  maxConnections: 4,
  lockTimeoutMillis: 2000
}

const options = (runId: string, more: Record<string, unknown> = {}) => ({
  sessionId: "s0",
  runId,
  events: "stored",
  ...more
})

const start = (t: number, id: string, runId: string, more: Record<string, unknown> = {}): Array<Line> => [
  {
    type: "invoke",
    t,
    worker: "c0",
    pid: 10,
    id,
    op: "start",
    args: { wf: "chaos-work", input: { token: id, ms: [] }, options: options(runId, more) }
  },
  { type: "complete", t: t + 1, worker: "c0", pid: 10, id, op: "start", ok: true, value: { runId, sessionId: "s0" } }
]

const step = (t: number, runId: string, token: string, name: string, pid = 10, duration = 100): Array<StepEffect> => [
  { type: "effect", t, pid, runId, sessionId: "s0", wf: "chaos-work", step: name, phase: "begin", token },
  { type: "effect", t: t + duration, pid, runId, sessionId: "s0", wf: "chaos-work", step: name, phase: "end", token }
]

const record = (
  runId: string,
  token: string,
  status: SessionStore.RunStatus = "completed"
): SessionStore.RunRecord => ({
  runId,
  sessionId: "s0",
  workflowName: "chaos-work",
  status,
  input: { token, ms: [] },
  startedAt: 0,
  completedAt: 1
})

const log = (...tags: ReadonlyArray<string>): ReadonlyArray<SnapshotEvent> =>
  tags.map((_tag, seq) => ({
    seq,
    _tag,
    final: _tag === "RunCompleted" || _tag === "RunFailed" || _tag === "RunCancelled"
  }))

const snapshot = (
  runs: ReadonlyArray<SessionStore.RunRecord>,
  applied: ReadonlyArray<string>,
  events: Snapshot["events"]
): Snapshot => ({
  t: 100_000,
  sessions: [{ sessionId: "s0", version: applied.length, state: { applied }, runs }],
  active: [],
  queued: [],
  events
})

const found = (lines: ReadonlyArray<Line>, snap: Snapshot): ReadonlyArray<Invariant> =>
  check([...lines].sort((a, b) => a.t - b.t), snap, config).violations.map((v) => v.invariant)

const clean: ReadonlyArray<Line> = [
  ...start(0, "c0.1.1", "r1"),
  ...step(10, "r1", "c0.1.1", "a"),
  ...step(200, "r1", "c0.1.1", "c")
]
const cleanLog = log("RunStarted", "StepStarted", "StepCompleted", "StepStarted", "StepCompleted", "RunCompleted")

describe("the chaos checker", () => {
  it("passes a run that ended once, alone, with its log and its state", () => {
    assert.deepStrictEqual(found(clean, snapshot([record("r1", "c0.1.1")], ["r1"], { r1: cleanLog })), [])
  })

  it("event-log: a run recorded completed whose log stops at a step (a recovered background run)", () => {
    const stopped = log("RunStarted", "StepStarted", "StepCompleted", "StepStarted")
    assert.deepStrictEqual(found(clean, snapshot([record("r1", "c0.1.1")], ["r1"], { r1: stopped })), ["event-log"])
  })

  it("event-log: events appended after the terminal one", () => {
    const twice = log("RunStarted", "RunCompleted", "RunStarted", "RunFailed")
    assert.deepStrictEqual(found(clean, snapshot([record("r1", "c0.1.1")], ["r1"], { r1: twice })), ["event-log"])
  })

  it("run-ends-once: an acknowledged background run with no record, unfinished nowhere", () => {
    assert.deepStrictEqual(found(start(0, "c0.1.1", "r1", { onBusy: "enqueue" }), snapshot([], [], {})), [
      "run-ends-once"
    ])
  })

  it(
    "queue-exclusive: a queued run that starts while another queued run is in a step (two runs on one " +
      "session)",
    () => {
      const lines = [
        ...start(0, "c0.1.1", "r1", { onBusy: "enqueue" }),
        ...start(1, "c0.1.2", "r2", { onBusy: "enqueue" }),
        ...step(10, "r1", "c0.1.1", "a", 10, 3000),
        // r1's process died; r2 takes its turn, a supervisor resumes r1 outside the queue
        ...step(500, "r2", "c0.1.2", "a", 11, 1000),
        ...step(600, "r1", "c0.1.1", "a", 12, 1000)
      ]
      const snap = snapshot([record("r1", "c0.1.1"), record("r2", "c0.1.2", "error")], ["r1"], {
        r1: cleanLog,
        r2: log("RunStarted", "StepStarted", "StepCompleted", "RunFailed")
      })
      assert.deepStrictEqual(found(lines, snap), ["queue-exclusive"])
    }
  )

  it("journal: a step its attempt went on from begins again; a step in flight may run once more", () => {
    const journaled = [
      ...start(0, "c0.1.1", "r1", { durability: "step" }),
      ...step(10, "r1", "c0.1.1", "a"),
      ...step(200, "r1", "c0.1.1", "b")
    ]
    const inFlight = [...start(0, "c0.1.1", "r1", { durability: "step" }), ...step(10, "r1", "c0.1.1", "a")]
    const resumed = [
      ...step(1000, "r1", "c0.1.1", "a", 12),
      ...step(1200, "r1", "c0.1.1", "b", 12),
      ...step(1400, "r1", "c0.1.1", "c", 12)
    ]
    const snap = snapshot([record("r1", "c0.1.1")], ["r1"], { r1: cleanLog })
    assert.deepStrictEqual(found([...journaled, ...resumed], snap), ["journal"])
    assert.deepStrictEqual(found([...inFlight, ...resumed], snap), [])
  })

  it("told-stored: a signal told Delivered that no wait took", () => {
    const took = (t: number, step: string, value: string): StepEffect => ({
      type: "effect",
      t,
      pid: 10,
      runId: "r1",
      sessionId: "s0",
      wf: "chaos-wait",
      step,
      phase: "took",
      token: "c0.1.1",
      value: { _tag: "Received", value }
    })
    const signal = (t: number, id: string, value: Record<string, unknown>): Array<Line> => [
      {
        type: "invoke",
        t,
        worker: "c1",
        pid: 11,
        id,
        op: "signal",
        args: { wf: "chaos-wait", runId: "r1", signal: "go", value: id }
      },
      { type: "complete", t: t + 50, worker: "c1", pid: 11, id, op: "signal", ok: true, value }
    ]
    const lines = [
      ...clean,
      ...signal(300, "c1.1.1", { _tag: "Kept", seq: 1 }),
      ...signal(301, "c1.1.2", { _tag: "Kept", seq: 2 }),
      ...signal(302, "c1.1.3", { _tag: "Delivered", seq: 3, output: { runId: "r1" } }),
      took(320, "took-1", "c1.1.1"),
      took(330, "took-2", "c1.1.2")
    ]
    assert.deepStrictEqual(found(lines, snapshot([record("r1", "c0.1.1")], ["r1"], { r1: cleanLog })), ["told-stored"])
  })

  it("state: a completed run not applied, and a failed one applied", () => {
    const lines = [...clean, ...start(500, "c0.1.2", "r2"), ...step(510, "r2", "c0.1.2", "a")]
    const snap = snapshot([record("r1", "c0.1.1"), record("r2", "c0.1.2", "error")], ["r2"], {
      r1: cleanLog,
      r2: log("RunStarted", "StepStarted", "StepCompleted", "RunFailed")
    })
    assert.deepStrictEqual(found(lines, snap), ["state", "state"])
  })
})
