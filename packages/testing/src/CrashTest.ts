/**
 * Crash-tests a durable workflow with real processes: `everyBoundary` kills
 * a child process running the workflow at each durable boundary of its run
 * (a top-level step about to start, after the journal record of the steps
 * before it; a step whose effects are done and not yet journaled; a tool
 * call or a model reply inside a step; the commit), then carries the run on
 * in a new process that runs it to its end, as `DurableRuns` or
 * `Workflow.resume` would after a crash (once per step, the recovering
 * process is killed too, at the first boundary of its recovery, and a third
 * one carries the run on). It then checks that:
 *
 * - the session's final state and the run's content equal an uninterrupted
 *   run's;
 * - no step ran again after its journal record, and no model call or tool
 *   call ran again after it was recorded (journaled with its step, or kept
 *   with a pause);
 * - a step or tool ran more often than in the uninterrupted run only when it
 *   is declared idempotent: a tool annotated `Tool.Idempotent` or
 *   `Tool.Readonly` (`@effect/ai`), or a step or tool named in `idempotent`.
 *
 * The workflow comes from a module, since a new process has to load it: the
 * module exports the workflow and, optionally, the layer its steps need
 * besides the store (a model, tool handlers). The store is a SQLite file in
 * a temporary folder.
 *
 * ```ts no-check
 * it.live("the workflow survives a crash anywhere", () =>
 *   CrashTest.everyBoundary({
 *     module: new URL("./orders.ts", import.meta.url), // exports `workflow` (and `layer`)
 *     input: "two coffees",
 *     idempotent: ["reserve"]
 *   }), 120_000)
 * ```
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as check from "./internal/check.js"
import type { Job, Line, Result } from "./internal/protocol.js"
import { jobVariable } from "./internal/protocol.js"

/**
 * @since 0.1.0
 * @category options
 */
export interface Options {
  /** the module that exports the workflow (a file URL, or a path), TypeScript or JavaScript */
  readonly module: URL | string
  /** the name of the workflow's export (default `"workflow"`) */
  readonly workflow?: string | undefined
  /**
   * the name of the export that is the layer the workflow's steps need
   * besides the store (default: `"layer"` when the module exports one)
   */
  readonly layer?: string | undefined
  /** the run's input, encoded (JSON) */
  readonly input: unknown
  /** the answers (JSON) to the run's pauses, in the order it asks them */
  readonly responses?: ReadonlyArray<unknown> | undefined
  /** the steps and tools (by name) that may run again after a crash */
  readonly idempotent?: ReadonlyArray<string> | undefined
  /** where the runs are stored: a SQLite file (the only store for now) */
  readonly store?: "sqlite" | undefined
  /**
   * kill the recovering process too, at the first boundary of its recovery (default `true`): once
   * per step, after the crash before it starts (a crash anywhere in a step leaves the store as it
   * was at the step's start, so its recovery is the same after each)
   */
  readonly recovery?: boolean | undefined
  /** how long one process may take (default 60 seconds) */
  readonly timeout?: Duration.DurationInput | undefined
}

/**
 * The kinds of durable boundary.
 *
 * @since 0.1.0
 * @category models
 */
export const BoundaryKind = Schema.Literal("BeforeStep", "AfterStep", "AfterTool", "AfterModelCall", "AfterCommit")

/**
 * @since 0.1.0
 * @category models
 */
export type BoundaryKind = typeof BoundaryKind.Type

/**
 * A durable boundary of the run: the `ordinal`-th its process reached, of
 * `kind`, in top-level step `step` (none: the commit), with the tool or the
 * agent it is about (`detail`).
 *
 * @since 0.1.0
 * @category models
 */
export class Boundary extends Schema.Class<Boundary>("@sessionflow/testing/Boundary")({
  ordinal: Schema.Number,
  kind: BoundaryKind,
  step: Schema.optional(Schema.String),
  detail: Schema.optional(Schema.String)
}) {
  /** e.g. `boundary 4 (after tool add_item({"item":"milk"}), in step "manage_items")` */
  get description(): string {
    const what = {
      BeforeStep: "before the step starts",
      AfterStep: "after the step's effects, before its journal record",
      AfterTool: `after tool ${this.detail ?? ""}, before its step's record`,
      AfterModelCall: `after a model reply to ${this.detail ?? ""}, before its step's record`,
      AfterCommit: "after the commit"
    }[this.kind]
    return `boundary ${this.ordinal} (${what}${this.step === undefined ? "" : `, in step "${this.step}"`})`
  }
}

