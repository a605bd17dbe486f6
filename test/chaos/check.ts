/**
 * The chaos run's checker: pure functions over the recorded history (what
 * the clients asked and were told, the steps' side effects, the faults) and
 * the store's snapshot at the end, against a model of the run lifecycle.
 *
 * The model, in short: a run is sent (`run`, `start`, a retry of its id),
 * may wait in its session's queue, runs its steps (in one process or, after
 * a death, another), may pause (a question, a sleep, a wait for a signal)
 * and is carried on, and ends in exactly one record — completed (its state
 * committed), failed, cancelled or abandoned (nothing committed). Each
 * invariant below is a promise of the READMEs; `README.md` beside this file
 * lists them.
 */
import type { SessionStore } from "@sessionflow/core"
import type { ChaosConfig } from "./config.js"
import { replayCommand } from "./config.js"
import type { Complete, Invoke, Line, StepEffect } from "./history.js"
import type { Snapshot, SnapshotEvent } from "./snapshot.js"
import { scheduleName } from "./workflows.js"

/** The workflow of the supervisors' schedule. */
const scheduledWorkflow = "chaos-work"

const invariants = {
  "run-ends-once":
    "every acknowledged run ends in exactly one record, or is visibly unfinished (running, paused, queued)",
  "queue-exclusive":
    "a run of a session's queue runs alone: no other queued or tracked run of the session executes when its " +
    "step starts",
  "journal": "a journaled step (durability \"step\": one its attempt went on from) never runs again",
  "event-log": "a run's stored events are one gap-free seq sequence, with exactly one terminal event, agreeing with " +
    "its record, once it ended",
  "told-stored":
    "what a caller is told is what is stored (completed, RunEnded, cancel, Delivered, a queued run never refused)",
  "state": "a session's state is its completed runs applied once each, and nothing of the others; a fork's state " +
    "is a prefix of its session's",
  "connections":
    "no process holds more PostgreSQL connections than its pool allows (its pool and its LISTEN connection)"
} as const

export type Invariant = keyof typeof invariants

interface Violation {
  readonly invariant: Invariant
  readonly message: string
  readonly runIds: ReadonlyArray<string>
  readonly sessions: ReadonlyArray<string>
}

export interface CheckResult {
  readonly violations: ReadonlyArray<Violation>
  readonly counts: {
    readonly operations: number
    readonly faults: number
    readonly runs: number
    readonly effects: number
  }
  /** the shortest history of each violation, as text lines */
  readonly histories: ReadonlyArray<ReadonlyArray<string>>
}

type Record = SessionStore.RunRecord

interface RunInfo {
  readonly runId: string
  sessionId: string | undefined
  workflow: string | undefined
  /** the ops that sent it (a run, a start, retries of its id) */
  readonly sentBy: Array<Invoke>
  readonly records: Array<Record>
  active: SessionStore.ActiveRun | undefined
  queued: SessionStore.QueuedRun | undefined
  readonly effects: Array<StepEffect>
}

interface RunOptions {
  readonly runId?: string
  readonly sessionId?: string
  readonly onBusy?: string
  readonly durability?: string
  readonly events?: string
  readonly retryOnConflict?: unknown
}

const optionsOf = (invoke: Invoke): RunOptions => (invoke.args.options ?? {}) as RunOptions
const tokenOf = (input: unknown): string | undefined =>
  typeof input === "object" && input !== null && "token" in input && typeof input.token === "string"
    ? input.token
    : undefined

/** The errors that name the run a caller sent (others, like `SessionPaused`, name another run). */
const ownErrors = new Set(["RunPaused", "RunEnded", "RunInProgress", "RunLost", "RunUnfinished", "RunNotFound"])

const isSend = (invoke: Invoke) => invoke.op === "run" || invoke.op === "start" || invoke.op === "retry"

const finalTag: { readonly [status in SessionStore.RunStatus]: ReadonlyArray<string> } = {
  completed: ["RunCompleted"],
  error: ["RunFailed"],
  cancelled: ["RunCancelled"],
  abandoned: ["RunFailed", "RunCancelled"]
}

/** The errors of `Workflow.signal` that say the signal was not stored. */
const refusals = new Set(["SignalDecodeError", "RunNotFound", "SessionOwnershipError", "InvalidRunId"])

/** The run that an error or a value a caller was told names. */
const runIdIn = (value: unknown): string | undefined =>
  typeof value === "object" && value !== null && "runId" in value && typeof value.runId === "string"
    ? value.runId
    : undefined

