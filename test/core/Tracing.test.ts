/**
 * Tracing: with `@effect/opentelemetry`'s tracer (spans exported to memory), a
 * run is a `Workflow.run` span whose children are its steps (`Workflow.step`,
 * nested as the steps are), an agent step's `Agent.run` with its model calls
 * (`Agent.modelCall`) and tool calls (`Agent.toolCall`), and the store's
 * operations; and the token usage of a run's model calls, summed, on its
 * output, its span and its stored record.
 */
import { Tool, Toolkit } from "@effect/ai"
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, expect, it } from "@effect/vitest"
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import { Agent, Condition, SessionStore, Step, Team, TestModel, Workflow } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"
import { inMemoryTracing } from "../tracing.js"

const Lookup = Tool.make("lookup", { parameters: { topic: Schema.String }, success: Schema.String })
const ResearchTools = Toolkit.make(Lookup)
const toolsLive = ResearchTools.toLayer({ lookup: ({ topic }) => Effect.succeed(`notes on ${topic}`) })

/** A tool that needs a person's approval. */
const PublishTools = Toolkit.make(
  Agent.needsApproval(Tool.make("publish", { parameters: { text: Schema.String }, success: Schema.String }))
)

const researcher = Agent.make({ name: "researcher", instructions: "Research the topic.", tools: ResearchTools })

/** A step, a condition around an agent step, a last step; journaled at every top-level step. */
const research = Workflow.make({ name: "research", input: Schema.String, durability: "step" }).pipe(
  Workflow.andThen("prepare", ({ input }) => Effect.succeed(`topic: ${input}`)),
  Workflow.andThen(
    Condition.make({
      name: "has topic",
      evaluator: ({ previousStepContent }) => Effect.succeed(String(previousStepContent).length > 7),
      steps: [Step.agent("investigate", researcher)]
    })
  ),
  Workflow.andThen("report", ({ previousStepContent }) => Effect.succeed(`report: ${String(previousStepContent)}`))
)

/** Two model calls: a tool call, then the answer; each reports its tokens. */
const script = [
  TestModel.withUsage(TestModel.toolCalls(["lookup", { topic: "otters" }]), { inputTokens: 100, outputTokens: 20 }),
  TestModel.withUsage(TestModel.text("Otters hold hands."), { inputTokens: 150, outputTokens: 30, reasoningTokens: 4 })
]

const sqliteFile = Effect.map(
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: "sessionflow-" })),
  (dir) => `${dir}/sessions.db`
).pipe(Effect.provide(NodeFileSystem.layer))

const named = (spans: ReadonlyArray<ReadableSpan>, name: string) => spans.filter((span) => span.name === name)
const one = (spans: ReadonlyArray<ReadableSpan>, name: string, attribute?: readonly [string, unknown]) => {
  const found = named(spans, name).filter((span) =>
    attribute === undefined || span.attributes[attribute[0]] === attribute[1]
  )
  assert.strictEqual(
    found.length,
    1,
    `one ${name} span${attribute === undefined ? "" : ` with ${attribute.join(" = ")}`}`
  )
  return found[0]!
}
const parentOf = (spans: ReadonlyArray<ReadableSpan>, span: ReadableSpan) =>
  spans.find((candidate) => candidate.spanContext().spanId === span.parentSpanContext?.spanId)

