/**
 * Tracing: the spans sessionflow makes for a workflow run (`Workflow.run`,
 * `Workflow.step`, `Agent.run`, `Agent.modelCall`, `Agent.toolCall`, the SQL
 * stores' operations) exported through `@effect/opentelemetry` — to the
 * console, one indented tree per trace on stderr, or over OTLP/HTTP to a
 * collector (Jaeger, Grafana Tempo, an OpenTelemetry Collector, …) when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
 *
 * ```ts no-check
 * import { Tracing } from "@sessionflow/examples"
 *
 * // console, or OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set
 * program.pipe(Effect.provide(Tracing.layer()))
 * ```
 *
 * `npm start -- run <scenario> --trace console` (or `--trace otlp`) and
 * `npm start -- serve --trace …` use it.
 *
 * @since 0.1.0
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import type * as Resource from "@effect/opentelemetry/Resource"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import {
  BatchSpanProcessor,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanExporter
} from "@opentelemetry/sdk-trace-base"
import type * as Layer from "effect/Layer"

/**
 * Where spans go: `console` (a tree per trace on stderr) or `otlp` (OTLP over
 * HTTP, to `OTEL_EXPORTER_OTLP_ENDPOINT` or the given `url`).
 *
 * @since 0.1.0
 * @category models
 */
export type Exporter = "console" | "otlp"

/**
 * `otlp` when an OTLP endpoint is configured in the environment
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`),
 * else `console`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const exporterFromEnv = (env: Readonly<Record<string, string | undefined>> = process.env): Exporter =>
  nonEmpty(env["OTEL_EXPORTER_OTLP_ENDPOINT"]) || nonEmpty(env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
    ? "otlp"
    : "console"

const nonEmpty = (s: string | undefined): boolean => s !== undefined && s.trim().length > 0

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** the `service.name` of the spans (default `sessionflow`) */
  readonly serviceName?: string | undefined
  /** default: {@link exporterFromEnv} */
  readonly exporter?: Exporter | undefined
  /**
   * `otlp`: the traces endpoint (default: the OTLP exporter's, from the
   * environment, else `http://localhost:4318/v1/traces`)
   */
  readonly url?: string | undefined
  /** `console`: where the trees' lines go (default: stderr) */
  readonly write?: ((line: string) => void) | undefined
}

/**
 * `@effect/opentelemetry`'s SDK layer with the chosen exporter: provide it to
 * a program (or a server's layer) and every span it makes is exported. The
 * spans still buffered are flushed when the layer's scope closes.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Resource.Resource> =>
  NodeSdk.layer(() => ({
    resource: { serviceName: options.serviceName ?? "sessionflow" },
    spanProcessor: (options.exporter ?? exporterFromEnv()) === "otlp"
      ? new BatchSpanProcessor(new OTLPTraceExporter(options.url === undefined ? {} : { url: options.url }))
      : new SimpleSpanProcessor(new TreeExporter(options.write ?? ((line) => process.stderr.write(`${line}\n`))))
  }))

// -----------------------------------------------------------------------------
// the console exporter
// -----------------------------------------------------------------------------

type ExportCallback = Parameters<SpanExporter["export"]>[1]

/**
 * Keeps each trace's spans until its root span ends, then writes the trace as
 * an indented tree: each span's name, duration and `sessionflow.*` and
 * `gen_ai.*` attributes (the workflow, session, run and user only where they
 * change).
 */
class TreeExporter implements SpanExporter {
  private readonly traces = new Map<string, Array<ReadableSpan>>()
  constructor(private readonly write: (line: string) => void) {}

  export(spans: Array<ReadableSpan>, done: ExportCallback): void {
    for (const span of spans) {
      const traceId = span.spanContext().traceId
      const trace = this.traces.get(traceId) ?? []
      trace.push(span)
      this.traces.set(traceId, trace)
      if (span.parentSpanContext === undefined) {
        this.traces.delete(traceId)
        for (const line of treeLines(trace)) this.write(line)
      }
    }
    done({ code: 0 })
  }

  shutdown(): Promise<void> {
    this.traces.clear()
    return Promise.resolve()
  }

  forceFlush(): Promise<void> {
    return Promise.resolve()
  }
}

/**
 * The lines of a trace's tree, children in the order they started.
 *
 * @since 0.1.0
 * @category console
 */
export const treeLines = (spans: ReadonlyArray<ReadableSpan>): Array<string> => {
  const children = new Map<string | undefined, Array<ReadableSpan>>()
  const ids = new Set(spans.map((span) => span.spanContext().spanId))
  for (const span of spans) {
    const parent = span.parentSpanContext?.spanId
    const key = parent !== undefined && ids.has(parent) ? parent : undefined
    children.set(key, [...(children.get(key) ?? []), span])
  }
  const lines: Array<string> = []
  const walk = (parent: string | undefined, depth: number, shown: Readonly<Record<string, unknown>>) => {
    const level = [...(children.get(parent) ?? [])].sort((a, b) => millis(a.startTime) - millis(b.startTime))
    for (const span of level) {
      // which workflow, session, run and user a span belongs to is shown where it changes
      const own = Object.entries(span.attributes).filter(([key, value]) =>
        (key.startsWith("gen_ai.") || key.startsWith("sessionflow.")) && !(identities.has(key) && shown[key] === value)
      )
      const attributes = own.map(([key, value]) => `${key.replace(/^sessionflow\./, "")}=${String(value)}`).join(" ")
      const failed = span.status.code === 2 ? " (failed)" : ""
      lines.push(
        `${"  ".repeat(depth)}${span.name} ${millis(span.duration).toFixed(1)}ms${failed}${
          attributes === "" ? "" : `  ${attributes}`
        }`
      )
      walk(span.spanContext().spanId, depth + 1, { ...shown, ...Object.fromEntries(own) })
    }
  }
  walk(undefined, 0, {})
  return lines
}

const identities = new Set([
  "sessionflow.workflow.name",
  "sessionflow.session.id",
  "sessionflow.run.id",
  "sessionflow.user.id"
])

const millis = ([seconds, nanos]: readonly [number, number]): number => seconds * 1000 + nanos / 1e6
