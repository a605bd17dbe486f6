/**
 * The first phase of an attempt: read the session (from the state cache when
 * it can), and decide whether this run may go on — the session's owner, a
 * paused run holding the session, a claimed run whose session moved on —
 * then prepare the input and the state the steps start from. Carrying on an
 * unfinished run starts here too: which run may be carried on (`unfinished`),
 * and taking it over (`claim`).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as SessionStore from "../../SessionStore.js"
import type { ContinueOptions, RunOptions } from "../../Workflow.js"
import * as WorkflowError from "../../WorkflowError.js"
import { copyJson, deepCopy, deepMerge } from "../json.js"
import * as stateCache from "../store/stateCache.js"
import { type Any, decodeInput, decodeState } from "../workflow/model.js"
import { type Attempt, checkJson, lostRun, type Opened, opened, type Phase, type Restore } from "./model.js"
import { recordFailure } from "./settle.js"

/**
 * Opens an attempt: the session is read and checked, the input decoded, the
 * state the steps start from decoded. A run refused here records its failure
 * on an existing session (never on another user's).
 *
 * @internal
 */
export function* open(attempt: Attempt, restore: Restore): Phase<Opened> {
  const { ids: { runId, sessionId, userId } } = attempt
  const loaded = yield* load(attempt, restore)
  if (Either.isLeft(loaded)) return yield* refuseUnreadable(attempt, loaded.left, restore)
  const { base, cacheKey, firstRunning, firstRuns, hit, stored } = loaded.right
  // another user's session is never written to, not even a run record
  if (Option.isSome(stored)) yield* SessionStore.checkOwner(sessionId, stored.value.userId, userId)
  // a session with a paused run takes no other run (a new session's paused
  // run is not on a session row yet: it is among its first runs)
  const paused = Option.isSome(stored)
    ? stored.value.pausedRunId
    : firstRuns.find((run) => run.status === "paused")?.runId
  if (paused !== undefined && paused !== runId) {
    const refused = new WorkflowError.SessionPaused({ sessionId, runId: paused })
    // a run already tracked (the next attempt after a conflict) ends with the refusal
    if (attempt.tracked) {
      const version = Option.match(stored, { onNone: () => 0, onSome: (s) => s.version })
      yield* recordFailure(attempt, Cause.fail(refused), Option.none(), version)
    }
    return yield* Effect.fail(refused)
  }
  const version = Option.match(stored, { onNone: () => 0, onSome: (s) => s.version })
  const busy = yield* busyElsewhere(attempt, stored, [...firstRuns, ...firstRunning])
  if (busy !== undefined) return yield* refuseBusy(attempt, busy, version)
  if (attempt.claimed !== undefined && attempt.claimed.baseVersion !== version) {
    // another run committed to the session since this one started: its journal
    // is stale, so it ends here (recorded with the conflict)
    const conflict = new WorkflowError.SessionConflict({
      sessionId,
      expectedVersion: attempt.claimed.baseVersion,
      actualVersion: version
    })
    // With retries left it is not recorded: the run stays this store's, and its
    // next attempt starts over on the new state (or finds it lost)
    if (attempt.retriesLeft > 0) return yield* Effect.fail(conflict)
    // unless it is no longer this process's run: cancelled (which creates a new
    // session's row, so the session looks moved on) or taken over meanwhile
    const ended = yield* recordFailure(attempt, Cause.fail(conflict), Option.none(), version)
    if (ended === "elsewhere") return yield* lostRun(attempt.store, runId)
    return yield* Effect.fail(conflict)
  }
  const prepared = yield* Effect.exit(restore(prepare(attempt, stored, hit)))
  if (Exit.isFailure(prepared)) {
    // a run that fails before its steps is recorded on an existing session
    // (a new session has no valid state to be created with)
    if (Option.isSome(stored) || attempt.tracked) yield* recordFailure(attempt, prepared.cause, Option.none(), version)
    return yield* Effect.failCause(prepared.cause)
  }
  return opened(attempt, { ...prepared.value, stored, version, cacheKey, base })
}

