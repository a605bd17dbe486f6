/**
 * How values, errors and events read for people: JSON previews, the message
 * of an error or a cause, and the transcript lines of a workflow event.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import type * as WorkflowEvent from "../WorkflowEvent.js"

// -----------------------------------------------------------------------------
// values
// -----------------------------------------------------------------------------

/** `JSON.stringify`, or `String` for what JSON cannot render. @internal */
const safeJson = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

/**
 * JSON that stays on one line when it fits in `width` columns, and breaks
 * objects and arrays over indented lines when not.
 *
 * @internal
 */
export const prettyJson = (value: unknown, width: number = 88): string => pretty(value, 0, width, 0)

const pretty = (value: unknown, indent: number, width: number, column: number): string => {
  const compact = safeJson(value)
  if (compact.length + column <= width || value === null || typeof value !== "object") return compact
  const pad = " ".repeat(indent + 2)
  const close = " ".repeat(indent)
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]"
    return `[\n${value.map((v) => pad + pretty(v, indent + 2, width, indent + 2)).join(",\n")}\n${close}]`
  }
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
  if (entries.length === 0) return "{}"
  const fields = entries.map(([k, v]) =>
    `${pad}${JSON.stringify(k)}: ${pretty(v, indent + 2, width, indent + 2 + k.length + 4)}`
  )
  return `{\n${fields.join(",\n")}\n${close}}`
}

/**
 * A value as a transcript shows it: a string as it is, nothing for `null` and
 * `undefined`, anything else as {@link prettyJson}.
 *
 * @internal
 */
const valueText = (u: unknown): string => u === undefined || u === null ? "" : typeof u === "string" ? u : prettyJson(u)

/** A value on one line of at most `max` characters. @internal */
const preview = (u: unknown, max: number = 200): string => {
  if (u === undefined) return "(no content)"
  const s = typeof u === "string" ? u : safeJson(u)
  return s.length > max ? `${s.slice(0, max - 3)}...` : s
}

/** A value on one line of at most `max` characters, whitespace collapsed (`WorkflowEvent.formatLine`). @internal */
export const line = (u: unknown, max: number = 70): string =>
  oneLine(
    (u === undefined || u === null ? "" : typeof u === "string" ? u : safeJson(u)).replace(/\s+/g, " ").trim(),
    max
  )

/** The first `maxLines` lines of a text, and how many more there are. @internal */
const clip = (text: string, maxLines: number): string => {
  const lines = text.split("\n")
  return lines.length <= maxLines
    ? text
    : [...lines.slice(0, maxLines), `… (${lines.length - maxLines} more lines)`].join("\n")
}

/** Tool call arguments as `name="value", n=1`. @internal */
const argumentsText = (args: unknown): string => {
  if (Predicate.isRecord(args)) {
    return Object.entries(args).map(([k, v]) => {
      const text = safeJson(v)
      return `${k}=${text.length > 90 ? `${text.slice(0, 88)}…"` : text}`
    }).join(", ")
  }
  return args === undefined ? "" : safeJson(args)
}

// -----------------------------------------------------------------------------
// errors
// -----------------------------------------------------------------------------

/**
 * A readable text for any error value: its own `message`, unless that is the
 * field dump a `Schema.TaggedError` without a message makes (`@effect/ai`'s
 * `MalformedOutput`, `MalformedInput`), which becomes
 * `module.method: description` (or the cause's text when there is no
 * description).
 *
 * @internal
 */
export const errorText = (error: unknown): string => {
  if (ParseResult.isParseError(error)) return ParseResult.TreeFormatter.formatErrorSync(error)
  if (Predicate.isRecord(error) || error instanceof Error) {
    const record = error as Record<string, unknown>
    const message = typeof record.message === "string" ? record.message.trim() : ""
    // a tagged error without its own message renders its fields as "{ ... }"
    const generated = typeof record._tag === "string" && message.startsWith("{")
    if (message.length > 0 && !generated) return message
    const where = typeof record.module === "string" && typeof record.method === "string"
      ? `${record.module}.${record.method}: `
      : ""
    if (typeof record.description === "string" && record.description.length > 0) {
      return `${where}${record.description}`
    }
    if (where.length > 0 && record.cause !== undefined && record.cause !== error) {
      return `${where}${errorText(record.cause)}`
    }
    if (typeof record._tag === "string") {
      const fields = Object.fromEntries(
        Object.entries(record).filter(([key, value]) => key !== "_tag" && key !== "cause" && value !== undefined)
      )
      return Object.keys(fields).length === 0 ? record._tag : `${record._tag} ${safeJson(fields)}`
    }
  }
  if (typeof error === "string") return error
  return safeJson(error)
}

