/**
 * What a crash test checks, from the logs of the uninterrupted run and of a
 * crashed one (see `CrashTest.ts`): the boundaries each process reached, and
 * the differences between the two runs.
 *
 * @internal
 */
import type { Line, Result } from "./protocol.js"

/** A boundary as `CrashTest.Boundary` describes it. @internal */
export interface BoundaryFields {
  readonly ordinal: number
  readonly kind: Extract<Line, { readonly _tag: "Boundary" }>["boundary"]["_tag"]
  readonly step?: string
  readonly detail?: string
}

/** A difference as `CrashTest.Difference` describes it. @internal */
export interface DifferenceFields {
  readonly kind:
    | "State"
    | "Content"
    | "JournaledStepRepeated"
    | "StepRepeated"
    | "ToolRepeated"
    | "ModelCallRepeated"
    | "RunFailed"
    | "BoundaryNotReached"
  readonly step?: string
  readonly message: string
}

/** The boundaries process `attempt` reached, in order, each with the top-level step it was in. @internal */
export const boundariesOf = (lines: ReadonlyArray<Line>, attempt: number): Array<BoundaryFields> => {
  const out: Array<BoundaryFields> = []
  let step: string | undefined
  for (const line of lines) {
    if (line._tag !== "Boundary" || line.attempt !== attempt) continue
    const b = line.boundary
    if (b._tag === "BeforeStep" || b._tag === "AfterStep") step = b.step
    out.push(
      {
        ordinal: line.seq,
        kind: b._tag,
        ...(b._tag === "AfterCommit" || step === undefined ? {} : { step }),
        ...(b._tag === "AfterTool"
          ? { detail: `${b.tool}(${b.params})` }
          : b._tag === "AfterModelCall"
          ? { detail: `agent "${b.agent}"` }
          : {})
      }
    )
  }
  return out
}

/** An execution in a log: a step started, a tool call made, a model call answered; with its step. */
interface Execution {
  readonly attempt: number
  readonly kind: "step" | "tool" | "model"
  /** the same work in every run: the step's index, the tool's step, name and arguments, the request's hash */
  readonly key: string
  readonly label: string
  readonly step: number
  readonly stepName: string
  /** the step's or tool's name */
  readonly name: string
  readonly idempotent: boolean
  /** journaled with its step, or kept with a pause (so far) */
  recorded: boolean
  /** an execution of the same key was recorded before this one ran */
  readonly repeatsRecorded: boolean
}

const executions = (lines: ReadonlyArray<Line>, killed: ReadonlyArray<boolean>): Array<Execution> => {
  // the boundary each killed process died at: a step killed as it was about to start did not run
  const diedAt = new Map<number, number>()
  for (const line of lines) {
    if (line._tag === "Boundary" && killed[line.attempt] === true) diedAt.set(line.attempt, line.seq)
  }
  const out: Array<Execution> = []
  const recordedKeys = new Set<string>()
  const record = (e: Execution) => {
    e.recorded = true
    recordedKeys.add(e.key)
  }
  const push = (e: Omit<Execution, "recorded" | "repeatsRecorded">) =>
    out.push({ ...e, recorded: false, repeatsRecorded: recordedKeys.has(e.key) })
  let step = -1
  let stepName = ""
  let attempt = -1
  for (const line of lines) {
    if (line.attempt !== attempt) {
      attempt = line.attempt
      step = -1
    }
    if (line._tag === "Paused") {
      // the pause keeps what its step did so far in this process
      for (const e of out) if (e.attempt === attempt && e.step === step && e.kind !== "step") record(e)
      continue
    }
    if (line._tag !== "Boundary") continue
    const b = line.boundary
    switch (b._tag) {
      case "BeforeStep": {
        // the journal now holds every step before this one
        for (const e of out) if (e.step < b.index) record(e)
        step = b.index
        stepName = b.step
        if (diedAt.get(attempt) === line.seq) break
        push({
          attempt,
          kind: "step",
          key: `step ${b.index}`,
          label: `step "${b.step}"`,
          step,
          stepName,
          name: b.step,
          idempotent: false
        })
        break
      }
      case "AfterCommit":
        for (const e of out) record(e)
        break
      case "AfterTool":
        push({
          attempt,
          kind: "tool",
          key: `tool ${step} ${b.tool} ${b.params}`,
          label: `tool ${b.tool}(${b.params})`,
          step,
          stepName,
          name: b.tool,
          idempotent: b.idempotent
        })
        break
      case "AfterModelCall":
        push({
          attempt,
          kind: "model",
          key: `model ${b.request}`,
          label: `model call of agent "${b.agent}"`,
          step,
          stepName,
          name: b.agent,
          idempotent: false
        })
        break
      case "AfterStep":
        break
    }
  }
  return out
}