/**
 * The run that makes a fresh run with `onBusy: "reject"` refuse before any of
 * its work: another run of the session running in another process under a
 * live lease (an abandoned one does not count: recovery carries it on, and
 * the version check orders the two). Runs of this store wait for each other.
 */
const busyElsewhere = (
  attempt: Attempt,
  stored: Option.Option<SessionStore.StoredSession>,
  firstRuns: ReadonlyArray<SessionStore.RunningRun & { readonly status?: string }>
) =>
  Effect.gen(function*() {
    const { options, start, store } = attempt
    if (start._tag !== "Fresh" || (options?.onBusy ?? "reject") !== "reject") return undefined
    const running = Option.isSome(stored)
      ? stored.value.running ?? []
      : firstRuns.filter((run) => run.status === undefined || run.status === "running")
    if (running.length === 0) return undefined
    const now = yield* Clock.currentTimeMillis
    return running.find((run) =>
      run.runId !== attempt.ids.runId && run.owner !== store.owner && run.leaseExpiresAt >= now &&
      !SessionStore.ownerGone(run.owner)
    )
  })

/**
 * Refuses a run with `onBusy: "reject"` at a busy session (`SessionBusy`): a
 * run already tracked with no retries left ends with the refusal (recorded);
 * with retries left it stays this store's, for its next attempt.
 *
 * @internal
 */
export const refuseBusy = (attempt: Attempt, busy: SessionStore.RunningRun, version: number) =>
  Effect.gen(function*() {
    const { sessionId } = attempt.ids
    const refused = new WorkflowError.SessionBusy({ sessionId, runId: busy.runId, leaseExpiresAt: busy.leaseExpiresAt })
    if (attempt.tracked && attempt.retriesLeft === 0) {
      yield* recordFailure(attempt, Cause.fail(refused), Option.none(), version)
    }
    return yield* Effect.fail(refused)
  })

/**
 * The run of the session's queue that took its turn while a fresh run with
 * `onBusy: "reject"` or `"interrupt"` registered (after it read the session,
 * or interrupted the runs it found):
 * the registration and the turn are ordered by the store (one write lock,
 * or the session's queue lock), so one of the two sees the other — the
 * queue's run waits for a run registered before its turn, and a run
 * registered after the turn is refused here (`SessionBusy`), before any of
 * its work.
 *
 * @internal
 */
export const turnTakenMeanwhile = (attempt: Attempt) =>
  Effect.gen(function*() {
    const { options, start, store } = attempt
    if (start._tag !== "Fresh" || (options?.onBusy ?? "reject") === "enqueue") return undefined
    const found = yield* store.findSession(attempt.ids.sessionId, { state: false })
    const running = found._tag === "Stored" ? found.session.running ?? [] : found.running ?? []
    const now = yield* Clock.currentTimeMillis
    return running.find((run) =>
      run.queued === true && run.runId !== attempt.ids.runId && run.owner !== store.owner &&
      run.leaseExpiresAt >= now && !SessionStore.ownerGone(run.owner)
    )
  })

interface Loaded {
  readonly stored: Option.Option<SessionStore.StoredSession>
  /** a new session's unfinished runs (its first runs), oldest first */
  readonly firstRuns: ReadonlyArray<SessionStore.ActiveRun>
  /** a new session's run of its queue that has its turn, if any */
  readonly firstRunning: ReadonlyArray<SessionStore.RunningRun>
  readonly cacheKey: stateCache.Key | undefined
  readonly base: { readonly state: unknown } | undefined
  /** whether the state is the cached one (checked and encoded when it was committed) */
  readonly hit: boolean
}

/**
 * Reads the session. A plain run (fresh, untracked, no state patch) may start
 * from the state this store's last run of the session committed, if the store
 * still has that version; the entry is out of the cache while this run runs.
 */
type LoadError = Effect.Effect.Error<ReturnType<SessionStore.Service["findSession"]>>

