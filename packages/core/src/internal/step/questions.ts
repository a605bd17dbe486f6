/**
 * The questions that pause a run: asked by `Step.pause` and by agents, keyed
 * so that a step that runs again after `Workflow.continue` finds its answers,
 * with the run's state for code that carries on from a question.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as events from "../events.js"
import type { UsageCounter } from "../usage.js"

/**
 * An answer to a question that paused a run, given to `Workflow.continue`:
 * the response (encoded) and the asking code's checkpoint.
 *
 * @internal
 */
export interface Answer {
  readonly response: unknown
  readonly checkpoint: unknown
  /** the question (or wait) timed out: no response was given */
  readonly timedOut?: true | undefined
  /** the signal that answered a wait (its `seq`), which the run has now taken */
  readonly seq?: number | undefined
}

/**
 * Who is told of each signal a run's waits take while it runs in this fiber
 * (see `Workflow.signal`: `Delivered` only for a signal a wait took), if
 * anyone: set around the carrying-on of a run (its fibers inherit it).
 *
 * @internal
 */
export const currentSignalListener: FiberRef.FiberRef<((seq: number) => void) | undefined> = FiberRef.unsafeMake<
  ((seq: number) => void) | undefined
>(undefined)

/**
 * What a pause waits for besides a person's answer, and when it wakes by
 * itself (see `SessionStore.Pause`).
 *
 * @internal
 */
export interface Wait {
  readonly kind: "question" | "sleep" | "signal"
  readonly signal?: string | undefined
  readonly wakeAt?: number | undefined
  readonly timeoutAt?: number | undefined
}

/**
 * The signals of the run a step waits in: the ones stored for it by name,
 * and the ones it has taken (by `seq`), which no other wait takes again.
 *
 * @internal
 */
export interface Signals {
  readonly taken: Set<number>
  readonly stored: (
    name: string
  ) => Effect.Effect<ReadonlyArray<{ readonly seq: number; readonly value: unknown }>, unknown>
}

/**
 * The questions of the current top-level step: how many times each name has
 * asked (so a question's key is stable when the step runs again), how many
 * times each agent started a run (so an agent run finds its own answers when
 * the step runs again), and the answers given so far.
 *
 * @internal
 */
export interface Questions {
  topLevel: number
  readonly counts: Map<string, number>
  readonly runs: Map<string, number>
  answers: Record<string, Answer>
  /** the run's state, for code that carries on from a question where it stood */
  readonly state: RunState | undefined
  /** the run's token counter, which its agents' model calls add to */
  readonly usage: UsageCounter | undefined
  /** the run's signals (none outside of a run, or for a run that has no unfinished-run entry yet) */
  readonly signals: Signals | undefined
}

/**
 * The state of a run in its encoded (JSON) form: saved with a question and
 * restored when the asking code carries on from it.
 *
 * @internal
 */
export interface RunState {
  readonly save: Effect.Effect<unknown, unknown>
  readonly restore: (encoded: unknown) => Effect.Effect<void, unknown>
}

/** @internal */
export const makeQuestions = (
  topLevel: number,
  answers: Record<string, Answer>,
  state?: RunState,
  usage?: UsageCounter,
  signals?: Signals
): Questions => ({
  topLevel,
  counts: new Map(),
  runs: new Map(),
  answers,
  state,
  usage,
  signals
})

/**
 * Moves the questions on to top-level step `next`: no question asked there
 * yet, none answered.
 *
 * @internal
 */
export const advanceQuestions = (questions: Questions, next: number): void => {
  questions.topLevel = next
  questions.counts.clear()
  questions.runs.clear()
  questions.answers = {}
}

/**
 * The questions of the workflow run the current fiber works for (none
 * outside of workflow runs): agents ask through it.
 *
 * @internal
 */
export const currentQuestions: FiberRef.FiberRef<Questions | undefined> = FiberRef.unsafeMake<Questions | undefined>(
  undefined
)

/**
 * Counts one more run of `name` in the current top-level step and returns
 * its number (1, 2, …): the same for the same run when the step runs again.
 *
 * @internal
 */
export const startRun = (questions: Questions, name: string): number => {
  const n = (questions.runs.get(name) ?? 0) + 1
  questions.runs.set(name, n)
  return n
}

/**
 * The last of the answered questions that follow the ones `name` asked so
 * far and that `belongs` claims (as one run of an agent asks them one after
 * the other), skipping them: the next question `name` asks comes after it.
 *
 * @internal
 */
export const latestAnswer = (
  questions: Questions,
  name: string,
  belongs: (answer: Answer) => boolean
): Answer | undefined => {
  let n = questions.counts.get(name) ?? 0
  let latest: Answer | undefined
  while (true) {
    const answer = questions.answers[`${questions.topLevel}:${name}#${n + 1}`]
    if (answer === undefined || !belongs(answer)) break
    latest = answer
    n++
  }
  questions.counts.set(name, n)
  return latest
}

/**
 * Raised (as a defect, so it is in no step's error type and no error policy
 * catches it) by a step that asks a question no answer was given to yet: the
 * runner pauses the run.
 *
 * @internal
 */
export class PauseSignal {
  readonly _tag = "PauseSignal"
  constructor(
    readonly key: string,
    readonly path: ReadonlyArray<string>,
    readonly payload: unknown,
    readonly checkpoint: unknown,
    readonly wait: Wait | undefined
  ) {}
}

/** The pause a cause carries, if any. @internal */
export const pauseOf = (cause: Cause.Cause<unknown>): PauseSignal | undefined => {
  for (const defect of Cause.defects(cause)) if (defect instanceof PauseSignal) return defect
  return undefined
}

/**
 * Asks a question: the answer given to it when the run was continued, else
 * the run pauses (with `payload`, and `checkpoint` for the asking code to
 * continue from). A question's key is its name and how many times that name
 * asked before in the current top-level step, so it is the same when the step
 * runs again after `Workflow.continue`.
 *
 * A wait for a signal (`wait.kind` `"signal"`) first takes the oldest signal
 * of that name stored for the run and not taken yet, if there is one: it is
 * the answer (kept with the step's answers, so the step finds it again when
 * it runs again).
 *
 * @internal
 */
export const ask = (
  questions: Questions,
  name: string,
  payload: unknown,
  checkpoint?: unknown,
  wait?: Wait
): Effect.Effect<Answer> =>
  Effect.suspend(() => {
    const n = (questions.counts.get(name) ?? 0) + 1
    questions.counts.set(name, n)
    const key = `${questions.topLevel}:${name}#${n}`
    const answer = questions.answers[key]
    if (answer !== undefined) {
      if (answer.seq !== undefined) questions.signals?.taken.add(answer.seq)
      return Effect.succeed(answer)
    }
    const pause = Effect.flatMap(
      Effect.map(FiberRef.get(events.currentPath), (path) => (path.length === 0 ? [name] : path)),
      (path) => Effect.die(new PauseSignal(key, path, payload, checkpoint, wait))
    )
    const signals = questions.signals
    if (wait?.kind !== "signal" || wait.signal === undefined || signals === undefined) return pause
    return Effect.flatMap(Effect.orDie(signals.stored(wait.signal)), (stored) => {
      const first = stored.find((signal) => !signals.taken.has(signal.seq))
      if (first === undefined) return pause
      const taken: Answer = { response: first.value, checkpoint: undefined, seq: first.seq }
      signals.taken.add(first.seq)
      questions.answers = { ...questions.answers, [key]: taken }
      return Effect.as(Effect.map(FiberRef.get(currentSignalListener), (listener) => listener?.(first.seq)), taken)
    })
  })
