/**
 * Where the examples and the CLI write, and how workflow events are shown.
 *
 * Two modes:
 *
 * - `pretty` (default): a readable transcript — each step as it starts and
 *   finishes (with its path), model text streaming in, tool calls with their
 *   arguments and results, state changes;
 * - `json`: every `WorkflowEvent` as one JSON line on stdout (encoded with its
 *   Schema); everything meant for people goes to stderr, so stdout stays
 *   machine-readable.
 *
 * @since 0.1.0
 */
import { Cli } from "@sessionflow/cli"
import { WorkflowEvent } from "@sessionflow/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly mode: "pretty" | "json"
  /** raw text to standard output */
  readonly stdout: (text: string) => void
  /** raw text to standard error */
  readonly stderr: (text: string) => void
  /** whether ANSI colours may be used */
  readonly color: boolean
}

const colorEnabled = (): boolean =>
  process.stdout.isTTY === true && process.env.NO_COLOR === undefined && process.env.TERM !== "dumb"

/**
 * The output of the current program; defaults to the process's stdout/stderr
 * in pretty mode.
 *
 * @since 0.1.0
 * @category tags
 */
export class Output extends Context.Reference<Output>()("@sessionflow/examples/Output", {
  defaultValue: (): Service => ({
    mode: "pretty",
    // a closed pipe (`npm start … | head`) ends the output, not the program
    stdout: Cli.streamWriter(process.stdout),
    stderr: Cli.streamWriter(process.stderr),
    color: colorEnabled()
  })
}) {}

/**
 * An output that collects everything written, for tests.
 *
 * @since 0.1.0
 * @category constructors
 */
export const capture = (mode: "pretty" | "json" = "pretty") => {
  const out: Array<string> = []
  const err: Array<string> = []
  const service: Service = {
    mode,
    stdout: (text) => void out.push(text),
    stderr: (text) => void err.push(text),
    color: false
  }
  return { service, stdout: () => out.join(""), stderr: () => err.join("") }
}

// -----------------------------------------------------------------------------
// colours
// -----------------------------------------------------------------------------

type Paint = (text: string) => string

const ansi = (enabled: boolean, open: number, close: number): Paint => (text) =>
  enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text

const palette = (enabled: boolean) => ({
  bold: ansi(enabled, 1, 22),
  dim: ansi(enabled, 2, 22),
  red: ansi(enabled, 31, 39),
  green: ansi(enabled, 32, 39),
  yellow: ansi(enabled, 33, 39),
  blue: ansi(enabled, 34, 39),
  magenta: ansi(enabled, 35, 39),
  cyan: ansi(enabled, 36, 39)
})

// -----------------------------------------------------------------------------
// writing lines
// -----------------------------------------------------------------------------

/**
 * Writes a line meant for people: stdout in pretty mode, stderr in JSON mode.
 *
 * @since 0.1.0
 * @category writing
 */
export const say = (text: string = ""): Effect.Effect<void> =>
  Effect.map(Output, (o) => (o.mode === "json" ? o.stderr : o.stdout)(`${text}\n`))

/**
 * Writes an error line (always stderr).
 *
 * @since 0.1.0
 * @category writing
 */
export const error = (text: string): Effect.Effect<void> => Effect.map(Output, (o) => o.stderr(`${text}\n`))

/**
 * A section heading.
 *
 * @since 0.1.0
 * @category writing
 */
export const heading = (text: string): Effect.Effect<void> =>
  Effect.flatMap(Output, (o) => {
    const c = palette(o.color)
    const rule = "═".repeat(Math.max(8, 72 - text.length - 4))
    return say(`\n${c.bold(`══ ${text} `)}${c.dim(rule)}`)
  })

/**
 * A dimmed remark.
 *
 * @since 0.1.0
 * @category writing
 */
export const note = (text: string): Effect.Effect<void> =>
  Effect.flatMap(Output, (o) => say(palette(o.color).dim(text)))

/**
 * Prints a session state (pretty JSON, labelled).
 *
 * @since 0.1.0
 * @category writing
 */
export const state = (label: string, value: unknown): Effect.Effect<void> =>
  Effect.flatMap(Output, (o) => {
    const c = palette(o.color)
    const body = prettyJson(shorten(value)).split("\n").map((l, i) => (i === 0 ? l : `  ${l}`)).join("\n")
    return say(`${c.magenta(`◆ ${label}:`)} ${body}`)
  })

/** Long strings cut for display (the value stays JSON). */
const shorten = (value: unknown): unknown => {
  if (typeof value === "string") return value.length > 100 ? `${value.slice(0, 97).replace(/\n/g, " ")}…` : value
  if (Array.isArray(value)) return value.map(shorten)
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shorten(v)]))
  }
  return value
}