export const check = (lines: ReadonlyArray<Line>, snapshot: Snapshot, config: ChaosConfig): CheckResult => {
  const invokes = new Map<string, Invoke>()
  const completes = new Map<string, Complete>()
  const effects: Array<StepEffect> = []
  for (const line of lines) {
    if (line.type === "invoke") invokes.set(line.id, line)
    else if (line.type === "complete") completes.set(line.id, line)
    else if (line.type === "effect") effects.push(line)
  }
  const faults = lines.filter((l) => l.type === "fault")
  /** a process by its pid: `c1[1234]`, `sup0[1235]` */
  const names = new Map<number, string>()
  for (const line of lines) if (line.type === "proc") names.set(line.pid, line.name)
  const proc = (pid: number) => `${names.get(pid) ?? "controller"}[${pid}]`
  const violations: Array<Violation> = []
  const violate = (
    invariant: Invariant,
    message: string,
    runIds: ReadonlyArray<string>,
    sessions: ReadonlyArray<string> = []
  ) => violations.push({ invariant, message, runIds, sessions })

  // ---------------------------------------------------------------------------
  // the runs: from the ops that sent them, their effects, the store
  // ---------------------------------------------------------------------------

  const runs = new Map<string, RunInfo>()
  const run = (runId: string): RunInfo => {
    let info = runs.get(runId)
    if (info === undefined) {
      info = {
        runId,
        sessionId: undefined,
        workflow: undefined,
        sentBy: [],
        records: [],
        active: undefined,
        queued: undefined,
        effects: []
      }
      runs.set(runId, info)
    }
    return info
  }
  /** run ids by the token of the op that sent them */
  const byToken = new Map<string, Set<string>>()
  const noteToken = (token: string | undefined, runId: string) => {
    if (token === undefined) return
    const ids = byToken.get(token) ?? new Set()
    ids.add(runId)
    byToken.set(token, ids)
  }
  for (const effect of effects) {
    const info = run(effect.runId)
    info.effects.push(effect)
    info.sessionId ??= effect.sessionId
    info.workflow ??= effect.wf
    noteToken(effect.token, effect.runId)
  }
  for (const session of snapshot.sessions) {
    for (const record of session.runs) {
      const info = run(record.runId)
      info.records.push(record)
      info.sessionId ??= record.sessionId
      info.workflow ??= record.workflowName
      noteToken(tokenOf(record.input), record.runId)
    }
  }
  for (const active of snapshot.active) {
    const info = run(active.runId)
    info.active = active
    info.sessionId ??= active.sessionId
    noteToken(tokenOf(active.input), active.runId)
  }
  for (const queued of snapshot.queued) {
    const info = run(queued.runId)
    info.queued = queued
    info.sessionId ??= queued.sessionId
    noteToken(tokenOf(queued.input), queued.runId)
  }
  /**
   * The run an op sent: its id, else the one its token ran, else the one its
   * told value or error names (an error about the run itself: `SessionPaused`
   * names the run that holds the session).
   */
  const sentRun = (invoke: Invoke): string | undefined => {
    const given = optionsOf(invoke).runId
    if (given !== undefined) return given
    const ids = byToken.get(tokenOf(invoke.args.input) ?? "")
    if (ids?.size === 1) return [...ids][0]
    const complete = completes.get(invoke.id)
    return runIdIn(complete?.value) ??
      (ownErrors.has(complete?.error?._tag ?? "") ? runIdIn(complete?.error) : undefined)
  }
  for (const invoke of invokes.values()) {
    if (!isSend(invoke)) continue
    const runId = sentRun(invoke)
    if (runId === undefined) continue
    const info = run(runId)
    info.sentBy.push(invoke)
    info.sessionId ??= optionsOf(invoke).sessionId
    info.workflow ??= String(invoke.args.wf)
  }
  /** a run of the supervisors' schedule: started in the background, queued, journaled, its events stored */
  const isScheduled = (info: RunInfo) => info.runId.startsWith(`${scheduledWorkflow}/${scheduleName}@`)
  const isQueued = (info: RunInfo) => isScheduled(info) || info.sentBy.some((s) => optionsOf(s).onBusy === "enqueue")
  const isTracked = (info: RunInfo) =>
    isScheduled(info) ||
    info.sentBy.some((s) => s.op === "start" || optionsOf(s).runId !== undefined || optionsOf(s).durability === "step")
  const isJournaled = (info: RunInfo) =>
    isScheduled(info) || info.sentBy.some((s) => optionsOf(s).durability === "step")
  const storesEvents = (info: RunInfo) => isScheduled(info) || info.sentBy.some((s) => optionsOf(s).events === "stored")
  const recordOf = (info: RunInfo): Record | undefined => info.records[0]

  // ---------------------------------------------------------------------------
  // run-ends-once
  // ---------------------------------------------------------------------------

  const acknowledged = new Set<string>()
  for (const complete of completes.values()) {
    const invoke = invokes.get(complete.id)
    if (invoke === undefined) continue
    if (invoke.op === "start" && complete.ok) acknowledged.add(String(runIdIn(complete.value)))
    if (!complete.ok && complete.error?._tag === "RunPaused") acknowledged.add(String(runIdIn(complete.error)))
    if (isSend(invoke) && complete.ok) acknowledged.add(String(runIdIn(complete.value)))
  }
  // a tracked run whose steps began was known to the store
  for (const info of runs.values()) {
    if (info.effects.length > 0 && isTracked(info)) acknowledged.add(info.runId)
  }
  for (const info of runs.values()) {
    const places = info.records.length + (info.active === undefined ? 0 : 1) + (info.queued === undefined ? 0 : 1)
    if (info.records.length > 1) {
      violate(
        "run-ends-once",
        `run ${info.runId} has ${info.records.length} records (${info.records.map((r) => r.status).join(", ")})`,
        [info.runId],
        [info.sessionId ?? "?"]
      )
    } else if (places > 1) {
      violate(
        "run-ends-once",
        `run ${info.runId} is in several places at once: ${
          info.records.length > 0 ? `recorded ${info.records[0]!.status}, ` : ""
        }${info.active ? `unfinished (${info.active.status}), ` : ""}${info.queued ? "queued" : ""}`,
        [info.runId],
        [info.sessionId ?? "?"]
      )
    } else if (places === 0 && acknowledged.has(info.runId)) {
      const sent = info.sentBy.map((s) => `${s.op} ${JSON.stringify(optionsOf(s))}`).join("; ")
      violate(
        "run-ends-once",
        `acknowledged run ${info.runId} (${info.workflow}) has no record and is neither unfinished nor ` +
          `queued (sent: ${sent}; ${info.effects.length} step effects)`,
        [info.runId],
        [info.sessionId ?? "?"]
      )
    }
  }

  // ---------------------------------------------------------------------------
  // queue-exclusive: step intervals [begin, end] of one process, per session
  // ---------------------------------------------------------------------------

  const stops = faults.filter((f) => f.kind === "stop")
  const longStop = (pid: number, from: number, to: number) =>
    stops.some((s) =>
      s.pid === pid && s.t >= from && s.t <= to && Number.parseInt(s.detail ?? "0") >= config.leaseMillis / 2
    )
  interface Interval {
    readonly runId: string
    readonly sessionId: string
    readonly step: string
    readonly pid: number
    /** when this attempt of the run (its first step in this process) began */
    readonly entry: number
    readonly begin: number
    readonly end: number
  }
  const intervals: Array<Interval> = []
  for (const info of runs.values()) {
    const open = new Map<string, StepEffect>()
    const entries = new Map<number, number>()
    for (const effect of info.effects) {
      if (!entries.has(effect.pid)) entries.set(effect.pid, effect.t)
      const key = `${effect.pid}/${effect.step}`
      if (effect.phase === "begin") open.set(key, effect)
      else if (effect.phase === "end") {
        const begin = open.get(key)
        open.delete(key)
        // a process stopped past half a lease may have lost its run meanwhile: its step is a zombie's
        if (begin !== undefined && !longStop(effect.pid, begin.t, effect.t)) {
          intervals.push({
            runId: info.runId,
            sessionId: effect.sessionId,
            step: effect.step,
            pid: effect.pid,
            entry: entries.get(effect.pid)!,
            begin: begin.t,
            end: effect.t
          })
        }
      }
    }
  }
  const bySession = new Map<string, Array<Interval>>()
  for (const interval of intervals) {
    const list = bySession.get(interval.sessionId) ?? []
    list.push(interval)
    bySession.set(interval.sessionId, list)
  }
  const reported = new Set<string>()
  for (const [sessionId, list] of bySession) {
    list.sort((a, b) => a.begin - b.begin)
    for (let i = 0; i < list.length; i++) {
      for (let j = 0; j < i; j++) {
        if (list[j]!.runId === list[i]!.runId || list[j]!.end <= list[i]!.begin) continue
        // the run that came to the session later (its attempt's first step) is the one that should have waited
        const [earlier, later] = list[j]!.entry <= list[i]!.entry ? [list[j]!, list[i]!] : [list[i]!, list[j]!]
        const x = runs.get(earlier.runId)!
        const y = runs.get(later.runId)!
        const cancelled = (info: RunInfo) => recordOf(info)?.status === "cancelled"
        if (!isQueued(y) || !(isQueued(x) || isTracked(x)) || cancelled(x) || cancelled(y)) continue
        const key = [earlier.runId, later.runId].sort().join("|")
        if (reported.has(key)) continue
        reported.add(key)
        violate(
          "queue-exclusive",
          `queued run ${later.runId} (in ${proc(later.pid)}, its first step ${
            later.entry - earlier.entry
          } ms after the other's) ran step ${later.step} during step ${earlier.step} of ${
            isQueued(x) ? "queued" : "tracked"
          } run ${earlier.runId} (in ${proc(earlier.pid)}) on session ${sessionId}; recorded: ${
            recordOf(x)?.status ?? "nothing"
          } / ${recordOf(y)?.status ?? "nothing"}`,
          [earlier.runId, later.runId],
          [sessionId]
        )
      }
    }
  }

  // ---------------------------------------------------------------------------
  // journal: a step of a durability "step" run, once journaled, never begins again
  // ---------------------------------------------------------------------------

  // A step is journaled when the attempt that completed it went on to a later step (the
  // journal is written between the two). An in-flight step (its process died, stalled or
  // lost its lease before it went on) may run once more: its rerun is not a violation.
  for (const info of runs.values()) {
    if (!isJournaled(info)) continue
    for (const end of info.effects) {
      if (end.phase !== "end") continue
      const onward = info.effects.find((e) => e.pid === end.pid && e.t >= end.t && e.step !== end.step)
      if (onward === undefined) continue
      const again = info.effects.find((e) => e.phase === "begin" && e.step === end.step && e.t > onward.t)
      if (again !== undefined) {
        violate(
          "journal",
          `step ${end.step} of run ${info.runId} (durability "step") began again in ${proc(again.pid)} after ${
            proc(end.pid)
          } completed it and went on to step ${onward.step}`,
          [info.runId],
          [info.sessionId ?? "?"]
        )
        break
      }
    }
  }

  // ---------------------------------------------------------------------------
  // event-log
  // ---------------------------------------------------------------------------

  for (const info of runs.values()) {
    if (!storesEvents(info)) continue
    // a plain run killed mid-way is known to nobody
    if (info.records.length === 0 && info.active === undefined) continue
    const events: ReadonlyArray<SnapshotEvent> = snapshot.events[info.runId] ?? []
    const record = recordOf(info)
    const problems: Array<string> = []
    if (events.length === 0) problems.push("no stored event")
    events.forEach((event, i) => {
      if (event.seq !== i && problems.length === 0) {
        problems.push(`seq ${event.seq} at position ${i} (a gap or a duplicate)`)
      }
    })
    const finals = events.filter((e) => e.final)
    if (record !== undefined && events.length > 0) {
      const first = finals[0]
      if (first === undefined) {
        const carriers = [...new Set(info.effects.map((e) => proc(e.pid)))].join(", ")
        problems.push(
          `no terminal event for a run recorded ${record.status} (the log stops at ${
            events.at(-1)!._tag
          }; its steps ran in ${carriers || "no process"})`
        )
      } else {
        if (!finalTag[record.status].includes(first._tag)) {
          problems.push(`terminal event ${first._tag} for a run recorded ${record.status}`)
        }
        const after = events.slice(events.indexOf(first) + 1)
        if (after.length > 0) {
          problems.push(`events appended after its terminal ${first._tag}: ${after.map((e) => e._tag).join(", ")}`)
        }
      }
    }
    if (record === undefined && finals.length > 0) {
      problems.push(`terminal event ${finals[0]!._tag} for a run not recorded as ended`)
    }
    if (problems.length > 0) {
      const tail = events.slice(-4).map((e) => `${e.seq}:${e._tag}`).join(" ")
      violate(
        "event-log",
        `run ${info.runId} (${info.workflow}, ${record?.status ?? info.active?.status ?? "?"}): ${
          problems.join("; ")
        } — ${events.length} events, last: ${tail}`,
        [info.runId],
        [info.sessionId ?? "?"]
      )
    }
  }

  // ---------------------------------------------------------------------------
  // told-stored
  // ---------------------------------------------------------------------------

  for (const complete of completes.values()) {
    const invoke = invokes.get(complete.id)
    if (invoke === undefined) continue
    const runId = isSend(invoke) ? sentRun(invoke) : (invoke.args.runId as string | undefined)
    const info = runId === undefined ? undefined : runs.get(runId)
    const record = info === undefined ? undefined : recordOf(info)
    const where = `${invoke.worker} ${invoke.op} (${invoke.id})`
    const fail = (message: string) =>
      violate("told-stored", `${where}: ${message}`, runId === undefined ? [] : [runId], [info?.sessionId ?? "?"])
    if (complete.ok && (isSend(invoke) || invoke.op === "continue") && invoke.op !== "start") {
      if (record?.status !== "completed") {
        fail(
          `told completed, stored ${
            record?.status ?? (info?.active ? `unfinished (${info.active.status})` : "nothing")
          }`
        )
      }
    }
    if (invoke.op === "signal" && complete.ok) {
      const value = complete.value as { readonly _tag: string; readonly output?: { readonly runId: string } }
      if (value._tag === "Delivered") {
        const took = info?.effects.some((e) =>
          e.phase === "took" && typeof e.value === "object" && e.value !== null && "value" in e.value &&
          e.value.value === invoke.args.value
        )
        if (!took) {
          const taken = (info?.effects ?? []).filter((e) => e.phase === "took").map((e) => JSON.stringify(e.value))
            .join(", ")
          fail(
            `told Delivered for signal ${
              String(invoke.args.value)
            }, but no wait of run ${runId} took it (the waits took: ${taken || "nothing"})`
          )
        }
        if (record?.status !== "completed" && info?.active === undefined) {
          fail(`told Delivered (the run carried on), but run ${runId} is stored ${record?.status ?? "nowhere"}`)
        }
      }
    }
    // a refusal says the signal was not stored; the other errors are the end of the run the call carried on
    // (cancelled meanwhile, lost to another process, failed), which may have taken the signal first
    if (invoke.op === "signal" && !complete.ok && refusals.has(String(complete.error?._tag))) {
      const taken = info?.effects.find((e) =>
        e.phase === "took" && typeof e.value === "object" && e.value !== null && "value" in e.value &&
        e.value.value === invoke.args.value
      )
      if (taken !== undefined) {
        fail(
          `told ${complete.error?._tag} for signal ${
            String(invoke.args.value)
          }, but a wait of run ${runId} took it (${taken.step})`
        )
      }
    }
    if (!complete.ok && complete.error?._tag === "RunEnded") {
      const status = complete.error.status
      if (record === undefined) fail(`told RunEnded (${String(status)}) for run ${runId}, which has no record`)
      else if (record.status !== status) {
        fail(`told RunEnded (${String(status)}) for run ${runId}, recorded ${record.status}`)
      }
    }
    if (invoke.op === "cancel" && complete.ok && record?.status !== "cancelled") {
      fail(
        `told cancelled, run ${runId} is stored ${
          record?.status ?? (info?.active ? `unfinished (${info.active.status})` : "nowhere")
        }`
      )
    }
    // (a plain run of another process is not seen by the queue: its commit may come first, as "Busy sessions" says)
    const plainCommitted = (sessionId: string | undefined, from: number, to: number) =>
      effects.some((e) =>
        e.sessionId === sessionId && e.step === "c" && e.phase === "end" && e.t >= from && e.t <= to &&
        !isQueued(runs.get(e.runId)!) && !isTracked(runs.get(e.runId)!)
      )
    if (
      isSend(invoke) && optionsOf(invoke).onBusy === "enqueue" && !complete.ok &&
      complete.error?._tag === "SessionConflict" &&
      !plainCommitted(info?.sessionId, invoke.t, complete.t)
    ) {
      fail(`a run sent with onBusy "enqueue" was refused with SessionConflict (${JSON.stringify(complete.error)})`)
    }
  }

  // ---------------------------------------------------------------------------
  // state
  // ---------------------------------------------------------------------------

  const sessions = new Map(snapshot.sessions.map((s) => [s.sessionId, s]))
  const appliedOf = (state: unknown): ReadonlyArray<string> =>
    typeof state === "object" && state !== null && "applied" in state && Array.isArray(state.applied)
      ? state.applied
      : []
  for (const session of snapshot.sessions) {
    if (session.sessionId.startsWith("fork-")) continue
    const applied = appliedOf(session.state)
    const completed = new Set(session.runs.filter((r) => r.status === "completed").map((r) => r.runId))
    const counts = new Map<string, number>()
    for (const id of applied) counts.set(id, (counts.get(id) ?? 0) + 1)
    for (const [id, n] of counts) {
      if (n > 1) {
        violate("state", `session ${session.sessionId}: run ${id} applied ${n} times`, [id], [session.sessionId])
      }
      if (!completed.has(id)) {
        const info = runs.get(id)
        violate(
          "state",
          `session ${session.sessionId}: run ${id} is applied, but recorded ${
            info === undefined ? "nowhere" : recordOf(info)?.status ?? "nowhere"
          }`,
          [id],
          [session.sessionId]
        )
      }
    }
    for (const id of completed) {
      if (!counts.has(id)) {
        violate("state", `session ${session.sessionId}: completed run ${id} is not applied`, [id], [session.sessionId])
      }
    }
  }
  for (const complete of completes.values()) {
    const invoke = invokes.get(complete.id)
    if (invoke?.op !== "fork" || !complete.ok) continue
    const forked = sessions.get(String((complete.value as { sessionId: string }).sessionId))
    const source = sessions.get(String(invoke.args.sessionId))
    if (forked === undefined || source === undefined) continue
    const mine = appliedOf(forked.state)
    const theirs = appliedOf(source.state)
    if (mine.some((id, i) => theirs[i] !== id)) {
      violate(
        "state",
        `fork ${forked.sessionId} of ${source.sessionId}: its state is not a prefix of the session's`,
        [],
        [forked.sessionId, source.sessionId]
      )
    }
  }

  // ---------------------------------------------------------------------------
  // connections
  // ---------------------------------------------------------------------------

  const allowed = config.maxConnections + 1
  const worst = new Map<string, { n: number; t: number }>()
  for (const line of lines) {
    if (line.type !== "conns") continue
    for (const [app, n] of Object.entries(line.counts)) {
      if (app === "chaos-lock" || app === "chaos-controller") continue
      if (n > allowed && n > (worst.get(app)?.n ?? 0)) worst.set(app, { n, t: line.t })
    }
  }
  for (const [app, { n }] of worst) {
    violate(
      "connections",
      `${app} held ${n} connections (its pool allows ${config.maxConnections}, and one LISTEN connection)`,
      [],
      []
    )
  }

  // ---------------------------------------------------------------------------
  // the shortest history of each violation
  // ---------------------------------------------------------------------------

  const histories = violations.map((v) => historyOf(v, lines, runs))
  return {
    violations,
    counts: {
      operations: invokes.size,
      faults: faults.filter((f) => f.kind !== "cont" && f.kind !== "unlock").length,
      runs: runs.size,
      effects: effects.length
    },
    histories
  }
}

