/**
 * The crash-test worker: one process of a crash test (see `CrashTest.ts`).
 * It loads the user's module, installs the engine's boundary hook (each
 * boundary is appended to the test's log; at its `crashAt`-th it kills
 * itself with SIGKILL, as a crash would), then carries the run on from
 * wherever the store says it stands, as a new process of the app would: it
 * starts it (a durable run, `durability: "step"`, under the test's run id),
 * resumes it when its process died (as `DurableRuns` does), and answers its
 * pauses with the test's responses. When the run completed it writes its
 * content and the session's state to the result file.
 *
 * @internal
 */
import { type SessionStore, Workflow, WorkflowError } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import type { Boundary, Job, Line, Result } from "./protocol.js"
import { jobVariable } from "./protocol.js"

/** The boundary the engine reports (see core's `internal/boundary.ts`). */
type EngineBoundary =
  | { readonly _tag: "BeforeStep" | "AfterStep"; readonly runId: string; readonly step: string; readonly index: number }
  | { readonly _tag: "AfterCommit"; readonly runId: string }
  | { readonly _tag: "AfterTool"; readonly tool: string; readonly params: unknown; readonly idempotent: boolean }
  | { readonly _tag: "AfterModelCall"; readonly agent: string; readonly method: string; readonly request: unknown }

const job = JSON.parse(process.env[jobVariable] ?? "null") as Job

const append = (line: Line) => fs.appendFileSync(job.log, JSON.stringify(line) + "\n")

const hash = (value: unknown) =>
  createHash("sha256").update(JSON.stringify(value) ?? "undefined").digest("hex").slice(0, 16)

/** What the log keeps of a boundary; none for another run's. */
const logged = (b: EngineBoundary): Boundary | undefined => {
  switch (b._tag) {
    case "BeforeStep":
    case "AfterStep":
      return b.runId === job.runId ? { _tag: b._tag, step: b.step, index: b.index } : undefined
    case "AfterCommit":
      return b.runId === job.runId ? { _tag: "AfterCommit" } : undefined
    case "AfterTool":
      return {
        _tag: "AfterTool",
        tool: b.tool,
        params: JSON.stringify(b.params) ?? "undefined",
        idempotent: b.idempotent
      }
    case "AfterModelCall":
      return { _tag: "AfterModelCall", agent: b.agent, request: hash([b.method, b.request]) }
  }
}

let seq = 0
;(globalThis as Record<symbol, unknown>)[Symbol.for("@sessionflow/core/boundary")] = (b: EngineBoundary) => {
  const boundary = logged(b)
  if (boundary === undefined) return
  seq += 1
  append({ _tag: "Boundary", attempt: job.attempt, seq, boundary })
  if (seq === job.crashAt) process.kill(process.pid, "SIGKILL")
}

const write = (result: Result) => fs.writeFileSync(job.result, JSON.stringify(result))

const load = Effect.tryPromise({
  try: () => import(job.module) as Promise<Record<string, unknown>>,
  catch: (cause) => new Error(`cannot load ${job.module}: ${String(cause)}`)
})

const main = Effect.gen(function*() {
  const module = yield* load
  const workflow = module[job.workflow]
  if (typeof workflow !== "object" || workflow === null || !(Workflow.TypeId in workflow)) {
    return yield* Effect.fail(new Error(`${job.module} exports no workflow named '${job.workflow}'`))
  }
  const wf = workflow as Workflow.Any
  // the named layer, else the module's `layer` if it has one
  const layer = job.layer === undefined
    ? (Layer.isLayer(module["layer"]) ? module["layer"] : Layer.empty)
    : module[job.layer]
  if (!Layer.isLayer(layer)) {
    return yield* Effect.fail(new Error(`${job.module} exports no layer named '${job.layer}'`))
  }
  const options = { sessionId: job.sessionId, runId: job.runId, durability: "step" as const }
  // the pauses already answered, in the order they were asked (by any process of the test)
  const answered: Array<string> = []
  for (const line of fs.readFileSync(job.log, "utf8").split("\n")) {
    if (line.length === 0) continue
    const parsed = JSON.parse(line) as Line
    if (parsed._tag === "Answered" && !answered.includes(parsed.key)) answered.push(parsed.key)
  }
  const step = Effect.gen(function*() {
    const status = yield* Effect.option(Effect.catchTag(
      Workflow.getRunStatus(wf, job.runId),
      "RunNotFound",
      () => Effect.fail(Option.none())
    ))
    if (Option.isNone(status)) return yield* Effect.as(Workflow.run(wf, job.input as never, options), false)
    const s = status.value
    switch (s._tag) {
      case "Completed":
        return true
      case "Running":
        return yield* Effect.as(Workflow.resume(wf, job.runId), false)
      case "Paused": {
        if (!answered.includes(s.pause.key)) answered.push(s.pause.key)
        const index = answered.indexOf(s.pause.key)
        if (index >= job.responses.length) {
          return yield* Effect.fail(
            new Error(
              `the run paused at its question ${index + 1} (${s.pause.key}) and the test gave no response for it`
            )
          )
        }
        append({ _tag: "Answered", attempt: job.attempt, key: s.pause.key })
        return yield* Effect.as(Workflow.continue(wf, job.runId, job.responses[index], { pause: s.pause.key }), false)
      }
      default:
        return yield* Effect.fail(new Error(`the run ended ${s._tag.toLowerCase()}: ${JSON.stringify(s)}`))
    }
  }).pipe(
    Effect.catchTag("RunPaused", (paused) =>
      Effect.sync(() => {
        append({ _tag: "Paused", attempt: job.attempt, key: paused.key })
        return false
      }))
  )
  const toEnd = Effect.gen(function*() {
    for (let i = 0; i < 100; i++) {
      if (yield* step) {
        const status = yield* Workflow.getRunStatus(wf, job.runId)
        const state = yield* Workflow.getSessionState(wf, job.sessionId)
        const content = status._tag === "Completed" ? status.content : undefined
        return {
          _tag: "Completed",
          workflow: wf.name,
          content,
          state: JSON.parse(JSON.stringify(state) ?? "null")
        } satisfies Result
      }
    }
    return yield* Effect.fail(new Error("the run did not complete after 100 pauses"))
  })
  // the user's layer: what the workflow's steps need besides the store
  return yield* (toEnd as Effect.Effect<Result, unknown, unknown>).pipe(
    Effect.provide(layer as Layer.Layer<unknown, unknown, SessionStore.SessionStore>)
  ) as Effect.Effect<Result, unknown, SessionStore.SessionStore>
}).pipe(
  Effect.provide(SqliteSessionStore.layer({ filename: job.database })),
  Effect.catchAll((error) => Effect.succeed<Result>({ _tag: "Failed", error: WorkflowError.format(error) })),
  Effect.catchAllDefect((defect) => Effect.succeed<Result>({ _tag: "Failed", error: `defect: ${String(defect)}` }))
)

Effect.runPromise(main).then(
  (result) => {
    write(result)
    process.exit(0)
  },
  (error) => {
    write({ _tag: "Failed", error: String(error) })
    process.exit(1)
  }
)
