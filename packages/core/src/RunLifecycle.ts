/**
 * The run lifecycle, declared once: every state a run can be in, every
 * transition between them, who may make it, and the one conditional write of
 * the store that makes it (keyed by the run, its expected state and its
 * expected owner or pause). The supervisor, the queue, signals, sleeps,
 * cancels, the cluster, the server and the CLI all move runs through these
 * writes; none decides from a read of its own. The core README's lifecycle
 * table is {@link table} (a test checks it).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type * as SessionStore from "./SessionStore.js"

/**
 * The states of a run. `queued`, `running`, `paused`, `sleeping` and
 * `waiting` are unfinished; the others are terminal: a run that ended never
 * runs again under its id.
 *
 * @since 0.1.0
 * @category states
 */
export const State = Schema.Literal(
  "queued",
  "running",
  "paused",
  "sleeping",
  "waiting",
  "completed",
  "failed",
  "cancelled",
  "abandoned"
)

/**
 * @since 0.1.0
 * @category states
 */
export type State = typeof State.Type

/**
 * What each state is, and how the store keeps it.
 *
 * @since 0.1.0
 * @category states
 */
export const states: { readonly [S in State]: { readonly terminal: boolean; readonly stored: string } } = {
  queued: { terminal: false, stored: "an entry of its session's queue, held by its caller's lease" },
  running: { terminal: false, stored: "an unfinished run, `running`: its owner holds a lease (expired: abandoned)" },
  paused: { terminal: false, stored: "an unfinished run, `paused`, no owner, with its question" },
  sleeping: { terminal: false, stored: "an unfinished run, `paused`, no owner, `pause.kind: \"sleep\"`" },
  waiting: { terminal: false, stored: "an unfinished run, `paused`, no owner, `pause.kind: \"signal\"`" },
  completed: { terminal: true, stored: "a run record, committed with the session's state" },
  failed: { terminal: true, stored: "a run record, `error`; nothing committed" },
  cancelled: { terminal: true, stored: "a run record, `cancelled`; nothing committed" },
  abandoned: { terminal: true, stored: "a run record, `abandoned`; nothing committed" }
}

/**
 * Whether a run in this state ended.
 *
 * @since 0.1.0
 * @category states
 */
export const isTerminal = (state: State): boolean => states[state].terminal

/**
 * The transitions of a run.
 *
 * @since 0.1.0
 * @category transitions
 */
export const Transition = Schema.Literal(
  "enqueue",
  "start",
  "takeTurn",
  "drop",
  "adopt",
  "renew",
  "pause",
  "answer",
  "wake",
  "signal",
  "takeOver",
  "release",
  "complete",
  "fail",
  "cancel",
  "abandon",
  "prune"
)

/**
 * @since 0.1.0
 * @category transitions
 */
export type Transition = typeof Transition.Type

/**
 * A transition: the states it leaves (`new`: a run id the store does not
 * know) and enters (`removed`: the record goes), who may make it, the store's
 * one write that makes it and what that write checks, and the race the check
 * closes.
 *
 * @since 0.1.0
 * @category transitions
 */
export interface Rule {
  readonly from: ReadonlyArray<State | "new">
  readonly to: ReadonlyArray<State | "removed">
  readonly by: string
  readonly write: string
  readonly when: string
  readonly prevents: string
}

/**
 * Every transition of a run, in the order of a run's life.
 *
 * @since 0.1.0
 * @category transitions
 */
