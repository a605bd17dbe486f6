/**
 * Helpers for the scenarios' offline scripted models (built on core's
 * `TestModel`): what the user asked, which tools the agent already called in
 * this conversation, and small text utilities.
 *
 * A scripted model decides every reply from the request alone — the calling
 * agent, the latest user message, the run input in the system prompt, the
 * tool results — so it plays its scenario for any input of the same kind, in
 * any order, and is deterministic.
 *
 * @since 0.1.0
 */
import type * as Prompt from "@effect/ai/Prompt"
import { Step, StepOutput, type TestModel } from "@sessionflow/core"

/** What core's agent steps put before the run input in a later step's system prompt. */
const RUN_INPUT_MARKER = `${Step.runInputHeading}\n`

/**
 * What the user asked for in this run: the run input a later agent step sees
 * in its system prompt, else the latest user message.
 *
 * @since 0.1.0
 * @category requests
 */
export const userRequest = (request: TestModel.Request): string => {
  const at = request.system.indexOf(RUN_INPUT_MARKER)
  if (at !== -1) return request.system.slice(at + RUN_INPUT_MARKER.length).trim()
  return request.lastUserMessage ?? ""
}

/**
 * A tool call the agent made since the latest user message.
 *
 * @since 0.1.0
 * @category requests
 */
export interface PastCall {
  readonly name: string
  readonly params: unknown
  readonly result: unknown
}

/**
 * The tool calls (with their results) made since the latest user message,
 * oldest first.
 *
 * @since 0.1.0
 * @category requests
 */
export const pastCalls = (request: TestModel.Request): ReadonlyArray<PastCall> => {
  const messages: ReadonlyArray<Prompt.Message> = request.prompt.content
  let lastUser = -1
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "user") {
      lastUser = i
      break
    }
  }
  const calls: Array<{ id: string; name: string; params: unknown; result: unknown }> = []
  for (const message of messages.slice(lastUser + 1)) {
    if (message.role === "assistant") {
      for (const part of message.content) {
        if (part.type === "tool-call") {
          calls.push({ id: part.id, name: part.name, params: part.params, result: undefined })
        }
      }
    } else if (message.role === "tool") {
      for (const part of message.content) {
        const call = calls.find((c) => c.id === part.id)
        if (call !== undefined) call.result = part.result
      }
    }
  }
  return calls.map(({ name, params, result }) => ({ name, params, result }))
}

/**
 * Whether the agent already called `tool` in this conversation.
 *
 * @since 0.1.0
 * @category requests
 */
export const called = (request: TestModel.Request, tool: string): boolean =>
  pastCalls(request).some((c) => c.name === tool)

/**
 * The results of the previous turn's tool calls, as text lines.
 *
 * @since 0.1.0
 * @category requests
 */
export const resultLines = (request: TestModel.Request): ReadonlyArray<string> =>
  request.toolResults.map((r) => StepOutput.contentText(r.result))

/**
 * Splits an enumeration ("milk, bread, and eggs") into its items.
 *
 * @since 0.1.0
 * @category text
 */
export const splitList = (text: string): ReadonlyArray<string> =>
  text
    .split(/\s*,\s*(?:and\s+)?|\s+and\s+|\s*&\s*/i)
    .map((s) => s.trim().replace(/^(?:some|a|an|the)\s+/i, "").replace(/[.!?]+$/, ""))
    .filter((s) => s.length > 0)

/**
 * The first sentence-ish part of a text, without trailing punctuation.
 *
 * @since 0.1.0
 * @category text
 */
export const topicOf = (text: string): string => text.trim().replace(/[.!?]+$/, "")

/**
 * Title Case.
 *
 * @since 0.1.0
 * @category text
 */
export const titleCase = (text: string): string => {
  const small = new Set(["a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to", "with"])
  return text
    .split(/\s+/)
    .filter((w) => w.length > 0)
    .map((w, i) => (i > 0 && small.has(w.toLowerCase()) ? w.toLowerCase() : w[0]!.toUpperCase() + w.slice(1)))
    .join(" ")
}

/**
 * "a, b and c".
 *
 * @since 0.1.0
 * @category text
 */
export const joinAnd = (items: ReadonlyArray<string>): string =>
  items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`
