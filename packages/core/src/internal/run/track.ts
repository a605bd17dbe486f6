/**
 * The second phase of an attempt: a fresh run that is tracked (it has a run
 * id, or journals its steps) registers its unfinished-run entry, with its
 * lease, before its steps run; the store refuses it when a run with its id
 * runs elsewhere, waits, or ended. The next attempt of a tracked run after a
 * conflict takes its entry over anew (at the session's new version, without
 * a journal), only while it is still this store's.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Option from "effect/Option"
import { registered } from "./background.js"
import { entry } from "./lease.js"
import { type Opened, opened, type Phase, type Restore, runTaken } from "./model.js"
import { refuseBusy, turnTakenMeanwhile } from "./open.js"
import { shapeOf } from "./shape.js"

/** @internal */
export function* track(run: Opened, restore: Restore): Phase<Opened> {
  if (run.start._tag !== "Fresh" || !run.start.tracked) return run
  const now = yield* Clock.currentTimeMillis
  if (run.start.retried === true) {
    // `RunLost` when it was cancelled or taken over since the conflict
    yield* restore(run.store.updateRun(run.ids.runId, run.store.owner, {
      status: "running",
      leaseExpiresAt: now + run.leaseMillis,
      baseVersion: run.version,
      shape: shapeOf(run.self),
      journal: null,
      pause: null
    }))
    return run
  }
  const existing = yield* restore(run.store.startRun(entry(run, "running", now)))
  if (Option.isSome(existing)) return yield* runTaken(run.ids.runId, run.ids.sessionId, existing.value)
  const turn = yield* restore(turnTakenMeanwhile(run))
  if (turn !== undefined) return yield* refuseBusy(run, turn, run.version)
  yield* registered
  return opened(run, run, true)
}
