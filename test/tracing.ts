/**
 * Tracing for tests: `@effect/opentelemetry`'s SDK layer exporting spans to
 * memory (a fresh exporter per call).
 */
import { NodeSdk } from "@effect/opentelemetry"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"

/** An in-memory exporter that keeps its spans when the SDK shuts down (with the layer's scope). */
class KeptSpans extends InMemorySpanExporter {
  override shutdown(): Promise<void> {
    return Promise.resolve()
  }
}

/** Spans exported to memory, through `@effect/opentelemetry`'s SDK layer. */
export const inMemoryTracing = () => {
  const exporter = new KeptSpans()
  const layer = NodeSdk.layer(() => ({
    resource: { serviceName: "sessionflow-test" },
    spanProcessor: new SimpleSpanProcessor(exporter)
  }))
  return { exporter, layer }
}