function* load(attempt: Attempt, restore: Restore): Phase<Either.Either<Loaded, LoadError>> {
  const { self, start, store, options } = attempt
  const { sessionId } = attempt.ids
  const cacheKey = start._tag === "Fresh" && !start.tracked && options?.sessionState === undefined &&
      !(options?.overwriteDbSessionState ?? self.overwriteDbSessionState)
    ? stateCache.keyOf(self.state?.schema, self.persist === "changes")
    : undefined
  const cached = cacheKey === undefined ? undefined : stateCache.take(store, sessionId, cacheKey)
  // one read: the session, or a new session's first runs (for the paused one among them)
  const loaded = yield* Effect.either(restore(
    store.findSession(sessionId, cached === undefined ? undefined : { knownVersion: cached.version })
  ))
  const found = Either.isRight(loaded) && loaded.right._tag === "Stored" ? loaded.right.session : undefined
  const read = (session: SessionStore.SessionFound): Loaded =>
    session._tag === "Stored"
      ? { stored: Option.some(session.session), firstRuns: [], firstRunning: [], cacheKey, base: undefined, hit: false }
      : {
        stored: Option.none(),
        firstRuns: session.runs,
        firstRunning: session.running ?? [],
        cacheKey,
        base: undefined,
        hit: false
      }
  if (cached === undefined || found?.unchanged !== true) return Either.map(loaded, read)
  if (!stateCache.matches(cached, found)) {
    return Either.map(yield* Effect.either(restore(store.findSession(sessionId))), read)
  }
  // the untyped state is not encoded, and a frozen one cannot be changed in
  // place: the run may have the cached state itself
  const base = self.state !== undefined || cached.frozen ? { state: cached.state } : undefined
  const state = self.state === undefined || cached.frozen ? cached.state : copyJson(cached.state)
  return Either.right({
    stored: Option.some({ ...found, state, unchanged: undefined }),
    firstRuns: [],
    firstRunning: [],
    cacheKey,
    base,
    hit: true
  })
}

/** A session that cannot be read: a corrupt stored state is recorded (for its owner), as the session exists. */
function* refuseUnreadable(attempt: Attempt, error: LoadError, restore: Restore): Phase<never> {
  const { sessionId, userId } = attempt.ids
  if (error._tag === "StateDecodeError") {
    const info = yield* Effect.option(restore(attempt.store.info(sessionId)))
    if (Option.isSome(info) && Option.isSome(info.value)) {
      yield* SessionStore.checkOwner(sessionId, info.value.value.userId, userId)
      yield* recordFailure(attempt, Cause.fail(error), Option.none(), info.value.value.version)
    }
  }
  return yield* Effect.fail(error)
}

/**
 * The unfinished run `runId` of `self`, if this caller may carry it on (a
 * `continue` only a paused one).
 *
 * @internal
 */
export const unfinished = (self: Any, runId: string, options: ContinueOptions | undefined, answering: boolean) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const found = yield* store.getRun(runId)
    if (Option.isNone(found)) {
      return yield* new WorkflowError.RunNotFound({ runId, description: "no unfinished run has this id" })
    }
    if (found.value._tag === "Recorded") {
      const record = found.value.record
      if (record.workflowName !== self.name) {
        return yield* new WorkflowError.RunNotFound({
          runId,
          description: `the run belongs to workflow '${record.workflowName}'`
        })
      }
      if (record.userId !== undefined) {
        yield* SessionStore.checkOwner(record.sessionId, record.userId, options?.userId ?? self.userId)
      }
      return yield* SessionStore.runEnded(record)
    }
    const active = found.value.run
    if (active.workflowName !== self.name) {
      return yield* new WorkflowError.RunNotFound({
        runId,
        description: `the run belongs to workflow '${active.workflowName}'`
      })
    }
    if (active.userId !== undefined) {
      yield* SessionStore.checkOwner(active.sessionId, active.userId, options?.userId ?? self.userId)
    }
    const named = options?.pause
    // a continue of a run that a gone process was continuing carries it on from that pause
    const waits = SessionStore.awaitsAnswer(active)
    if (answering && named !== undefined && (!waits || active.pause?.key !== named)) {
      return yield* new WorkflowError.PauseMismatch({
        runId,
        expected: named,
        ...(active.status === "paused" && active.pause !== undefined ? { current: active.pause.key } : {})
      })
    }
    if (answering && !waits) {
      return yield* new WorkflowError.RunNotFound({ runId, description: "the run is not paused" })
    }
    return active
  })