/**
 * A readable message for an error value: `Tag: text` for tagged errors,
 * where the text is {@link errorText}.
 *
 * @internal
 */
export const errorMessage = (error: unknown): string => {
  const text = errorText(error)
  const tag = Predicate.hasProperty(error, "_tag") ? error._tag : undefined
  return typeof tag === "string" && tag.length > 0 && !text.startsWith(`${tag}:`) && !text.startsWith(tag + " ")
    ? `${tag}: ${text}`
    : text
}

/**
 * A readable message for a cause: `interrupted`, or the {@link errorMessage}
 * of its first failure (else of its defect).
 *
 * @internal
 */
export const causeMessage = (cause: Cause.Cause<unknown>): string => {
  if (Cause.isInterruptedOnly(cause)) return "interrupted"
  const failure = Cause.failureOption(cause)
  return errorMessage(failure._tag === "Some" ? failure.value : Cause.squash(cause))
}

// -----------------------------------------------------------------------------
// events
// -----------------------------------------------------------------------------

/**
 * What a part of an event's text is, for a caller that colours it.
 *
 * @internal
 */
export type Role = "strong" | "dim" | "success" | "failure" | "notice" | "step" | "input" | "tool" | "state"

/** @internal */
export interface FormatOptions {
  readonly paint?: ((role: Role, text: string) => string) | undefined
  readonly elapsed?: number | undefined
  readonly streamed?: boolean | undefined
}

/** Renders one state change, e.g. `shopping_list += ["milk"]`. @internal */
export const formatChange = (change: WorkflowEvent.StateChange): string => {
  const at = change.path.length === 0 ? "(state)" : change.path.join(".")
  switch (change.op) {
    case "set":
      return `${at} = ${preview(change.value)}`
    case "delete":
      return `${at} deleted`
    case "append":
      return `${at} += ${preview(change.items)}`
  }
}

/**
 * An event as the lines of a transcript, indented two spaces per step level.
 * A text delta is its text, without indentation (it continues a line).
 *
 * @internal
 */
export const formatEvent = (event: WorkflowEvent.WorkflowEvent, options: FormatOptions = {}): string => {
  if (event._tag === "TextDelta") return event.delta
  return eventLines(event, options).map(([depth, text]) => indented(event.path.length + depth, text)).join("\n")
}

/** A line of an event: its depth below the event's step, and its text (whose further lines go one level deeper). */
type Line = readonly [depth: number, text: string]

const indented = (depth: number, text: string): string =>
  text.split("\n").map((line, i) => "  ".repeat(i === 0 ? depth : depth + 1) + line).join("\n")

const plain = (_role: Role, text: string) => text

const duration = (ms: number) => (ms < 1000 ? `${ms}ms` : `${(ms / 1000).toFixed(1)}s`)

