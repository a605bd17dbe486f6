/**
 * The third phase of an attempt: run the workflow's steps from where the run
 * stands, with the run's state and context, journaling between top-level
 * steps and holding the lease; then check and encode what a commit needs.
 * Every outcome of the steps is taken (`Exit`): `settle` decides what it
 * means.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as EffectContext from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as RunContext from "../../RunContext.js"
import * as SessionState from "../../SessionState.js"
import * as SessionStore from "../../SessionStore.js"
import type * as StepOutput from "../../StepOutput.js"
import * as WorkflowError from "../../WorkflowError.js"
import * as WorkflowEvent from "../../WorkflowEvent.js"
import * as boundary from "../boundary.js"
import { changesProblem, storedChanges } from "../json.js"
import * as record from "../record.js"
import { type Cell, fromCell } from "../state.js"
import { type ExecContext, makeExecContext, nextInput, runFrom } from "../step/exec.js"
import { currentQuestions, makeQuestions } from "../step/questions.js"
import * as stateCache from "../store/stateCache.js"
import { UsageCounter } from "../usage.js"
import { decodeState, encodeState } from "../workflow/model.js"
import { currentBackground } from "./background.js"
import { answersOf, Journal, restoreOutputs } from "./journal.js"
import { leased } from "./lease.js"
import { checkJson, type Opened, type Phase, type Restore } from "./model.js"

/** What completed steps leave for the commit. @internal */
export interface Done {
  readonly output: StepOutput.StepOutput
  /** the final state, and its encoded form */
  readonly state: unknown
  readonly encoded: unknown
  /** with `persist: "changes"` on an existing session: what changed */
  readonly changes: ReadonlyArray<WorkflowEvent.StateChange> | undefined
}

/** How the steps ended, with the run's bookkeeping. @internal */
export interface Executed {
  readonly exit: Exit.Exit<Done, unknown>
  readonly exec: ExecContext
  readonly journal: Journal
  /** the tokens the run's model calls used */
  readonly usage: UsageCounter
}

/** @internal */
export function* execute(run: Opened, restore: Restore): Phase<Executed> {
  const { self } = run
  const journaled = run.claimed?.journal
  // the state lives in a cell the runner reads directly; a run nobody
  // listens to gets a state service that never looks for an emitter
  const cell: Cell<unknown> = { value: run.initial }
  const events = yield* WorkflowEvent.isEnabled
  const service = fromCell(cell, events)
  if (events && (yield* FiberRef.get(record.recording))) {
    // a run recorded for replay starts with the state it starts from
    const start = yield* Effect.option(encodeState(self, run.ids.sessionId, cell.value))
    if (Option.isSome(start)) yield* WorkflowEvent.emit({ _tag: "RunRecording", state: start.value })
  }
  const first = journaled?.next ?? 0
  // the run's token counter (from the journal's, for a run carried on): the
  // agents of its steps find it with the run's questions
  const usage = new UsageCounter(journaled?.usage)
  const exec = makeExecContext(
    events,
    makeQuestions(
      first,
      answersOf(run),
      {
        save: Effect.suspend(() => encodeState(self, run.ids.sessionId, cell.value)),
        restore: (encoded) => Effect.flatMap(decodeState(self, run.ids.sessionId, encoded), service.set)
      },
      usage,
      {
        taken: new Set(journaled?.signals),
        // a run without an unfinished-run entry yet was sent no signal
        stored: (name) => run.tracked ? run.store.signals(run.ids.runId, { name }) : Effect.succeed([])
      }
    ),
    run.traced
  )
  restoreOutputs(exec, journaled)
  const journal = new Journal(run, exec, cell, usage)
  const additionalData = run.claimed?.additionalData ?? run.options?.additionalData ?? {}
  const steps = Effect.suspend(() =>
    boundary.active()
      ? withBoundaries(run, first, (between) =>
        runFrom(
          self.steps,
          first,
          journaled?.previous ?? run.decodedInput,
          (_, previous) => nextInput(exec, run.decodedInput, previous, additionalData),
          exec,
          between(journal.at)
        ))
      : runFrom(
        self.steps,
        first,
        journaled?.previous ?? run.decodedInput,
        (_, previous) => nextInput(exec, run.decodedInput, previous, additionalData),
        exec,
        journal.at
      )
  )
  // The run's services and questions are set here and put back below (as
  // `Effect.provide` and `Effect.locally` would, at a fraction of the cost):
  // the attempt is uninterruptible and `Effect.exit` takes every outcome of
  // the steps, so nothing skips the put-back.
  const context = servicesOf(run, service)
  const outerContext = yield* FiberRef.getAndUpdate(
    FiberRef.currentContext,
    (outer) => EffectContext.merge(outer, context)
  )
  const outerQuestions = yield* FiberRef.getAndSet(currentQuestions, exec.questions)
  // a run inside a step is not the background run this one may be
  const outerBackground = yield* FiberRef.getAndSet(currentBackground, undefined)
  const exit = yield* Effect.map(
    Effect.exit(restore(steps.pipe(leased(run), Effect.flatMap((output) => finish(run, cell.value, output))))),
    (exit) => (self.persist === "changes" ? explainFrozen(exit) : exit)
  )
  yield* FiberRef.set(FiberRef.currentContext, outerContext)
  yield* FiberRef.set(currentQuestions, outerQuestions)
  yield* FiberRef.set(currentBackground, outerBackground)
  return { exit, exec, journal, usage }
}