/**
 * The lines of the runs and sessions a violation names, and the faults of the
 * processes that ran them, in time order.
 */
const historyOf = (
  violation: Violation,
  lines: ReadonlyArray<Line>,
  runs: ReadonlyMap<string, RunInfo>
): ReadonlyArray<string> => {
  const ids = new Set(violation.runIds)
  const sessions = new Set(violation.sessions)
  const tokens = new Set<string>()
  const pids = new Set<number>()
  for (const id of ids) {
    const info = runs.get(id)
    for (const s of info?.sentBy ?? []) tokens.add(s.id)
    for (const e of info?.effects ?? []) pids.add(e.pid)
    for (const s of info?.sentBy ?? []) pids.add(s.pid)
  }
  const mentions = (line: Invoke | Complete) =>
    tokens.has(line.id) || ids.has(String(line.type === "invoke" ? line.args.runId ?? "" : "")) ||
    ids.has(runIdIn(line.type === "complete" ? line.value ?? line.error : undefined) ?? "")
  const invokesMentioning = new Set<string>()
  for (const line of lines) if (line.type === "invoke" && mentions(line)) invokesMentioning.add(line.id)
  const own = lines.filter((line) =>
    (line.type === "invoke" || line.type === "complete")
      ? invokesMentioning.has(line.id) || mentions(line)
      : line.type === "effect" && ids.has(line.runId)
  )
  // the faults and processes of the span the runs' own lines cover (and a lease before it)
  const from = (own[0]?.t ?? 0) - 2000
  const to = own.at(-1)?.t ?? Infinity
  /** within a second and a half of one of the runs' own lines */
  const near = (t: number) => own.some((line) => Math.abs(line.t - t) <= 1500)
  const chosen = lines.filter((line) => {
    if (line.type !== "invoke" && line.type !== "complete" && line.type !== "effect" && line.t < from) return false
    // locks are everyone's: only those within the span; a process's own faults and its end, until its first death
    if (line.type === "fault" && (line.kind === "lock" || line.kind === "unlock") && line.t > to) return false
    switch (line.type) {
      case "invoke":
      case "complete":
        return invokesMentioning.has(line.id) || mentions(line)
      case "effect":
        // and the other runs of its sessions meanwhile: what it met
        return ids.has(line.runId) || (sessions.has(line.sessionId) && near(line.t))
      case "fault":
        return (line.pid !== undefined && pids.has(line.pid)) || line.kind === "lock" || line.kind === "unlock"
      case "proc":
        return pids.has(line.pid)
      default:
        return false
    }
  })
  const t0 = chosen[0]?.t ?? 0
  const shown = chosen.map((line) => `+${((line.t - t0) / 1000).toFixed(3)}s ${describe(line)}`)
  return shown.length > 80 ? [...shown.slice(0, 40), `… ${shown.length - 80} lines …`, ...shown.slice(-40)] : shown
}

