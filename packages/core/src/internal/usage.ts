/**
 * The token usage of a run: every model call an agent makes inside a
 * workflow run (its team members' included) adds what the provider reported
 * to the run's counter (found with the run's questions, `currentQuestions`),
 * which the run keeps with its record.
 *
 * @internal
 */
import type * as Response from "@effect/ai/Response"
import type * as SessionStore from "../SessionStore.js"

/** A run's running totals (one object per attempt, shared by the fibers of its steps). @internal */
export class UsageCounter {
  inputTokens = 0
  outputTokens = 0
  totalTokens = 0
  reasoningTokens: number | undefined = undefined
  cachedInputTokens: number | undefined = undefined
  modelCalls = 0
  constructor(from?: SessionStore.RunUsage) {
    if (from === undefined) return
    this.inputTokens = from.inputTokens
    this.outputTokens = from.outputTokens
    this.totalTokens = from.totalTokens
    this.reasoningTokens = from.reasoningTokens
    this.cachedInputTokens = from.cachedInputTokens
    this.modelCalls = from.modelCalls
  }
  /** Adds one model call's usage (counts the provider did not report count as 0). */
  add(usage: UsageReport | undefined): void {
    this.modelCalls++
    if (usage === undefined) return
    const input = usage.inputTokens ?? 0
    const output = usage.outputTokens ?? 0
    this.inputTokens += input
    this.outputTokens += output
    this.totalTokens += usage.totalTokens ?? input + output
    if (usage.reasoningTokens !== undefined) this.reasoningTokens = (this.reasoningTokens ?? 0) + usage.reasoningTokens
    if (usage.cachedInputTokens !== undefined) {
      this.cachedInputTokens = (this.cachedInputTokens ?? 0) + usage.cachedInputTokens
    }
  }
  /** The totals as a run keeps them; undefined when no model was called. */
  get value(): SessionStore.RunUsage | undefined {
    if (this.modelCalls === 0) return undefined
    return {
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
      totalTokens: this.totalTokens,
      ...(this.reasoningTokens === undefined ? {} : { reasoningTokens: this.reasoningTokens }),
      ...(this.cachedInputTokens === undefined ? {} : { cachedInputTokens: this.cachedInputTokens }),
      modelCalls: this.modelCalls
    }
  }
}

/** A record's or journal's `usage` field: the counter's totals, when a model was called. @internal */
export const usageField = (counter: UsageCounter): { readonly usage?: SessionStore.RunUsage } => {
  const usage = counter.value
  return usage === undefined ? {} : { usage }
}

/** What a provider reports of one call (`Response.Usage`, decoded or encoded). @internal */
export type UsageReport = Pick<
  Response.Usage,
  "inputTokens" | "outputTokens" | "totalTokens" | "reasoningTokens" | "cachedInputTokens"
>

/** The span attributes of a usage (OpenTelemetry's GenAI names). @internal */
export const usageAttributes = (usage: UsageReport | SessionStore.RunUsage | undefined): Record<string, number> => {
  if (usage === undefined) return {}
  const attributes: Record<string, number> = {}
  if (usage.inputTokens !== undefined) attributes["gen_ai.usage.input_tokens"] = usage.inputTokens
  if (usage.outputTokens !== undefined) attributes["gen_ai.usage.output_tokens"] = usage.outputTokens
  const total = usage.totalTokens ??
    (usage.inputTokens === undefined && usage.outputTokens === undefined
      ? undefined
      : (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0))
  if (total !== undefined) attributes["gen_ai.usage.total_tokens"] = total
  if (usage.reasoningTokens !== undefined) attributes["gen_ai.usage.reasoning_tokens"] = usage.reasoningTokens
  if (usage.cachedInputTokens !== undefined) attributes["gen_ai.usage.cached_input_tokens"] = usage.cachedInputTokens
  return attributes
}