const count = (list: ReadonlyArray<Execution>) => {
  const counts = new Map<string, number>()
  for (const e of list) counts.set(e.key, (counts.get(e.key) ?? 0) + 1)
  return counts
}

const short = (value: unknown): string => {
  const json = JSON.stringify(value) ?? "undefined"
  return json.length > 400 ? `${json.slice(0, 400)}…` : json
}

const equal = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

/**
 * The differences between a crashed run and the uninterrupted one.
 *
 * @internal
 */
export const compare = (options: {
  readonly baseline: ReadonlyArray<Line>
  readonly crashed: ReadonlyArray<Line>
  readonly expected: Extract<Result, { readonly _tag: "Completed" }>
  /** whether each process was killed */
  readonly killed: ReadonlyArray<boolean>
  /** the last process's result (none: it was killed, or wrote none) */
  readonly result: Result | undefined
  readonly stderr: string
  readonly idempotent: ReadonlySet<string>
}): Array<DifferenceFields> => {
  const differences: Array<DifferenceFields> = []
  if (options.killed[0] !== true) {
    differences.push(
      {
        kind: "BoundaryNotReached",
        message: "the process ran to its end without reaching the boundary: the run does not take the same path " +
          "every time (is the workflow deterministic, given its model and input?)"
      }
    )
  }
  const { expected, result } = options
  if (result?._tag !== "Completed") {
    differences.push(
      {
        kind: "RunFailed",
        message: result === undefined
          ? `the recovered run ended without a result${options.stderr.length > 0 ? `: ${options.stderr}` : ""}`
          : `the recovered run failed: ${result.error}`
      }
    )
    return differences
  }
  if (!equal(result.state, expected.state)) {
    differences.push(
      {
        kind: "State",
        message: `the session's final state is ${short(result.state)}, uninterrupted ${short(expected.state)}`
      }
    )
  }
  if (!equal(result.content, expected.content)) {
    differences.push(
      {
        kind: "Content",
        message: `the run's content is ${short(result.content)}, uninterrupted ${short(expected.content)}`
      }
    )
  }
  const expectedCounts = count(executions(options.baseline, []))
  const crashed = executions(options.crashed, options.killed)
  const seen = new Map<string, number>()
  const reported = new Set<string>()
  for (const e of crashed) {
    const n = (seen.get(e.key) ?? 0) + 1
    seen.set(e.key, n)
    const allowed = expectedCounts.get(e.key) ?? 0
    if (n > allowed && !reported.has(e.key)) {
      const times = `ran ${n} times (uninterrupted: ${allowed})`
      const after = e.repeatsRecorded
      if (e.kind === "step" && after) {
        reported.add(e.key)
        differences.push(
          {
            kind: "JournaledStepRepeated",
            step: e.stepName,
            message: `${e.label} ${times}: it ran again after its journal record`
          }
        )
      } else if (after) {
        reported.add(e.key)
        differences.push(
          {
            kind: e.kind === "tool" ? "ToolRepeated" : "ModelCallRepeated",
            step: e.stepName,
            message: `${e.label} in step "${e.stepName}" ${times}: it ran again after it was recorded`
          }
        )
      } else if (e.kind === "step" && !options.idempotent.has(e.name)) {
        reported.add(e.key)
        differences.push(
          {
            kind: "StepRepeated",
            step: e.stepName,
            message: `${e.label} ${times} and is not declared idempotent (\`idempotent: ["${e.stepName}"]\`)`
          }
        )
      } else if (e.kind === "tool" && !e.idempotent && !options.idempotent.has(e.name)) {
        reported.add(e.key)
        differences.push(
          {
            kind: "ToolRepeated",
            step: e.stepName,
            message: `${e.label} in step "${e.stepName}" ${times} and is not declared idempotent ` +
              "(annotate it `Tool.Idempotent`, or name it in `idempotent`)"
          }
        )
      }
    }
  }
  return differences
}