describe("tracing", () => {
  it.scoped(
    "a run is a span tree: the run, its steps at their paths, the agent's model and tool calls, the store's operations",
    () =>
      Effect.gen(function*() {
        const { exporter, layer } = inMemoryTracing()
        const filename = yield* sqliteFile
        const output = yield* Workflow.run(research, "otters", { sessionId: "traced", userId: "ada" }).pipe(
          Effect.provide(Layer.mergeAll(TestModel.layer(script), toolsLive, SqliteSessionStore.layer({ filename }))),
          Effect.provide(layer)
        )
        expect(output.content).toBe("report: Otters hold hands.")
        const spans = exporter.getFinishedSpans()

        const run = one(spans, "Workflow.run")
        expect(parentOf(spans, run)).toBeUndefined()
        expect(run.attributes).toMatchObject({
          "sessionflow.workflow.name": "research",
          "sessionflow.session.id": "traced",
          "sessionflow.run.id": output.runId,
          "sessionflow.user.id": "ada",
          "sessionflow.run.durability": "step",
          "sessionflow.run.outcome": "completed",
          "gen_ai.usage.input_tokens": 250,
          "gen_ai.usage.output_tokens": 50,
          "gen_ai.usage.total_tokens": 300,
          "gen_ai.usage.reasoning_tokens": 4
        })

        // the steps, each under its container, with its path
        const step = (name: string) => one(spans, "Workflow.step", ["sessionflow.step.name", name])
        const [prepare, condition, investigate, report] = ["prepare", "has topic", "investigate", "report"].map(step)
        for (const top of [prepare!, condition!, report!]) expect(parentOf(spans, top)).toBe(run)
        expect(parentOf(spans, investigate!)).toBe(condition)
        expect(condition!.attributes).toMatchObject({
          "sessionflow.step.kind": "condition",
          "sessionflow.step.path": "[\"has topic\"]"
        })
        expect(investigate!.attributes).toMatchObject({
          "sessionflow.step.kind": "agent",
          "sessionflow.step.path": "[\"has topic\",\"investigate\"]",
          "sessionflow.step.outcome": "completed",
          "sessionflow.run.id": output.runId,
          "sessionflow.session.id": "traced",
          "sessionflow.workflow.name": "research"
        })

        // the agent: its model calls (with their tokens) and its tool call
        const agent = one(spans, "Agent.run")
        expect(parentOf(spans, agent)).toBe(investigate)
        expect(agent.attributes["sessionflow.agent.name"]).toBe("researcher")
        const calls = named(spans, "Agent.modelCall")
        expect(calls.map((call) => parentOf(spans, call))).toEqual([agent, agent])
        expect(
          calls.map((
            call
          ) => [call.attributes["gen_ai.usage.input_tokens"], call.attributes["gen_ai.usage.output_tokens"]])
        )
          .toEqual([[100, 20], [150, 30]])
        // the language model's own span is under each call
        for (const call of calls) {
          expect(spans.some((s) => s.name === "LanguageModel.generateText" && parentOf(spans, s) === call)).toBe(true)
        }
        const tool = one(spans, "Agent.toolCall")
        expect(parentOf(spans, tool)).toBe(agent)
        expect(tool.attributes).toMatchObject({
          "gen_ai.tool.name": "lookup",
          "gen_ai.tool.call.id": "call_0_0",
          "sessionflow.tool.is_error": false
        })

        // the store's operations: the run's entry, its journal at each top-level step, the commit
        const storeOps = spans.filter((s) => s.name.startsWith("SqlSessionStore.") && parentOf(spans, s) === run).map((
          s
        ) => s.name)
        expect(storeOps).toContain("SqlSessionStore.startRun")
        expect(storeOps).toContain("SqlSessionStore.commit")
        expect(storeOps.filter((name) => name === "SqlSessionStore.updateRun").length).toBe(2)
        expect(one(spans, "SqlSessionStore.commit").attributes["sessionflow.session.id"]).toBe("traced")
      })
  )

  it.scoped("a failed step's span says so; the run's span says how the run ended", () =>
    Effect.gen(function*() {
      const { exporter, layer } = inMemoryTracing()
      const failing = Workflow.make({ name: "failing" }).pipe(
        Workflow.andThen(Step.make("skipped", () => Effect.fail("nope"), { onError: "skip" })),
        Workflow.andThen("breaks", () => Effect.fail("broken"))
      )
      const exit = yield* Effect.exit(
        Workflow.run(failing, undefined).pipe(Effect.provide(SessionStore.layerMemory), Effect.provide(layer))
      )
      expect(exit._tag).toBe("Failure")
      const spans = exporter.getFinishedSpans()
      expect(one(spans, "Workflow.run").attributes["sessionflow.run.outcome"]).toBe("error")
      expect(one(spans, "Workflow.step", ["sessionflow.step.name", "skipped"]).attributes["sessionflow.step.outcome"])
        .toBe("skipped")
      expect(one(spans, "Workflow.step", ["sessionflow.step.name", "breaks"]).attributes["sessionflow.step.outcome"])
        .toBe("failed")
    }))

  it.effect("without a tracer, no span of a run reaches an exporter, and the run is the same", () =>
    Effect.gen(function*() {
      const { exporter } = inMemoryTracing()
      const output = yield* Workflow.run(research, "otters").pipe(
        Effect.provide(Layer.mergeAll(TestModel.layer(script), toolsLive, SessionStore.layerMemory))
      )
      expect(output.content).toBe("report: Otters hold hands.")
      expect(exporter.getFinishedSpans()).toEqual([])
    }))
})

