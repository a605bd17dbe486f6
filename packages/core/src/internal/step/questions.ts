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
  usage?: UsageCounter
): Questions => ({
  topLevel,
  counts: new Map(),
  runs: new Map(),
  answers,
  state,
  usage
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
    readonly checkpoint: unknown
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
 * @internal
 */
export const ask = (
  questions: Questions,
  name: string,
  payload: unknown,
  checkpoint?: unknown
): Effect.Effect<Answer> =>
  Effect.suspend(() => {
    const n = (questions.counts.get(name) ?? 0) + 1
    questions.counts.set(name, n)
    const key = `${questions.topLevel}:${name}#${n}`
    const answer = questions.answers[key]
    if (answer !== undefined) return Effect.succeed(answer)
    return Effect.flatMap(
      Effect.map(FiberRef.get(events.currentPath), (path) => (path.length === 0 ? [name] : path)),
      (path) => Effect.die(new PauseSignal(key, path, payload, checkpoint))
    )
  })
