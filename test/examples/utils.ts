/**
 * Helpers for the examples' tests: temp SQLite files, the CLI as a child
 * process, captured output, event collection.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { SessionState, Workflow, type WorkflowEvent } from "@sessionflow/core"
import { Output } from "@sessionflow/examples"
import { Chunk, type Context, Effect, Stream } from "effect"
import { fileURLToPath } from "node:url"
import { execTypeScript, type ProcessResult } from "../process.js"

const bin = fileURLToPath(new URL("../../packages/examples/src/bin.ts", import.meta.url))

/** A fresh temp directory (removed with the scope) and a db file path in it. */
export const tempDb = (name = "test.db") =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: "sessionflow-examples-" })).pipe(
    Effect.map((dir) => `${dir}/${name}`),
    Effect.provide(NodeFileSystem.layer)
  )

export type CliResult = ProcessResult

/**
 * Runs the CLI (`bin.ts`) in a separate process, without an OpenAI key (so
 * offline), killed if the scope closes first; `input` is what it reads on
 * stdin (else it has none).
 */
export const cli = (args: ReadonlyArray<string>, input?: string): Effect.Effect<CliResult, Error> =>
  execTypeScript(bin, args, { env: { OPENAI_API_KEY: undefined }, ...(input === undefined ? {} : { input }) })

/** Runs `self` with the examples' output captured (and `input` as the lines typed). */
export const captured = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  mode: "pretty" | "json" = "pretty",
  input: ReadonlyArray<string> = []
) =>
  Effect.suspend(() => {
    const capture = Output.capture(mode, input)
    return self.pipe(
      Effect.provideService(Output.Output, capture.service),
      Effect.map((value) => ({ value, stdout: capture.stdout(), stderr: capture.stderr() }))
    )
  })

/** The `Log` lines of a run's events. */
export const logLines = (evs: ReadonlyArray<WorkflowEvent.WorkflowEvent>): Array<string> =>
  evs.flatMap((e) => (e._tag === "Log" ? [e.message] : []))

/** Streams a run and collects its events. */
export const events = <W extends Workflow.Any>(
  wf: W,
  input: Workflow.Input<W>,
  options?: Workflow.RunOptions<Workflow.StateEncoded<W>>
) =>
  Workflow.stream(wf, input, options).pipe(
    Stream.runCollect,
    Effect.map((chunk): ReadonlyArray<WorkflowEvent.WorkflowEvent> => Chunk.toReadonlyArray(chunk))
  )

/** The names a run's routers selected, in order. */
export const routed = (evs: ReadonlyArray<WorkflowEvent.WorkflowEvent>) =>
  evs.flatMap((e) => (e._tag === "RouterSelected" ? [e.selected] : []))

/** Runs `self` with `tag` holding a fresh state `initial`; returns the result and the final state. */
export const withState = <Self, S, A, E, R>(
  tag: Context.Tag<Self, SessionState.Service<S>>,
  initial: S,
  self: Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const service = yield* SessionState.make(initial)
    const value = yield* Effect.provideService(self, tag, service)
    return { value, state: yield* service.get }
  })
