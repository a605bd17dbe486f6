/**
 * The ids a store is given, checked where every store passes
 * (`SessionStore.make`), so that every store answers the same: a session or
 * run id that no store could give back exactly (`ids.problem`: empty, longer
 * than 256 characters, a control character such as NUL, a lone surrogate) is
 * refused by a write or a watch with `SessionStoreError` (a run that starts
 * under a bad run id with `InvalidRunId`); and since no store holds one, a
 * read finds nothing. A listing's cursor naming such an id is refused too,
 * and its `limit` made a whole number (0: an empty page).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type * as SessionStore from "../../SessionStore.js"
import * as WorkflowError from "../../WorkflowError.js"
import * as ids from "../ids.js"

/** The first id of `checked` that no store takes, described; undefined when all are fine. */
const refusal = (checked: ReadonlyArray<readonly ["session" | "run", string | undefined]>): string | undefined => {
  for (const [what, id] of checked) {
    if (id === undefined) continue
    const problem = ids.problem(id)
    if (problem !== undefined) return ids.describe(what, id, problem)
  }
  return undefined
}

/** A schedule's workflow name and name follow the rule of ids: else what is wrong. */
const scheduleRefusal = (workflowName: string, name: string): string | undefined => {
  for (const [what, id] of [["workflow name", workflowName], ["schedule name", name]] as const) {
    const problem = ids.problem(id)
    if (problem !== undefined) return ids.describe(what, id, problem).replace(" id", "")
  }
  return undefined
}

const refused = (method: string, description: string) => new WorkflowError.SessionStoreError({ method, description })

/**
 * A listing's `limit` as every backend gets it: a whole number from 1 up
 * (0: nothing to read), undefined for no limit.
 */
const pageLimit = (limit: number | undefined): number | undefined =>
  limit === undefined || Number.isNaN(limit) || limit === Infinity ? undefined : Math.max(0, Math.ceil(limit))

