/**
 * The chaos run's workflows. Every step appends its side effects to the
 * run's effects file (`begin` and `end` of its work, what a wait took, the
 * answer a pause got), and every run's last step appends the run's id to the
 * session's `applied` list, reading it first: a session's list is then its
 * committed runs in commit order, each once, which the checker compares with
 * the store's records.
 *
 * Every run's input carries a `token` (the op that sent it) and how long each
 * of its steps works (`ms`), so the effects name their op, and a seed picks
 * the durations.
 */
import { RunContext, SessionState, Step, type StepInput, Workflow } from "@sessionflow/core"
import { Effect, Schema } from "effect"
import { append, type Phase } from "./history.js"

class Applied extends SessionState.Tag("chaos/Applied")<Applied>()({ applied: Schema.Array(Schema.String) }) {}

export const Input = Schema.Struct({ token: Schema.String, ms: Schema.Array(Schema.Number) })
export type Input = typeof Input.Type

/** The signal the waits of `chaos-wait` take, and the pause of `chaos-pause`. */
export const signalName = "go"

/** How long each wait of `chaos-wait` waits for its signal, and the question of `chaos-pause` for its answer. */
const waitTimeout = "2500 millis"
/** The schedule the supervisors run (its runs' ids are `chaos-work/tick@<time>`, their token this name). */
export const scheduleName = "tick"

/** The durable sleep of `chaos-sleep`. */
const sleepFor = "400 millis"

export const makeWorkflows = (effectsFile: string) => {
  const note = (step: string, phase: Phase, value?: unknown) =>
    Effect.flatMap(RunContext.RunContext, (ctx) =>
      Effect.sync(() =>
        append(effectsFile, {
          type: "effect",
          t: Date.now(),
          pid: process.pid,
          runId: ctx.runId,
          sessionId: ctx.sessionId,
          wf: ctx.workflowName,
          step,
          phase,
          token: (ctx.input as Input).token,
          ...(value === undefined ? {} : { value })
        })
      ))

  /** Works `ms[index]` milliseconds between its `begin` and `end`. */
  const work = (name: string, index: number) =>
    Step.make(name, ({ input }: StepInput.StepInput<unknown, Input>) =>
      Effect.gen(function*() {
        yield* note(name, "begin")
        yield* Effect.sleep(input.ms[index] ?? 100)
        yield* note(name, "end")
        return index
      }))

  /** Works, then appends the run's id to the session's list (read, a pause, write: two runs at once would lose one). */
  const appendRun = (name: string, index: number) =>
    Step.make(name, ({ input }: StepInput.StepInput<unknown, Input>) =>
      Effect.gen(function*() {
        yield* note(name, "begin")
        yield* Effect.sleep(input.ms[index] ?? 100)
        const runId = yield* RunContext.runId
        const before = yield* Applied.get
        yield* Effect.sleep("5 millis")
        const applied = [...before.applied, runId]
        yield* Applied.set({ applied })
        yield* note(name, "end", applied.length)
        return runId
      }))

  /** Notes what the wait before it took (`Received` with the signal's value, or `TimedOut`). */
  const took = (name: string) =>
    Step.make(
      name,
      ({ previousStepContent }: StepInput.StepInput<unknown, Input>) =>
        Effect.as(note(name, "took", previousStepContent), previousStepContent)
    )

  const base = { state: Applied, sessionState: { applied: [] }, input: Input } as const

  /** Three steps of work, the last one appending. */
  const work3 = Workflow.make({ ...base, name: "chaos-work", steps: [work("a", 0), work("b", 1), appendRun("c", 2)] })

  /** Work, then two waits for the same signal (each with a timeout), each noted, then the append. */
  const waitTwice = Workflow.make({
    ...base,
    name: "chaos-wait",
    steps: [
      work("a", 0),
      Step.waitFor(signalName, Schema.String, { timeout: waitTimeout }),
      took("took-1"),
      Step.waitFor(signalName, Schema.String, { timeout: waitTimeout }),
      took("took-2"),
      appendRun("c", 1)
    ]
  })

  /** Work, a durable sleep, then the append. */
  const sleeper = Workflow.make({
    ...base,
    name: "chaos-sleep",
    steps: [work("a", 0), Step.sleep("nap", sleepFor), appendRun("c", 1)]
  })

  /** Work, a question (answered, or timed out), then the append. */
  const asking = Workflow.make({
    ...base,
    name: "chaos-pause",
    steps: [
      work("a", 0),
      Step.pause("approve", {
        payload: Schema.Struct({ token: Schema.String }),
        response: Schema.Struct({ ok: Schema.Boolean, by: Schema.String }),
        ask: ({ input }: StepInput.StepInput<unknown, Input>) => Effect.succeed({ token: input.token }),
        resume: (answer) => Effect.as(note("approve", "answer", answer), answer.by),
        timeout: { after: waitTimeout, onTimeout: () => Effect.succeed("timed-out") }
      }),
      appendRun("c", 1)
    ]
  })

  return { work: work3, wait: waitTwice, sleep: sleeper, pause: asking } as const
}

type Workflows = ReturnType<typeof makeWorkflows>
export type WorkflowKey = keyof Workflows
export const workflowKeys: ReadonlyArray<WorkflowKey> = ["work", "wait", "sleep", "pause"]