describe("token usage", () => {
  it.scoped(
    "the usage of a run's two model calls is summed on its output and read back from SQLite by a fresh store",
    () =>
      Effect.gen(function*() {
        const filename = yield* sqliteFile
        const output = yield* Workflow.run(research, "otters", { sessionId: "usage" }).pipe(
          Effect.provide(Layer.mergeAll(TestModel.layer(script), toolsLive, SqliteSessionStore.layer({ filename })))
        )
        const usage = { inputTokens: 250, outputTokens: 50, totalTokens: 300, reasoningTokens: 4, modelCalls: 2 }
        expect(output.usage).toEqual(usage)

        // a fresh store layer over the same file
        const [record] = yield* Workflow.getRunHistory(research, "usage").pipe(
          Effect.provide(SqliteSessionStore.layer({ filename }))
        )
        expect(record).toMatchObject({ runId: output.runId, status: "completed", usage })
        const found = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.getRun(output.runId)).pipe(
          Effect.provide(SqliteSessionStore.layer({ filename }))
        )
        expect(found._tag === "Some" && found.value._tag === "Recorded" ? found.value.record.usage : undefined).toEqual(
          usage
        )
        // an idempotent run by id answers the recorded usage too
        const replayed = yield* Workflow.run(research, "otters", { sessionId: "usage", runId: output.runId }).pipe(
          Effect.provide(Layer.mergeAll(TestModel.layer([]), toolsLive, SqliteSessionStore.layer({ filename })))
        )
        expect(replayed.usage).toEqual(usage)
      })
  )

  it.effect(
    "a run that pauses keeps its usage so far with its question; continued, it sums the calls before and after",
    () =>
      Effect.gen(function*() {
        const editor = Agent.make({ name: "editor", instructions: "Publish.", tools: PublishTools })
        const wf = Workflow.make({ name: "publishing", input: Schema.String, steps: [Step.agent("publish", editor)] })
        const first = yield* Effect.flip(Workflow.run(wf, "the news", { sessionId: "pub" }))
        assert(first._tag === "RunPaused")
        const [waiting] = yield* Workflow.pausedRuns(wf)
        expect(waiting?.journal?.usage).toEqual({ inputTokens: 10, outputTokens: 2, totalTokens: 12, modelCalls: 1 })
        const output = yield* Workflow.continue(wf, first.runId, { approved: true })
        expect(output.usage).toEqual({ inputTokens: 15, outputTokens: 3, totalTokens: 18, modelCalls: 2 })
      }).pipe(Effect.provide(Layer.mergeAll(
        SessionStore.layerMemory,
        PublishTools.toLayer({ publish: ({ text }) => Effect.succeed(`published ${text}`) }),
        TestModel.layer((request) =>
          request.turn === 0
            ? TestModel.withUsage(TestModel.toolCalls(["publish", { text: "the news" }]), {
              inputTokens: 10,
              outputTokens: 2
            })
            : TestModel.withUsage(TestModel.text("Published."), { inputTokens: 5, outputTokens: 1 })
        )
      )))
  )

  it.effect("a run without model calls has no usage, and its record none", () =>
    Effect.gen(function*() {
      const plain = Workflow.make({ name: "plain" }).pipe(Workflow.andThen("one", () => Effect.succeed(1)))
      const output = yield* Workflow.run(plain, undefined, { sessionId: "plain" })
      expect(output).not.toHaveProperty("usage")
      const [record] = yield* Workflow.getRunHistory(plain, "plain")
      expect(record).not.toHaveProperty("usage")
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.effect("a streamed run counts its replies' usage too, and a team counts its members' calls", () =>
    Effect.gen(function*() {
      const writer = Agent.make({ name: "writer", description: "Writes.", instructions: "Write." })
      const desk = Team.make({ name: "desk", members: [writer], instructions: "Delegate the writing." })
      const wf = Workflow.make({ name: "desk", steps: [Step.team("write", desk)] })
      const events = yield* Stream.runCollect(Workflow.stream(wf, "a haiku", { sessionId: "desk" }))
      expect(Chunk.last(events).pipe((last) => last._tag === "Some" ? last.value._tag : undefined)).toBe("RunCompleted")
      const [record] = yield* Workflow.getRunHistory(wf, "desk")
      expect(record!.usage).toEqual({ inputTokens: 60, outputTokens: 6, totalTokens: 66, modelCalls: 3 })
    }).pipe(Effect.provide(Layer.mergeAll(
      SessionStore.layerMemory,
      TestModel.layer([
        TestModel.withUsage(TestModel.toolCalls([Team.delegateToolName, { member_name: "writer", task: "a haiku" }]), {
          inputTokens: 10,
          outputTokens: 1
        }),
        TestModel.withUsage(TestModel.text("Old pond, a frog."), { inputTokens: 20, outputTokens: 2 }),
        TestModel.withUsage(TestModel.text("Done: Old pond, a frog."), { inputTokens: 30, outputTokens: 3 })
      ])
    ))))
})