/**
 * JSON that stays on one line when short.
 *
 * @since 0.1.0
 * @category formatting
 */
export const prettyJson = (value: unknown, width: number = 88): string => format(value, 0, width)

const format = (value: unknown, indent: number, width: number, column: number = indent): string => {
  const compact = safeJson(value)
  if (compact.length + column <= width || value === null || typeof value !== "object") return compact
  const pad = " ".repeat(indent + 2)
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]"
    return `[\n${value.map((v) => pad + format(v, indent + 2, width)).join(",\n")}\n${" ".repeat(indent)}]`
  }
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
  if (entries.length === 0) return "{}"
  return `{\n${
    entries.map(([k, v]) => `${pad}${JSON.stringify(k)}: ${format(v, indent + 2, width, indent + 2 + k.length + 4)}`).join(",\n")
  }\n${" ".repeat(indent)}}`
}

const safeJson = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

/**
 * Runs `self` with `Console.log`/`Console.error` going to this output (so
 * evaluators and executors that print follow the mode).
 *
 * @since 0.1.0
 * @category combinators
 */
export const withConsole = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Output, (o) => Cli.withWriters(self, { stdout: o.mode === "json" ? o.stderr : o.stdout, stderr: o.stderr }))

// -----------------------------------------------------------------------------
// rendering events
// -----------------------------------------------------------------------------

const encodeEvent = Schema.encodeSync(WorkflowEvent.WorkflowEvent)

/**
 * One event as the JSON line `--json` prints.
 *
 * @since 0.1.0
 * @category formatting
 */
export const eventJson = (event: WorkflowEvent.WorkflowEvent): string => JSON.stringify(encodeEvent(event))

/**
 * A stateful renderer of one run's events.
 *
 * @since 0.1.0
 * @category models
 */
export interface Renderer {
  readonly render: (event: WorkflowEvent.WorkflowEvent) => void
  /** ends an open line of streamed text */
  readonly flush: () => void
}

const indentOf = (depth: number) => "  ".repeat(Math.max(0, depth))

const seconds = (ms: number) => (ms < 1000 ? `${ms}ms` : `${(ms / 1000).toFixed(1)}s`)

const textOf = (u: unknown): string =>
  u === undefined || u === null ? "" : typeof u === "string" ? u : prettyJson(u)

const clip = (text: string, maxLines: number): string => {
  const lines = text.split("\n")
  return lines.length <= maxLines ? text : [...lines.slice(0, maxLines), `… (${lines.length - maxLines} more lines)`].join("\n")
}