type Between = (next: number, previous: unknown) => Effect.Effect<void, unknown> | undefined

/**
 * The steps of a run reporting their durable boundaries (see `boundary.ts`):
 * before each top-level step (after the journal record of the ones before),
 * and after each step's effects, before its record (the next step's journal,
 * or the commit).
 */
const withBoundaries = (
  run: Opened,
  first: number,
  steps: (between: (journal: Between) => Between) => Effect.Effect<StepOutput.StepOutput, unknown, unknown>
): Effect.Effect<StepOutput.StepOutput, unknown, unknown> => {
  const { runId } = run.ids
  const names = run.self.steps.map((step) => step.name)
  let current = first
  const before = (index: number) =>
    boundary.at(() => {
      current = index
      return { _tag: "BeforeStep", runId, step: names[index] ?? "", index }
    })
  const after = (index: number) => boundary.at(() => ({ _tag: "AfterStep", runId, step: names[index] ?? "", index }))
  const between = (journal: Between): Between => (next, previous) =>
    Effect.zipRight(
      after(next - 1),
      Effect.zipRight(Effect.suspend(() => journal(next, previous) ?? Effect.void), before(next))
    )
  return first >= names.length
    ? steps(between)
    : Effect.zipRight(before(first), Effect.tap(steps(between), () => after(current)))
}

/** The services a workflow provides its steps: the state (untyped, and its typed tag), the run context. */
const servicesOf = (run: Opened, service: SessionState.Service<unknown>) => {
  const { ids: { runId, sessionId, userId }, self, store } = run
  const context = EffectContext.make(SessionState.SessionState, service as SessionState.Service).pipe(
    EffectContext.add(RunContext.RunContext, {
      runId,
      sessionId,
      userId,
      workflowName: self.name,
      input: run.decodedInput,
      chatHistory: (history) => SessionStore.chatHistory(store, sessionId, history)
    })
  )
  return self.state === undefined
    ? context
    : EffectContext.add(context, self.state as SessionState.StateTag<unknown, unknown>, service)
}

/**
 * The final state encoded and checked for the commit: with `persist:
 * "changes"`, on an existing session, the changes from the state the run
 * started from, when the store has it as it is (only their values are new,
 * so only they are checked), else one change that sets the whole state.
 */
const finish = (run: Opened, state: unknown, output: StepOutput.StepOutput) =>
  Effect.gen(function*() {
    const { base, self } = run
    const { sessionId } = run.ids
    const changed = base === undefined || self.state === undefined
      ? undefined
      : stateCache.encodeFrom(self.state.schema, base.state, state)
    const encoded = changed === undefined ? yield* encodeState(self, sessionId, state) : changed.encoded
    const changes: ReadonlyArray<WorkflowEvent.StateChange> | undefined =
      self.persist !== "changes" || Option.isNone(run.stored)
        ? undefined
        : base !== undefined
        ? storedChanges(base.state, encoded)
        : [{ op: "set", path: [], value: encoded }]
    if (changes === undefined || base === undefined) {
      yield* checkJson(sessionId, "state", encoded)
    } else {
      const problem = changesProblem(changes, encoded)
      if (problem !== undefined) yield* new WorkflowError.NotSerializable({ sessionId, what: "state", ...problem })
    }
    yield* checkJson(sessionId, "output", output.content)
    return { output, state, encoded, changes }
  })

/**
 * With `persist: "changes"` committed states are frozen: a step that changes
 * one in place dies with V8's `TypeError` ("Cannot add property 3, object is
 * not extensible"); the defect then says what happened and what to do.
 */
const explainFrozen = <A>(exit: Exit.Exit<A, unknown>): Exit.Exit<A, unknown> => {
  if (Exit.isSuccess(exit)) return exit
  const defect = Cause.dieOption(exit.cause)
  if (
    Option.isNone(defect) || !(defect.value instanceof TypeError) ||
    !/read only|read-only|not extensible|Cannot (add|assign|delete|define)/.test(defect.value.message)
  ) return exit
  return Exit.die(
    new Error(
      `a step changed the session state in place (${defect.value.message}); with persist: "changes" ` +
        "committed states are frozen: update the state immutably, e.g. " +
        "SessionState.update((s) => ({ ...s, items: [...s.items, item] }))",
      { cause: defect.value }
    )
  )
}
