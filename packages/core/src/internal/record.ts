/**
 * Recording runs for replay: whether the current run records (a fiber ref
 * `Replay.record` sets), the model a replay answers every agent's calls with,
 * and how a model reply becomes a `ModelReplied` event.
 *
 * @internal
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as WorkflowEvent from "../WorkflowEvent.js"
import * as events from "./events.js"
import type { UsageReport } from "./usage.js"

/** Whether runs record their start state and model replies in their events. @internal */
export const recording: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)

/** The model every agent calls instead of its own or the context's (a replay's). @internal */
export const modelOverride: FiberRef.FiberRef<LanguageModel.Service | undefined> = FiberRef.unsafeMake<
  LanguageModel.Service | undefined
>(undefined)

/** A decoded usage as a recorded one (absent when the provider reported nothing). @internal */
export const usageOf = (usage: UsageReport | undefined): typeof WorkflowEvent.RecordedUsage.Type | undefined => {
  if (usage === undefined || (usage.inputTokens === undefined && usage.outputTokens === undefined)) return undefined
  return {
    inputTokens: usage.inputTokens ?? 0,
    outputTokens: usage.outputTokens ?? 0,
    ...(usage.totalTokens === undefined ? {} : { totalTokens: usage.totalTokens }),
    ...(usage.reasoningTokens === undefined ? {} : { reasoningTokens: usage.reasoningTokens }),
    ...(usage.cachedInputTokens === undefined ? {} : { cachedInputTokens: usage.cachedInputTokens })
  }
}

/** Emits `ModelReplied` when the current run records (else nothing, at the cost of one fiber ref read). @internal */
export const reply = (agent: string | undefined, make: () => WorkflowEvent.RecordedReply): Effect.Effect<void> =>
  Effect.flatMap(
    FiberRef.get(recording),
    (on) =>
      on ? events.emit({ _tag: "ModelReplied", reply: make(), ...(agent === undefined ? {} : { agent }) }) : Effect.void
  )