/**
 * Makes a renderer writing to `output`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRenderer = (output: Service): Renderer => {
  if (output.mode === "json") {
    return {
      render: (event) => output.stdout(`${eventJson(event)}\n`),
      flush: () => {}
    }
  }
  const c = palette(output.color)
  const write = output.stdout
  const started = new Map<string, number>()
  const streamed = new Set<string>()
  /** open tool calls: whether something (a team member) streamed text during the call */
  const openCalls = new Map<string, { depth: number; streamed: boolean }>()
  let runStartedAt = 0
  /** the path key of the step whose text is being streamed, when mid-line */
  let openText: { key: string; indent: string; atLineStart: boolean } | undefined

  const flush = () => {
    if (openText !== undefined) {
      if (!openText.atLineStart) write("\n")
      openText = undefined
    }
  }
  const line = (depth: number, text: string) => {
    flush()
    const indent = indentOf(depth)
    write(`${text.split("\n").map((l) => indent + l).join("\n")}\n`)
  }
  const block = (depth: number, head: string, body: string) => {
    const lines = body.split("\n")
    line(depth, `${head}${lines[0] ?? ""}`)
    if (lines.length > 1) line(depth + 1, lines.slice(1).join("\n"))
  }
  const key = (path: ReadonlyArray<string>) => path.join("\u0000")
  const where = (path: ReadonlyArray<string>) => c.dim(path.join(" › "))

  const render = (event: WorkflowEvent.WorkflowEvent): void => {
    const depth = Math.max(0, event.path.length - 1)
    switch (event._tag) {
      case "RunStarted": {
        runStartedAt = event.timestamp
        const user = event.userId === undefined ? "" : `, user ${event.userId}`
        line(0, `${c.bold(`┌ ${event.workflowName}`)} ${c.dim(`(session ${event.sessionId}${user})`)}`)
        block(0, `${c.cyan("│ »")} `, textOf(event.input))
        return
      }
      case "RunCompleted":
        line(0, `${c.green("└ ✓ run completed")} ${c.dim(`in ${seconds(event.timestamp - runStartedAt)}`)}`)
        return
      case "RunFailed":
        line(0, `${c.red("└ ✗ run failed:")} ${event.error}`)
        return
      case "RunCancelled":
        line(0, c.yellow("└ run cancelled"))
        return
      case "StepStarted":
        started.set(key(event.path), event.timestamp)
        line(
          depth + 1,
          `${c.blue("▶")} ${c.bold(event.stepName)} ${c.dim(`(${event.kind})`)}${event.path.length > 1 ? `  ${where(event.path)}` : ""}`
        )
        return
      case "StepCompleted": {
        const k = key(event.path)
        const took = event.timestamp - (started.get(k) ?? event.timestamp)
        const mark = event.success ? c.green("✓") : c.red("✗")
        const showContent = !streamed.has(k) && event.kind !== "steps" && event.kind !== "router" &&
          event.kind !== "condition" && event.kind !== "parallel" && event.kind !== "loop"
        const content = textOf(event.content)
        if (showContent && content.length > 0) block(depth + 2, c.dim("↳ "), clip(content, 12))
        line(depth + 1, `${mark} ${event.stepName} ${c.dim(seconds(took))}${event.success ? "" : c.red(" (unsuccessful)")}`)
        return
      }
      case "StepFailed":
        line(depth + 1, `${c.red("✗")} ${event.stepName} ${c.red(`failed: ${event.error}`)}`)
        return
      case "Log":
        line(depth + 2, c.dim(event.message))
        return
      case "ConditionEvaluated":
        line(depth + 2, `${c.yellow("?")} ${event.stepName} → ${event.result} ${c.dim(`(${event.branch === "none" ? "skipped" : `runs ${event.branch}`})`)}`)
        return
      case "RouterSelected":
        line(depth + 2, `${c.yellow("↪")} ${event.stepName} → ${c.bold(event.selected.join(", "))}`)
        return
      case "LoopIterationStarted":
        line(depth + 2, `${c.yellow("↻")} ${event.stepName} iteration ${event.iteration}`)
        return
      case "LoopIterationCompleted":
        line(depth + 2, `${c.yellow("↻")} ${event.stepName} iteration ${event.iteration} done${event.done ? " (loop ends)" : ""}`)
        return
      case "ParallelStarted":
        line(depth + 2, `${c.yellow("⇉")} ${event.stepName}: ${event.branches.join(", ")}`)
        return
      case "ParallelCompleted":
        line(depth + 2, `${c.yellow("⇉")} ${event.stepName} done`)
        return
      case "StateChanged":
        for (const change of event.changes) {
          const text = WorkflowEvent.formatChange(change).replace(/\s*\n\s*/g, " ")
          line(depth + 2, `${c.magenta("Δ")} ${c.magenta(text.length > 150 ? `${text.slice(0, 149)}…` : text)}`)
        }
        return
      case "ToolCallStarted":
        openCalls.set(event.toolCallId, { depth: event.path.length, streamed: false })
        line(depth + 2, `${c.cyan("🔧")} ${c.cyan(event.toolName)}${c.dim(`(${argsText(event.arguments)})`)}`)
        return
      case "ToolCallCompleted": {
        const call = openCalls.get(event.toolCallId)
        openCalls.delete(event.toolCallId)
        if (call?.streamed === true && !event.isError) {
          line(depth + 3, c.dim("→ (the reply above)"))
        } else {
          block(depth + 3, event.isError ? c.red("⚠ ") : c.dim("→ "), textOf(event.result))
        }
        return
      }
      case "TextDelta": {
        const k = key(event.path)
        streamed.add(k)
        for (const call of openCalls.values()) {
          if (event.path.length > call.depth) call.streamed = true
        }
        if (openText !== undefined && openText.key !== k) flush()
        if (openText === undefined) {
          if (!started.has(k) && event.path.length > 0) {
            // text of something that is not a step of its own: a team member
            line(depth + 2, c.dim(`💬 ${event.path[event.path.length - 1]}:`))
          }
          openText = { key: k, indent: indentOf(depth + 2), atLineStart: true }
        }
        const current = openText
        for (const ch of event.delta.split(/(\n)/)) {
          if (ch === "") continue
          if (ch === "\n") {
            write("\n")
            current.atLineStart = true
          } else {
            write(current.atLineStart ? current.indent + ch : ch)
            current.atLineStart = false
          }
        }
        return
      }
    }
  }
  return { render, flush }
}

const argsText = (args: unknown): string => {
  if (args !== null && typeof args === "object" && !Array.isArray(args)) {
    return Object.entries(args as Record<string, unknown>).map(([k, v]) => {
      const text = safeJson(v)
      return `${k}=${text.length > 90 ? `${text.slice(0, 88)}…"` : text}`
    }).join(", ")
  }
  return args === undefined ? "" : safeJson(args)
}
