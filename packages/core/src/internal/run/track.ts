/**
 * The second phase of an attempt: a fresh run that is tracked (it has a run
 * id, or journals its steps) registers its unfinished-run entry, with its
 * lease, before its steps run; the store refuses it when a run with its id
 * runs elsewhere, waits, or completed meanwhile.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Option from "effect/Option"
import { entry } from "./lease.js"
import { type Opened, type Phase, type Restore, runTaken } from "./model.js"

/** @internal */
export function* track(run: Opened, restore: Restore): Phase<Opened> {
  if (run.start._tag !== "Fresh" || !run.start.tracked) return run
  const now = yield* Clock.currentTimeMillis
  const existing = yield* restore(run.store.startRun(entry(run, "running", now)))
  if (Option.isSome(existing)) return yield* runTaken(run.ids.runId, run.ids.sessionId, existing.value)
  return { ...run, tracked: true }
}
