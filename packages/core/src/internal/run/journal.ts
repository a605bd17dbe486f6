/**
 * The journal of a run: where it stands before each top-level step (the
 * step's index and input, the outputs so far, the encoded state, the answers
 * given), written with each step under `durability: "step"`, kept with a
 * pause, and read back when a claimed run carries on.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as SessionStore from "../../SessionStore.js"
import * as StepOutput from "../../StepOutput.js"
import type { Cell } from "../state.js"
import { type ExecContext, outputsAt } from "../step/exec.js"
import { advanceQuestions, type Answer } from "../step/questions.js"
import * as stateCache from "../store/stateCache.js"
import { type UsageCounter, usageField } from "../usage.js"
import { encodeState } from "../workflow/model.js"
import { checkJson, type Opened, outputJson } from "./model.js"

/**
 * The answers a claimed run carries on with: its journal's, and the one given
 * to the question it paused on (just now, or recorded with its pause by a
 * continue whose process is gone).
 *
 * @internal
 */
export const answersOf = (run: Opened): Record<string, Answer> => {
  const answers: Record<string, Answer> = { ...(run.claimed?.journal?.answers as Record<string, Answer> | undefined) }
  const pausedOn = run.claimed?.pause
  const given = run.start._tag === "Claimed" && run.start.answer !== undefined
    ? run.start.answer
    : pausedOn === undefined
    ? undefined
    : recordedAnswer(pausedOn)
  if (pausedOn !== undefined && given !== undefined) answers[pausedOn.key] = given
  return answers
}

/**
 * The answer a continue recorded with a pause as it took the run (see
 * `SessionStore.Pause`), with the pause's checkpoint (not stored twice).
 *
 * @internal
 */
export const recordedAnswer = (pause: SessionStore.Pause): Answer | undefined => {
  const recorded = pause.answer as Omit<Answer, "checkpoint"> | undefined
  return recorded === undefined ? undefined : { ...recorded, checkpoint: pause.checkpoint }
}

/**
 * A pause with `answer` recorded (without its checkpoint, which is the pause's).
 *
 * @internal
 */
export const withAnswer = (
  pause: SessionStore.Pause,
  { checkpoint: _checkpoint, ...answer }: Answer
): SessionStore.Pause => ({
  ...pause,
  answer
})

/**
 * Puts a claimed run's journaled outputs back where its steps left them.
 *
 * @internal
 */
export const restoreOutputs = (exec: ExecContext, journal: SessionStore.Journal | undefined): void => {
  for (const output of journal?.completed ?? []) exec.done.push(StepOutput.make(output))
  for (const [name, json] of Object.entries(journal?.outputs ?? {})) {
    const output = StepOutput.make(json)
    exec.byName.set(name, output)
    exec.recorded.push(output)
  }
}

/** Where a run stands, kept as references (see {@link Journal}). */
interface Position {
  readonly next: number
  readonly previous: unknown
  readonly completed: number
  /** how many outputs `exec.recorded` held (see `outputsAt`) */
  readonly outputs: number
  readonly state: unknown
}

/**
 * Where a run stands before its next top-level step. A run that journals
 * nothing keeps that as references, made into a journal only if the run
 * pauses, when the state's encoded form is its JSON form (treat the state as
 * immutable: a step that mutates it in place and then pauses changes the
 * state it resumes from). Other states are encoded at every step, as a
 * journaled run's are.
 *
 * @internal
 */
export class Journal {
  private point: SessionStore.Journal
  private position: Position | undefined = undefined
  private readonly lazy: boolean
  private readonly writes: boolean

  constructor(
    private readonly run: Opened,
    private readonly exec: ExecContext,
    private readonly cell: Cell<unknown>,
    private readonly usage: UsageCounter
  ) {
    this.writes = run.tracked && run.durability === "step"
    this.lazy = !this.writes && stateCache.isJsonState(run.self.state?.schema)
    this.point = run.claimed?.journal ?? {
      next: 0,
      previous: run.decodedInput,
      completed: [],
      outputs: {},
      state: run.encodedStart,
      answers: {}
    }
  }

  /**
   * The run reached top-level step `next`, which receives `previous` (see
   * `runFrom`): noted, and written with `durability: "step"` — refused
   * (`NotSerializable`) when it would not read back the same.
   */
  readonly at = (next: number, previous: unknown): Effect.Effect<void, unknown> | undefined => {
    const { cell, exec } = this
    if (this.lazy) {
      this.position = { next, previous, completed: exec.done.length, outputs: exec.recorded.length, state: cell.value }
      advanceQuestions(exec.questions, next)
      return undefined
    }
    const { ids: { runId, sessionId }, self, store } = this.run
    return Effect.flatMap(encodeState(self, sessionId, cell.value), (state) => {
      this.point = {
        next,
        previous,
        completed: exec.done.map(outputJson),
        outputs: Object.fromEntries([...exec.byName].map(([name, output]) => [name, outputJson(output)])),
        state,
        answers: {},
        ...usageField(this.usage),
        ...signalsField(exec)
      }
      advanceQuestions(exec.questions, next)
      return this.writes
        ? Effect.zipRight(
          checkJson(sessionId, "journal", this.point),
          store.updateRun(runId, store.owner, { journal: this.point })
        )
        : Effect.void
    })
  }

  /**
   * Where the run stands as it pauses, with the answers given in its current
   * step: refused (`NotSerializable`) when it or the pause would not read
   * back the same.
   */
  paused(pause: SessionStore.Pause): Effect.Effect<SessionStore.Journal, unknown> {
    const { sessionId } = this.run.ids
    return Effect.tap(this.current(), (journal) =>
      Effect.zipRight(
        checkJson(sessionId, "pause", { payload: pause.payload, checkpoint: pause.checkpoint }),
        checkJson(sessionId, "journal", journal)
      ))
  }

  private current(): Effect.Effect<SessionStore.Journal, unknown> {
    const { exec, position } = this
    if (position === undefined) {
      return Effect.succeed({
        ...this.point,
        answers: exec.questions.answers,
        ...usageField(this.usage),
        ...signalsField(exec)
      })
    }
    return Effect.map(encodeState(this.run.self, this.run.ids.sessionId, position.state), (state) => ({
      next: position.next,
      previous: position.previous,
      completed: exec.done.slice(0, position.completed).map(outputJson),
      outputs: Object.fromEntries(
        Object.entries(outputsAt(exec, position.outputs)).map(([name, output]) => [name, outputJson(output)])
      ),
      state,
      answers: exec.questions.answers,
      ...usageField(this.usage),
      ...signalsField(exec)
    }))
  }
}

/** The signals a run has taken so far, for its journal (none: no field). */
const signalsField = (exec: ExecContext): { readonly signals?: ReadonlyArray<number> } => {
  const taken = exec.questions.signals?.taken
  return taken === undefined || taken.size === 0 ? {} : { signals: [...taken].sort((a, b) => a - b) }
}