const describe = (line: Line): string => {
  switch (line.type) {
    case "invoke":
      return `${line.worker}[${line.pid}] → ${line.op} ${line.id} ${JSON.stringify(line.args)}`
    case "complete":
      return `${line.worker}[${line.pid}] ← ${line.op} ${line.id} ${
        line.ok ? `ok ${JSON.stringify(line.value)}` : `error ${JSON.stringify(line.error)}`
      }`
    case "effect":
      return `  step [${line.pid}] ${line.wf} ${line.runId} ${line.sessionId} ${line.step} ${line.phase}${
        line.value === undefined ? "" : ` ${JSON.stringify(line.value)}`
      }`
    case "fault":
      return `FAULT ${line.kind} ${line.target}${line.pid === undefined ? "" : `[${line.pid}]`}${
        line.detail === undefined ? "" : ` ${line.detail}`
      }`
    case "proc":
      return `proc ${line.name}[${line.pid}] ${line.event}${line.code === undefined ? "" : ` (${line.code})`}`
    case "conns":
      return `connections ${JSON.stringify(line.counts)}`
    case "note":
      return `note ${line.text}`
  }
}

/**
 * The report: each violation with the command that replays it — with its
 * shortest history for the first `histories` of each invariant (all with
 * `Infinity`) — then the counts.
 */