export const rules: { readonly [T in Transition]: Rule } = {
  enqueue: {
    from: ["new"],
    to: ["queued"],
    by: "the run's caller (`onBusy: \"enqueue\"`)",
    write: "`enqueueRun`",
    when: "the id is not queued, unfinished or recorded",
    prevents: "a retried enqueue queueing the run twice, or taking another run's id"
  },
  start: {
    from: ["new"],
    to: ["running", "paused", "sleeping", "waiting"],
    by: "the run's caller (`run`, `stream`, `start`)",
    write: "`startRun`",
    when: "the id is not unfinished or recorded; with `onBusy: \"reject\"`, no " +
      "other run runs on the session under a live lease",
    prevents: "an ended run running again; a rejected run doing work before it is refused"
  },
  takeTurn: {
    from: ["queued"],
    to: ["running"],
    by: "the queued run's caller",
    write: "`takeQueueTurn`",
    when:
      "no run queued before it is there, and no other unfinished run (running, abandoned or paused) holds the session",
    prevents: "two runs of one session at once (the next of the queue beside a recovered one)"
  },
  drop: {
    from: ["queued"],
    to: ["abandoned"],
    by: "any caller of the session's queue",
    write: "`takeQueueTurn`",
    when: "a queued run (not a background one) whose caller's lease expired, or whose process is gone (this host); " +
      "recorded on its session when that exists",
    prevents: "an acknowledged queued run vanishing without a record"
  },
  adopt: {
    from: ["queued"],
    to: ["queued"],
    by: "`DurableRuns`, the next caller of the session's queue (of the run's workflow)",
    write: "`adoptQueued`",
    when: "a background run (`Workflow.start`) whose caller stopped before its turn: " +
      "still that caller's, its lease expired",
    prevents: "a background run acknowledged to its starter lost with the starter's process"
  },
  renew: {
    from: ["running"],
    to: ["running"],
    by: "its owner",
    write: "`updateRun`",
    when: "the owner is still the run's",
    prevents: "a run taken over or cancelled going on in its old process"
  },
  pause: {
    from: ["running"],
    to: ["paused", "sleeping", "waiting"],
    by: "its owner (`Step.pause`, `Step.sleep`, `Step.waitFor`)",
    write: "`updateRun`",
    when: "the owner is still the run's",
    prevents: "a run taken over or cancelled pausing in its old process"
  },
  answer: {
    from: ["paused"],
    to: ["running"],
    by: "anyone allowed the session (`continue`)",
    write: "`claimRun` with the pause's key",
    when: "the run waits at exactly that pause",
    prevents: "one answer taken twice, or taken by the next question"
  },
  wake: {
    from: ["sleeping", "waiting", "paused"],
    to: ["running"],
    by: "`DurableRuns`, `recover`, `signal` (when due: a sleep's end, a stored signal, a timeout)",
    write: "`claimRun` with the pause's key",
    when: "the run waits at exactly that pause",
    prevents: "a run woken twice; a signal given to a wait that was not waiting for it"
  },
  signal: {
    from: ["running", "paused", "sleeping", "waiting"],
    to: ["running", "paused", "sleeping", "waiting"],
    by: "anyone allowed the session (`signal`)",
    write: "`addSignal`",
    when: "the run is unfinished; `Delivered` only if a wait took that very signal",
    prevents: "a caller told `Delivered` for a signal no wait took"
  },
  takeOver: {
    from: ["running"],
    to: ["running"],
    by: "`DurableRuns`, `recover`, `resume`, a run with its id, the next run of its session's queue, " +
      "a cluster runner's recovery loop (in the entity of the session whose shard it holds)",
    write: "`claimRun`",
    when: "its lease expired before now, or its owner is a gone process of this host",
    prevents: "two owners of one run"
  },
  release: {
    from: ["running"],
    to: ["running"],
    by: "its owner, stopping without ending it (shutdown, a cluster shard handed over)",
    write: "`updateRun` (lease given up)",
    when: "the owner is still the run's",
    prevents: "a run cancelled by a shutdown or a shard handoff instead of carried on"
  },
  complete: {
    from: ["running"],
    to: ["completed"],
    by: "its owner",
    write: "`commit` (ends the run with the session's state)",
    when: "the owner is still the run's, and the session is at the version the run started from",
    prevents: "a lost update; a cancelled or taken-over run committing"
  },
  fail: {
    from: ["running"],
    to: ["failed"],
    by: "its owner",
    write: "`endRun` with the owner",
    when: "the owner is still the run's",
    prevents: "a run failing in a process that no longer owns it"
  },
  cancel: {
    from: ["queued", "running", "paused", "sleeping", "waiting"],
    to: ["cancelled"],
    by: "anyone allowed the session (`cancel`, `onBusy: \"interrupt\"`, a stopped stream, a run timeout)",
    write: "`endRun` (any owner)",
    when: "the run is unfinished",
    prevents: "a cancelled run committing (its commit is refused: `RunLost`)"
  },
  abandon: {
    from: ["running"],
    to: ["abandoned"],
    by: "`DurableRuns` after `maxAttempts`, `recover({ mode: \"abandon\" })`, `prune`",
    write: "`endRun` with the owner last seen",
    when: "the run is still that owner's (nobody took it over meanwhile)",
    prevents: "a run given up while another process carries it on"
  },
  prune: {
    from: ["completed", "failed", "cancelled", "abandoned"],
    to: ["removed"],
    by: "`prune`",
    write: "`prune`",
    when: "the record is older than asked, or beyond the runs kept",
    prevents: "an unfinished run's id reused (only ended runs go)"
  }
}

/**
 * Whether `transition` may leave `from`.
 *
 * @since 0.1.0
 * @category transitions
 */
export const leaves = (transition: Transition, from: State | "new"): boolean => rules[transition].from.includes(from)

/**
 * The state of an unfinished run as the store keeps it.
 *
 * @since 0.1.0
 * @category states
 */
export const stateOfActive = (run: SessionStore.ActiveRun): State =>
  run.status === "running"
    ? "running"
    : run.pause?.kind === "sleep"
    ? "sleeping"
    : run.pause?.kind === "signal"
    ? "waiting"
    : "paused"

/**
 * The state of a recorded run.
 *
 * @since 0.1.0
 * @category states
 */
export const stateOfRecord = (record: SessionStore.RunRecord): State =>
  record.status === "error" ? "failed" : record.status

const code = (text: string): string => text === "new" || text === "removed" ? `(${text})` : text

/**
 * The transitions as a Markdown table (the core README's).
 *
 * @since 0.1.0
 * @category transitions
 */
export const table = (): string =>
  [
    "| transition | from | to | by | the one write | only when | which prevents |",
    "|---|---|---|---|---|---|---|",
    ...Transition.literals.map((name) => {
      const rule = rules[name]
      return `| \`${name}\` | ${rule.from.map(code).join(", ")} | ${
        rule.to.map(code).join(", ")
      } | ${rule.by} | ${rule.write} | ${rule.when} | ${rule.prevents} |`
    })
  ].join("\n")