/**
 * Whether a running run's owner is a gone process of this host (see
 * `SessionStore.ownerGone`): its run is taken over at once, whatever its lease.
 *
 * @internal
 */
export const continuedByGone = (run: SessionStore.ActiveRun): boolean =>
  run.status === "running" && SessionStore.ownerGone(run.owner)

/**
 * Claims an unfinished run for this store (one of several concurrent claims
 * wins), with a fresh lease; a continue only at the pause it answers; with
 * `from`, a running run still owned by that owner, which is gone, whatever
 * its lease. A run that ended meanwhile (cancelled) is `RunEnded`.
 *
 * @internal
 */
export const claim = (
  store: SessionStore.Service,
  runId: string,
  leaseMillis: number,
  pause: string | undefined,
  from?: string
) =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (now) =>
      store.claimRun(runId, { owner: store.owner, now, leaseExpiresAt: now + leaseMillis, pause, from }).pipe(
        Effect.catchTag("RunNotFound", (error) =>
          Effect.flatMap(store.getRun(runId), (found) =>
            Effect.fail(
              Option.isSome(found) && found.value._tag === "Recorded"
                ? SessionStore.runEnded(found.value.record)
                : error
            )))
      )
  )

/** The decoded input and the state the steps start from (a claimed run's from its journal). */
const prepare = (attempt: Attempt, stored: Option.Option<SessionStore.StoredSession>, hit: boolean) =>
  Effect.gen(function*() {
    const { claimed, inputProblem, options, self } = attempt
    const { sessionId } = attempt.ids
    if (inputProblem !== undefined) {
      return yield* new WorkflowError.NotSerializable({ sessionId, what: "input", ...inputProblem })
    }
    const decodedInput = yield* decodeInput(self, attempt.input)
    const encodedInitial = claimed === undefined
      ? yield* initialState(self, sessionId, stored, options)
      : Option.isSome(stored)
      ? stored.value.state
      : claimed.initialState ?? self.sessionState
    const encodedStart = claimed?.journal?.state ?? encodedInitial
    // a cached state was checked and encoded (so validated) when it was committed
    if (hit) return { decodedInput, encodedInitial, encodedStart, initial: encodedStart }
    if (self.state === undefined) yield* checkJson(sessionId, "state", encodedStart)
    const initial = yield* decodeState(self, sessionId, encodedStart)
    return { decodedInput, encodedInitial, encodedStart, initial }
  })

/**
 * The state a run starts from, in encoded form: for a new session a copy of
 * the seed with the run's `sessionState` merged over it (or replacing it, with
 * `overwriteDbSessionState`); for an existing session its stored state with
 * the patch merged over it (or the patch, else the seed, replacing it). A
 * stored state is checked before a patch is merged over it, so a patch never
 * hides a stored state that does not fit.
 */
const initialState = (
  self: Any,
  sessionId: string,
  stored: Option.Option<SessionStore.StoredSession>,
  options: RunOptions<unknown> | undefined
): Effect.Effect<unknown, WorkflowError.StateDecodeError> => {
  const overwrite = options?.overwriteDbSessionState ?? self.overwriteDbSessionState
  const patch = options?.sessionState
  if (Option.isNone(stored)) {
    const seed = deepCopy(self.sessionState)
    return Effect.succeed(patch === undefined ? seed : overwrite ? deepCopy(patch) : deepMerge(seed, deepCopy(patch)))
  }
  if (overwrite) return Effect.succeed(deepCopy(patch ?? self.sessionState))
  if (patch === undefined) return Effect.succeed(stored.value.state)
  return Effect.as(decodeState(self, sessionId, stored.value.state), deepMerge(stored.value.state, deepCopy(patch)))
}