export const report = (result: CheckResult, config: ChaosConfig, histories = 3): string => {
  const out: Array<string> = []
  const command = replayCommand(config)
  const shown = new Map<Invariant, number>()
  result.violations.forEach((v, i) => {
    out.push(``, `VIOLATION ${i + 1} [${v.invariant}] seed ${config.seed} (${config.store})`, `  ${v.message}`)
    const n = shown.get(v.invariant) ?? 0
    shown.set(v.invariant, n + 1)
    if (n < histories) {
      out.push(`  history (${v.runIds.join(", ") || v.sessions.join(", ")}):`)
      for (const line of result.histories[i] ?? []) out.push(`    ${line}`)
    } else {
      out.push(`  history: npm run chaos -- --check-only ${config.dir} --all`)
    }
    out.push(`  replay: ${command}`)
  })
  const byInvariant = Object.keys(invariants).map((name) =>
    `${name} ${result.violations.filter((v) => v.invariant === name).length}`
  )
  out.push(
    ``,
    `chaos ${config.store} seed ${config.seed}: ${result.counts.operations} operations, ` +
      `${result.counts.faults} faults, ${result.counts.runs} runs checked, ${result.counts.effects} step effects`,
    `violations: ${result.violations.length} (${byInvariant.join(", ")})`,
    `history: ${config.dir}`
  )
  return out.join("\n")
}
