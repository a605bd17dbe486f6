/**
 * The examples' tracing helper: the console tree of a run's spans, the OTLP
 * export to a collector (a local HTTP receiver), and the choice between them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Agent, SessionStore, Step, TestModel, Workflow } from "@sessionflow/core"
import { Cli, Tracing } from "@sessionflow/examples"
import { Effect, Layer, Schema } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { captured } from "./utils.js"

const summariser = Agent.make({ name: "summariser", instructions: "Summarise." })
const summary = Workflow.make({ name: "summary", input: Schema.String }).pipe(
  Workflow.andThen("trim", ({ input }) => Effect.succeed(input.trim())),
  Workflow.andThen(Step.agent("summarise", summariser))
)
const model = TestModel.layer([TestModel.withUsage(TestModel.text("Short."), { inputTokens: 9, outputTokens: 3 })])

const runSummary = (sessionId: string) =>
  Workflow.run(summary, "  a long text  ", { sessionId }).pipe(
    Effect.provide(Layer.merge(model, SessionStore.layerMemory))
  )

/** A local OTLP/HTTP receiver: the JSON bodies posted to /v1/traces. */
const receiver = Effect.acquireRelease(
  Effect.async<{ readonly url: string; readonly bodies: Array<string>; readonly server: http.Server }>((resume) => {
    const bodies: Array<string> = []
    const server = http.createServer((request, response) => {
      let body = ""
      request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")))
      request.on("end", () => {
        if (request.url === "/v1/traces") bodies.push(body)
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      resume(
        Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, bodies, server })
      )
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
)

describe("Tracing (examples)", () => {
  it("exports over OTLP when an endpoint is configured, else to the console", () => {
    expect(Tracing.exporterFromEnv({})).toBe("console")
    expect(Tracing.exporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toBe("console")
    expect(Tracing.exporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe("otlp")
    expect(Tracing.exporterFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toBe(
      "otlp"
    )
  })

  it.effect("console: a run's spans as one indented tree, with its ids once and the tokens of each model call", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const output = yield* runSummary("console").pipe(
        Effect.provide(Tracing.layer({ exporter: "console", write: (line) => lines.push(line) }))
      )
      const names = lines.map((line) => line.replace(/ [\d.]+ms.*$/, ""))
      expect(names.slice(0, 1)).toEqual(["Workflow.run"])
      expect(names).toContain("  Workflow.step")
      expect(names).toContain("    Agent.run")
      expect(names).toContain("      Agent.modelCall")
      expect(lines[0]).toContain(`run.id=${output.runId}`)
      expect(lines[0]).toContain("session.id=console")
      expect(lines[0]).toContain("gen_ai.usage.total_tokens=12")
      const call = lines.find((line) => line.startsWith("      Agent.modelCall"))!
      expect(call).toContain("gen_ai.usage.input_tokens=9")
      // the run's ids are not repeated below the run
      expect(lines.slice(1).some((line) => line.includes("run.id="))).toBe(false)
    }))

  it.scoped("otlp: the spans reach a collector over HTTP when the layer's scope closes", () =>
    Effect.gen(function*() {
      const { bodies, url } = yield* receiver
      const output = yield* runSummary("otlp").pipe(
        Effect.provide(Tracing.layer({ exporter: "otlp", url, serviceName: "otlp-test" }))
      )
      const sent = bodies.join("\n")
      expect(sent).toContain("\"Workflow.run\"")
      expect(sent).toContain("\"Agent.modelCall\"")
      expect(sent).toContain(output.runId)
      expect(sent).toContain("otlp-test")
    }))

  it.effect("the CLI's --trace takes console or otlp", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(captured(Cli.run(["run", "condition", "--trace", "jaeger"])))
      expect(error).toBeInstanceOf(Cli.UsageError)
      expect((error as Cli.UsageError).message).toMatch(/^run: .*console.*otlp/)
    }))
})