/**
 * One thing a crashed run did otherwise than the uninterrupted one.
 *
 * @since 0.1.0
 * @category models
 */
export class Difference extends Schema.Class<Difference>("@sessionflow/testing/Difference")({
  kind: Schema.Literal(
    "State",
    "Content",
    "JournaledStepRepeated",
    "StepRepeated",
    "ToolRepeated",
    "ModelCallRepeated",
    "RunFailed",
    "BoundaryNotReached"
  ),
  /** the step it is about, if any */
  step: Schema.optional(Schema.String),
  message: Schema.String
}) {}

/**
 * A crash after which the run differed: where the first process was killed,
 * where its recovery was killed (if it reached a boundary), and what
 * differed.
 *
 * @since 0.1.0
 * @category models
 */
export class Failure extends Schema.Class<Failure>("@sessionflow/testing/Failure")({
  boundary: Boundary,
  recoveryKilledAt: Schema.optional(Boundary),
  differences: Schema.Array(Difference)
}) {}

/**
 * The run did not survive every crash: `failures`, one per boundary after
 * which it differed from the uninterrupted run (of `boundaries` tried).
 *
 * @since 0.1.0
 * @category errors
 */
export class CrashTestFailed extends Schema.TaggedError<CrashTestFailed>()("CrashTestFailed", {
  workflow: Schema.String,
  boundaries: Schema.Number,
  failures: Schema.Array(Failure)
}) {
  override get message(): string {
    const lines = [
      `workflow "${this.workflow}": ${this.failures.length} of ${this.boundaries} crashes changed the run`
    ]
    for (const failure of this.failures) {
      lines.push(
        `- killed at ${failure.boundary.description}` +
          (failure.recoveryKilledAt === undefined
            ? ""
            : `, then its recovery killed at ${failure.recoveryKilledAt.description}`) +
          ":"
      )
      for (const difference of failure.differences) lines.push(`    ${difference.kind}: ${difference.message}`)
    }
    return lines.join("\n")
  }
}

/**
 * The crash test could not be carried out: the module did not load, the
 * uninterrupted run failed, a process did not end in time, ….
 *
 * @since 0.1.0
 * @category errors
 */
export class CrashTestError extends Schema.TaggedError<CrashTestError>()("CrashTestError", {
  reason: Schema.String,
  /** what the process wrote to its standard error, if one failed */
  stderr: Schema.optional(Schema.String)
}) {
  override get message(): string {
    return this.stderr === undefined || this.stderr.length === 0 ? this.reason : `${this.reason}\n${this.stderr}`
  }
}

/**
 * What a crash test that passed did: the boundaries of the uninterrupted
 * run (each one a crash that changed nothing), and how many processes it
 * started.
 *
 * @since 0.1.0
 * @category models
 */
export interface Report {
  readonly workflow: string
  readonly boundaries: ReadonlyArray<Boundary>
  readonly processes: number
}

const extension = path.extname(fileURLToPath(import.meta.url))
const worker = fileURLToPath(new URL(`./internal/worker${extension}`, import.meta.url))
/** this process's export conditions (`--conditions=x`, `--conditions x`, `-C x`), for the worker */
const conditions = (): Array<string> => {
  const args = process.execArgv
  const out: Array<string> = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg.startsWith("--conditions=")) out.push(arg)
    else if ((arg === "--conditions" || arg === "-C") && i + 1 < args.length) out.push(`--conditions=${args[++i]!}`)
  }
  return out
}

/** tsx's loader, by absolute URL: the worker and the user's module may be TypeScript */
const tsx = (): string => pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href

interface Exited {
  readonly killed: boolean
  readonly result: Result | undefined
  readonly stderr: string
}

/** Runs one worker process to its end (or its SIGKILL). */
const runWorker = (job: Job, timeout: Duration.Duration): Effect.Effect<Exited, CrashTestError> =>
  Effect.async<Exited, CrashTestError>((resume) => {
    const child = spawn(
      process.execPath,
      [...conditions(), "--import", tsx(), worker],
      { env: { ...process.env, [jobVariable]: JSON.stringify(job) }, stdio: ["ignore", "ignore", "pipe"] }
    )
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill("SIGKILL")
    }, Duration.toMillis(timeout))
    child.on("error", (error) => {
      clearTimeout(timer)
      resume(Effect.fail(new CrashTestError({ reason: `cannot start the worker: ${error.message}` })))
    })
    child.on("close", (_code, signal) => {
      clearTimeout(timer)
      if (timedOut) {
        return resume(
          Effect.fail(
            new CrashTestError({ reason: `a process took longer than ${Duration.format(timeout)}`, stderr })
          )
        )
      }
      const result = fs.existsSync(job.result)
        ? JSON.parse(fs.readFileSync(job.result, "utf8")) as Result
        : undefined
      resume(Effect.succeed({ killed: signal === "SIGKILL", result, stderr }))
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      if (child.exitCode === null) child.kill("SIGKILL")
    })
  })