const oneLine = (text: string, max: number) => {
  const flat = text.replace(/\s*\n\s*/g, " ")
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

/** Container steps show their children, not their content. */
const containers: ReadonlySet<WorkflowEvent.StepKind> = new Set(["steps", "router", "condition", "parallel", "loop"])

const eventLines = (
  event: Exclude<WorkflowEvent.WorkflowEvent, WorkflowEvent.TextDelta>,
  options: FormatOptions
): ReadonlyArray<Line> => {
  const p = options.paint ?? plain
  const took = options.elapsed === undefined ? "" : ` ${p("dim", duration(options.elapsed))}`
  switch (event._tag) {
    case "RunStarted": {
      const user = event.userId === undefined ? "" : `, user ${event.userId}`
      return [
        [0, `${p("strong", `┌ ${event.workflowName}`)} ${p("dim", `(session ${event.sessionId}${user})`)}`],
        [0, `${p("input", "│ »")} ${valueText(event.input)}`]
      ]
    }
    case "RunCompleted":
      return [[
        0,
        `${p("success", "└ ✓ run completed")}${
          options.elapsed === undefined ? "" : ` ${p("dim", `in ${duration(options.elapsed)}`)}`
        }`
      ]]
    case "RunFailed":
      return [[0, `${p("failure", "└ ✗ run failed:")} ${event.error}`]]
    case "RunCancelled":
      return [[0, p("notice", "└ run cancelled")]]
    case "RunPaused":
      return [[
        0,
        `${p("notice", "└ ⏸ run paused at")} ${p("strong", event.stepPath.join(" › "))}: ${preview(event.payload)}`
      ]]
    case "RunResumed":
      return [[
        0,
        `${p("notice", `┌ ▶ run ${event.reason}`)} ${
          p("dim", `from step ${event.fromStep + 1} of ${event.workflowName}`)
        }`
      ]]
    case "StepStarted": {
      const where = event.path.length > 1 ? `  ${p("dim", event.path.join(" › "))}` : ""
      return [[0, `${p("step", "▶")} ${p("strong", event.stepName)} ${p("dim", `(${event.kind})`)}${where}`]]
    }
    case "StepCompleted": {
      const content = options.streamed === true || containers.has(event.kind) ? "" : clip(valueText(event.content), 12)
      const mark = event.success ? p("success", "✓") : p("failure", "✗")
      const line: Line = [0, `${mark} ${event.stepName}${took}${event.success ? "" : p("failure", " (unsuccessful)")}`]
      return content.length === 0 ? [line] : [[1, `${p("dim", "↳ ")}${content}`], line]
    }
    case "StepFailed":
      return [[0, `${p("failure", "✗")} ${event.stepName} ${p("failure", `failed: ${event.error}`)}`]]
    case "Log":
      return [[1, p("dim", event.message)]]
    case "ConditionEvaluated": {
      const branch = event.branch === "none" ? "skipped" : `runs ${event.branch}`
      return [[1, `${p("notice", "?")} ${event.stepName} → ${event.result} ${p("dim", `(${branch})`)}`]]
    }
    case "RouterSelected":
      return [[1, `${p("notice", "↪")} ${event.stepName} → ${p("strong", event.selected.join(", "))}`]]
    case "LoopIterationStarted":
      return [[1, `${p("notice", "↻")} ${event.stepName} iteration ${event.iteration}`]]
    case "LoopIterationCompleted": {
      const ends = event.exhausted
        ? " (loop ends: maxIterations reached before its end condition)"
        : event.done
        ? " (loop ends)"
        : ""
      return [[1, `${p("notice", "↻")} ${event.stepName} iteration ${event.iteration} done${ends}`]]
    }
    case "ParallelStarted":
      return [[1, `${p("notice", "⇉")} ${event.stepName}: ${event.branches.join(", ")}`]]
    case "ParallelCompleted":
      return [[1, `${p("notice", "⇉")} ${event.stepName} done`]]
    case "StateChanged":
      return event.changes.map((change) => [1, `${p("state", "Δ")} ${p("state", oneLine(formatChange(change), 150))}`])
    case "ToolCallStarted":
      return [[1, `${p("tool", "🔧")} ${p("tool", event.toolName)}${p("dim", `(${argumentsText(event.arguments)})`)}`]]
    case "RunRecording":
      return [[1, p("dim", "● recording for replay")]]
    case "ModelReplied":
      return [[
        2,
        p(
          "dim",
          `● model replied${event.agent === undefined ? "" : ` to ${event.agent}`}: ${
            event.reply._tag === "Fail" ? `failed: ${event.reply.error}` : event.reply._tag === "ToolCalls"
              ? `call ${event.reply.calls.map((call) => call.name).join(", ")}`
              : oneLine(event.reply.text, 80)
          }`
        )
      ]]
    case "ToolCallCompleted":
      return options.streamed === true && !event.isError
        ? [[2, p("dim", "→ (the reply above)")]]
        : [[2, `${event.isError ? p("failure", "⚠ ") : p("dim", "→ ")}${valueText(event.result)}`]]
  }
}
