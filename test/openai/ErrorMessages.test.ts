/**
 * `@effect/ai`'s `MalformedOutput` and `MalformedInput` have no message of
 * their own (their `message` is a dump of their fields): run records, failure
 * events and the examples' CLI show them readably, through one helper,
 * `WorkflowError.format`.
 */
import { AiError } from "@effect/ai"
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, expect, it } from "@effect/vitest"
import { Agent, SessionStore, Step, TestModel, Workflow, WorkflowError } from "@sessionflow/core"
import { Cli, Output } from "@sessionflow/examples"
import { Effect, Either, Exit, Schema, Stream } from "effect"
import * as TestServer from "./TestServer.js"

describe("WorkflowError.format", () => {
  it("renders AiErrors without a message of their own as Tag: module.method: description (or the cause)", () => {
    const input = new AiError.MalformedInput({
      module: "OpenAIChat",
      method: "prepareMessages",
      description: "no audio"
    })
    expect(input.message.startsWith("{")).toBe(true) // the field dump @effect/ai gives it
    expect(WorkflowError.format(input)).toBe("MalformedInput: OpenAIChat.prepareMessages: no audio")
    const decoded = Schema.decodeUnknownEither(Schema.Struct({ n: Schema.Number }))({})
    assert(Either.isLeft(decoded))
    const output = AiError.MalformedOutput.fromParseError({
      module: "LanguageModel",
      method: "generateObject",
      error: decoded.left
    })
    expect(WorkflowError.format(output)).toBe(
      `MalformedOutput: LanguageModel.generateObject: { readonly n: number }\n└─ ["n"]\n   └─ is missing`
    )
    // errors with their own message keep it, after their tag
    const http = new AiError.UnknownError({ module: "M", method: "m", description: "boom" })
    expect(WorkflowError.format(http)).toBe(`UnknownError: ${http.message}`)
    expect(WorkflowError.format("plain")).toBe("plain")
    expect(WorkflowError.format({ code: 1 })).toBe("{\"code\":1}")
  })
})

describe("run records and failure events", () => {
  const agent = Agent.make({ name: "Echo", instructions: "Echo." })
  const workflow = Workflow.make({ name: "echo", steps: [Step.agent("echo", agent)] })
  const failure = new AiError.MalformedOutput({
    module: "Provider",
    method: "generateText",
    description: "The reply does not have the expected shape: choices[0].message: is missing"
  })
  const readable =
    "MalformedOutput: Provider.generateText: The reply does not have the expected shape: choices[0].message: is missing"

  it.effect("carry the readable message of a MalformedOutput, not its field dump", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const exit = yield* Workflow.stream(workflow, "hi", { sessionId: "s" }).pipe(
        Stream.runForEach((event) =>
          Effect.sync(() => {
            if (event._tag === "RunFailed" || event._tag === "StepFailed") seen.push(event.error)
          })
        ),
        Effect.exit
      )
      assert(Exit.isFailure(exit))
      expect(seen).toEqual([readable, readable])
      expect(Exit.isFailure(yield* Effect.exit(Workflow.run(workflow, "again", { sessionId: "s" })))).toBe(true)
      const history = yield* Workflow.getRunHistory(workflow, "s")
      expect(history.map((run) => run.error)).toEqual([readable, readable])
    }).pipe(
      Effect.provide(TestModel.layer([TestModel.fail(failure), TestModel.fail(failure)])),
      Effect.provide(SessionStore.layerMemory)
    ))
})

/** Runs `Cli.main` with its output captured; returns the output and the exit code it set. */
const main = (argv: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    const capture = Output.capture("pretty")
    const before = process.exitCode
    let exitCode: typeof process.exitCode
    return Cli.main(argv).pipe(
      Effect.provideService(Output.Output, capture.service),
      Effect.ensuring(Effect.sync(() => {
        exitCode = process.exitCode
        process.exitCode = before
      })),
      Effect.map(() => ({ exitCode, stdout: capture.stdout(), stderr: capture.stderr() }))
    )
  })

describe("the CLI (Cli.main) with an OpenAI-compatible server", () => {
  it.scopedLive("a malformed reply is reported readably on stderr, in the events and in the run record", () =>
    Effect.gen(function*() {
      // every streamed chunk carries content that is neither text nor content parts
      const server = yield* TestServer.make({
        handler: () =>
          TestServer.text("Hello", {
            rewrite: (data) => ({ ...data, choices: [{ index: 0, delta: { content: 42 } }] })
          })
      })
      const dir = yield* Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped()).pipe(
        Effect.provide(NodeFileSystem.layer)
      )
      const db = `${dir}/shopping.db`
      const result = yield* main(["run", "shopping-list", "--db", db]).pipe(
        Effect.withConfigProvider(server.config({ OPENAI_MAX_RETRIES: "0" }))
      )
      const readable =
        "MalformedOutput: OpenAIChat.streamText: The reply does not have the expected shape: choices[0].delta.content:"
      expect(result.exitCode).toBe(1)
      expect(result.stderr).toContain(`error: ${readable}`)
      expect(result.stdout).toContain(readable)
      for (const output of [result.stdout, result.stderr]) {
        expect(output).not.toContain("\"module\"")
        expect(output).not.toContain("\"cause\"")
      }
      expect((yield* server.requests).length).toBeGreaterThan(0)

      const listed = yield* main(["sessions", "list", "--db", db, "--json"])
      const [session] = JSON.parse(listed.stdout) as ReadonlyArray<{ readonly sessionId: string }>
      const shown = yield* main(["sessions", "show", "--db", db, session!.sessionId])
      expect(shown.exitCode).not.toBe(1)
      expect(shown.stdout).toContain("✗ MalformedOutput: OpenAIChat.streamText: The reply does not")
    }))
})