const readLog = (file: string): ReadonlyArray<Line> =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l) as Line)

/**
 * Crash-tests a workflow at every durable boundary of its run (see the
 * module's documentation): fails with `CrashTestFailed`, naming each
 * boundary, step and difference, when a crash changed the run.
 *
 * @since 0.1.0
 * @category crash tests
 */
export const everyBoundary: (options: Options) => Effect.Effect<Report, CrashTestFailed | CrashTestError> = Effect.fn(
  "CrashTest.everyBoundary"
)(function*(options: Options) {
  const moduleUrl = options.module instanceof URL
    ? options.module.href
    : options.module.startsWith("file:")
    ? options.module
    : pathToFileURL(path.resolve(options.module)).href
  const timeout = Duration.decode(options.timeout ?? "60 seconds")
  const idempotent = new Set(options.idempotent ?? [])
  const folder = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-crash-test-"))),
    (folder) => Effect.sync(() => fs.rmSync(folder, { recursive: true, force: true }))
  )
  let processes = 0
  /** one run of the test, in a fresh store: its processes, one after the other */
  const scenario = (name: string, crashes: ReadonlyArray<number>) =>
    Effect.gen(function*() {
      const dir = path.join(folder, name)
      fs.mkdirSync(dir)
      const log = path.join(dir, "log.jsonl")
      fs.writeFileSync(log, "")
      const exits: Array<Exited> = []
      for (let attempt = 0; attempt <= crashes.length; attempt++) {
        processes += 1
        const exited = yield* runWorker({
          module: moduleUrl,
          workflow: options.workflow ?? "workflow",
          layer: options.layer,
          input: options.input,
          responses: options.responses ?? [],
          sessionId: "crash-test",
          runId: "crash-test-run",
          database: path.join(dir, "sessions.db"),
          log,
          result: path.join(dir, `result-${attempt}.json`),
          crashAt: crashes[attempt],
          attempt
        }, timeout)
        exits.push(exited)
        if (!exited.killed) break
      }
      return { exits, lines: readLog(log) }
    })

  const baseline = yield* scenario("uninterrupted", [])
  const first = baseline.exits[0]!
  if (first.result?._tag !== "Completed") {
    return yield* new CrashTestError({
      reason: first.result === undefined
        ? "the uninterrupted run's process ended without a result"
        : `the uninterrupted run failed: ${first.result.error}`,
      stderr: first.stderr
    })
  }
  const expected = first.result
  const boundaries = check.boundariesOf(baseline.lines, 0).map((b) => new Boundary(b))
  const workflowName = expected.workflow
  const failures: Array<Failure> = []
  for (let n = 1; n <= boundaries.length; n++) {
    // a crash anywhere in a step leaves the store as it is at the step's start (its journal is
    // written between steps): recovery is the same after each, and is killed once per step
    const killRecovery = options.recovery !== false && boundaries[n - 1]!.kind === "BeforeStep"
    const crashed = yield* scenario(`crash-${n}`, killRecovery ? [n, 1] : [n])
    const last = crashed.exits[crashed.exits.length - 1]!
    const differences = check.compare({
      baseline: baseline.lines,
      crashed: crashed.lines,
      expected,
      killed: crashed.exits.map((e) => e.killed),
      result: last.killed ? undefined : last.result,
      stderr: last.stderr,
      idempotent
    })
    if (differences.length > 0) {
      const killedIn = crashed.exits.length > 2 ? check.boundariesOf(crashed.lines, 1)[0] : undefined
      const recovery = killedIn === undefined ? undefined : new Boundary(killedIn)
      failures.push(
        new Failure({
          boundary: boundaries[n - 1]!,
          ...(recovery === undefined ? {} : { recoveryKilledAt: recovery }),
          differences: differences.map((d) => new Difference(d))
        })
      )
    }
  }
  if (failures.length > 0) {
    return yield* new CrashTestFailed({ workflow: workflowName, boundaries: boundaries.length, failures })
  }
  return { workflow: workflowName, boundaries, processes }
}, Effect.scoped)