/** @internal */
export const guard = (backend: SessionStore.Backend): SessionStore.Backend => {
  const bad = (id: string) => ids.problem(id) !== undefined
  const noRun = (runId: string) =>
    new WorkflowError.RunNotFound({ runId, description: "no unfinished run has this id" })
  return {
    ...backend,
    load: (sessionId, options) => bad(sessionId) ? Effect.succeed(Option.none()) : backend.load(sessionId, options),
    info: (sessionId) => bad(sessionId) ? Effect.succeed(Option.none()) : backend.info(sessionId),
    findSession: (sessionId, options) =>
      bad(sessionId) ? Effect.succeed({ _tag: "New", runs: [] }) : backend.findSession(sessionId, options),
    runs: (sessionId, options) => bad(sessionId) ? Effect.succeed([]) : backend.runs(sessionId, options),
    remove: (sessionId) => bad(sessionId) ? Effect.succeed(false) : backend.remove(sessionId),
    setName: (sessionId, name) =>
      bad(sessionId) ? Effect.fail(new WorkflowError.SessionNotFound({ sessionId })) : backend.setName(sessionId, name),
    versions: (sessionId) => bad(sessionId) ? Effect.succeed([]) : backend.versions(sessionId),
    loadVersion: (sessionId, version) =>
      bad(sessionId) ? Effect.succeed(Option.none()) : backend.loadVersion(sessionId, version),
    fork: (request) => {
      if (bad(request.sessionId)) {
        return Effect.fail(new WorkflowError.SessionNotFound({ sessionId: request.sessionId }))
      }
      const description = refusal([["session", request.newSessionId]])
      return description === undefined ? backend.fork(request) : Effect.fail(refused("fork", description))
    },
    getRun: (runId) => bad(runId) ? Effect.succeed(Option.none()) : backend.getRun(runId),
    list: (filter) => {
      const limit = pageLimit(filter.limit)
      return limit === 0
        ? Effect.succeed({ sessions: [], broken: [] })
        : filter.after !== undefined && bad(filter.after.sessionId)
        ? Effect.fail(refused("list", "the listing's cursor names a session id no store takes"))
        : backend.list({ ...filter, limit })
    },
    listRuns: (filter) => {
      const limit = pageLimit(filter.limit)
      return limit === 0 || (filter.sessionId !== undefined && bad(filter.sessionId))
        ? Effect.succeed({ runs: [] })
        : filter.after !== undefined && bad(filter.after.runId)
        ? Effect.fail(refused("listRuns", "the listing's cursor names a run id no store takes"))
        : backend.listRuns({ ...filter, limit })
    },
    activeRuns: (filter) =>
      filter.sessionId !== undefined && bad(filter.sessionId) ? Effect.succeed([]) : backend.activeRuns(filter),
    updateRun: (runId, owner, update) =>
      bad(runId)
        ? Effect.fail(new WorkflowError.RunLost({ runId, description: "no unfinished run has this id" }))
        : backend.updateRun(runId, owner, update),
    claimRun: (runId, claim) => bad(runId) ? Effect.fail(noRun(runId)) : backend.claimRun(runId, claim),
    addSignal: (runId, name, value) => bad(runId) ? Effect.fail(noRun(runId)) : backend.addSignal(runId, name, value),
    signals: (runId, options) => bad(runId) ? Effect.succeed([]) : backend.signals(runId, options),
    endRun: (runId, record, owner) => bad(runId) ? Effect.fail(noRun(runId)) : backend.endRun(runId, record, owner),
    commit: (commit) => {
      const description = refusal([["session", commit.sessionId], ["run", commit.run?.runId], [
        "run",
        commit.ends?.runId
      ]])
      return description === undefined ? backend.commit(commit) : Effect.fail(refused("commit", description))
    },
    startRun: (run) => {
      const problem = ids.problem(run.runId)
      if (problem !== undefined) {
        return Effect.fail(new WorkflowError.InvalidRunId({ runId: run.runId, reason: problem }))
      }
      const description = refusal([["session", run.sessionId]])
      return description === undefined ? backend.startRun(run) : Effect.fail(refused("startRun", description))
    },
    readEvents: (runId, options) => bad(runId) ? Effect.succeed([]) : backend.readEvents(runId, options),
    appendEvents: (runId, events, retention) => {
      const description = refusal([["run", runId], ...events.map((event) => ["session", event.sessionId] as const)])
      if (description !== undefined) return Effect.fail(refused("appendEvents", description))
      const stranger = events.find((event) => event.runId !== runId)
      return stranger === undefined
        ? backend.appendEvents(runId, events, retention)
        : Effect.fail(
          refused("appendEvents", `event ${stranger.seq} is of run '${stranger.runId}', not of run '${runId}'`)
        )
    },
    watchEvents: (runId, options) => {
      const description = refusal([["run", runId]])
      return description === undefined
        ? backend.watchEvents(runId, options)
        : Stream.fail(refused("watchEvents", description))
    },
    enqueueRun: (run) => {
      const description = refusal([["run", run.runId], ["session", run.sessionId]])
      return description === undefined ? backend.enqueueRun(run) : Effect.fail(refused("enqueueRun", description))
    },
    takeQueueTurn: (sessionId, runId, turn) =>
      bad(sessionId) || bad(runId) ? Effect.succeed("lost" as const) : backend.takeQueueTurn(sessionId, runId, turn),
    leaveQueue: (sessionId, runId, owner, ended) =>
      bad(sessionId) || bad(runId) ? Effect.succeed(false) : backend.leaveQueue(sessionId, runId, owner, ended),
    adoptQueued: (sessionId, runId, adopt) =>
      bad(sessionId) || bad(runId) ? Effect.succeed(Option.none()) : backend.adoptQueued(sessionId, runId, adopt),
    queuedRuns: (filter) =>
      (filter.sessionId !== undefined && bad(filter.sessionId)) || (filter.runId !== undefined && bad(filter.runId))
        ? Effect.succeed([])
        : backend.queuedRuns(filter),
    watchQueue: (sessionId, options) => {
      const description = refusal([["session", sessionId]])
      return description === undefined
        ? backend.watchQueue(sessionId, options)
        : Stream.fail(refused("watchQueue", description))
    },
    putSchedule: (schedule) => {
      const description = scheduleRefusal(schedule.workflowName, schedule.name)
      return description === undefined
        ? backend.putSchedule(schedule)
        : Effect.fail(refused("putSchedule", description))
    },
    claimScheduleTick: (workflowName, name, claim) =>
      scheduleRefusal(workflowName, name) === undefined
        ? backend.claimScheduleTick(workflowName, name, claim)
        : Effect.succeed(false),
    schedules: (filter) =>
      filter.workflowName !== undefined && bad(filter.workflowName) ? Effect.succeed([]) : backend.schedules(filter),
    watch: (sessionId, options) => {
      const description = refusal([["session", sessionId]])
      return description === undefined ? backend.watch(sessionId, options) : Stream.fail(refused("watch", description))
    }
  }
}
