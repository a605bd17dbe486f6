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
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as readline from "node:readline"

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
  /** the next line typed on standard input (none when it ended, or when there is no input) */
  readonly readLine?: (() => Effect.Effect<Option.Option<string>>) | undefined
  /** whether answers read are written after their question (input that is not a terminal echoes nothing) */
  readonly echo?: boolean | undefined
}

const colorEnabled = (): boolean =>
  process.stdout.isTTY === true && process.env["NO_COLOR"] === undefined && process.env["TERM"] !== "dumb"

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
export const capture = (mode: "pretty" | "json" = "pretty", input: ReadonlyArray<string> = []) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const lines = [...input]
  const service: Service = {
    mode,
    stdout: (text) => void out.push(text),
    stderr: (text) => void err.push(text),
    color: false,
    readLine: () => Effect.sync(() => Option.fromNullable(lines.shift())),
    echo: true
  }
  return { service, stdout: () => out.join(""), stderr: () => err.join("") }
}

// -----------------------------------------------------------------------------
// reading answers
// -----------------------------------------------------------------------------

/**
 * Runs `self` with the output reading lines from the process's standard
 * input (opened at the first question, closed when `self` ends, so that the
 * process can exit).
 *
 * @since 0.1.0
 * @category input
 */
export const withStdin = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    let reader: readline.Interface | undefined
    const lines: Array<string> = []
    let ended = false
    let waiting: ((line: Option.Option<string>) => void) | undefined
    const open = () => {
      reader = readline.createInterface({ input: process.stdin, terminal: false })
      reader.on("line", (line) => {
        if (waiting === undefined) return void lines.push(line)
        const resume = waiting
        waiting = undefined
        resume(Option.some(line))
      })
      reader.on("close", () => {
        ended = true
        waiting?.(Option.none())
        waiting = undefined
      })
    }
    const readLine = () =>
      Effect.async<Option.Option<string>>((resume) => {
        if (reader === undefined) open()
        if (lines.length > 0) return resume(Effect.succeed(Option.some(lines.shift()!)))
        if (ended) return resume(Effect.succeed(Option.none()))
        waiting = (line) => resume(Effect.succeed(line))
        return Effect.sync(() => {
          waiting = undefined
        })
      })
    return Effect.flatMap(Output, (output) =>
      self.pipe(
        Effect.provideService(Output, { ...output, readLine, echo: process.stdin.isTTY !== true }),
        Effect.ensuring(Effect.sync(() => reader?.close()))
      ))
  })

/**
 * Asks a question (in pretty mode, on standard output) and reads the answer:
 * a line typed on standard input, or none when the input ended or the output
 * reads none.
 *
 * @since 0.1.0
 * @category input
 */
export const ask = (question: string): Effect.Effect<Option.Option<string>> =>
  Effect.flatMap(Output, (o) => {
    if (o.readLine === undefined) return Effect.succeed(Option.none())
    const write = o.mode === "json" ? o.stderr : o.stdout
    write(painter(o.color)("notice", question))
    return Effect.tap(o.readLine(), (answer) => {
      if (o.echo === true) write(`${Option.getOrElse(answer, () => "")}\n`)
    })
  })

// -----------------------------------------------------------------------------
// colours
// -----------------------------------------------------------------------------

const ansi: Record<WorkflowEvent.Role, readonly [open: number, close: number]> = {
  strong: [1, 22],
  dim: [2, 22],
  failure: [31, 39],
  success: [32, 39],
  notice: [33, 39],
  step: [34, 39],
  state: [35, 39],
  input: [36, 39],
  tool: [36, 39]
}

/**
 * Colours the parts of a text by their role (ANSI escapes), or leaves them
 * plain.
 *
 * @since 0.1.0
 * @category colours
 */
export const painter = (enabled: boolean) => (role: WorkflowEvent.Role, text: string): string =>
  enabled ? `\u001b[${ansi[role][0]}m${text}\u001b[${ansi[role][1]}m` : text

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
 * A section heading, with a dimmed remark under it when `remark` is given.
 *
 * @since 0.1.0
 * @category writing
 */
export const heading = (text: string, remark?: string | undefined): Effect.Effect<void> =>
  Effect.flatMap(Output, (o) => {
    const paint = painter(o.color)
    const rule = "═".repeat(Math.max(8, 72 - text.length - 4))
    const line = say(`\n${paint("strong", `══ ${text} `)}${paint("dim", rule)}`)
    return remark === undefined ? line : Effect.zipRight(line, note(remark))
  })

/**
 * A dimmed remark.
 *
 * @since 0.1.0
 * @category writing
 */
export const note = (text: string): Effect.Effect<void> =>
  Effect.flatMap(Output, (o) => say(painter(o.color)("dim", text)))

/**
 * Prints a session state (JSON that stays on one line when short, long
 * strings cut), labelled.
 *
 * @since 0.1.0
 * @category writing
 */
export const state = (label: string, value: unknown): Effect.Effect<void> =>
  Effect.flatMap(Output, (o) => {
    const body = WorkflowEvent.formatValue(shorten(value)).split("\n").map((l, i) => (i === 0 ? l : `  ${l}`)).join(
      "\n"
    )
    return say(`${painter(o.color)("state", `◆ ${label}:`)} ${body}`)
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
 * Runs `self` with `Console.log`/`Console.error` going to this output (so
 * evaluators and executors that print follow the mode).
 *
 * @since 0.1.0
 * @category combinators
 */
export const withConsole = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(
    Output,
    (o) => Cli.withWriters(self, { stdout: o.mode === "json" ? o.stderr : o.stdout, stderr: o.stderr })
  )

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

/**
 * Makes a renderer writing to `output`: in JSON mode one line per event; in
 * pretty mode each event as `WorkflowEvent.format` renders it, in colour,
 * with how long steps took, and streamed text flowing in as it arrives.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRenderer = (output: Service): Renderer => {
  if (output.mode === "json") {
    return { render: (event) => output.stdout(`${eventJson(event)}\n`), flush: () => {} }
  }
  const paint = painter(output.color)
  const write = output.stdout
  const key = (path: ReadonlyArray<string>) => path.join("\u0000")
  /** when each step (and the run, at the empty path) started */
  const started = new Map<string, number>()
  /** the steps whose text was streamed */
  const streamed = new Set<string>()
  /** open tool calls: whether something (a team member) streamed text during the call */
  const openCalls = new Map<string, { readonly depth: number; streamed: boolean }>()
  /** the step whose text is being streamed, when mid-line */
  let openText: { readonly key: string; readonly indent: string; atLineStart: boolean } | undefined

  const flush = () => {
    if (openText !== undefined && !openText.atLineStart) write("\n")
    openText = undefined
  }

  const streamText = (event: WorkflowEvent.TextDelta) => {
    const k = key(event.path)
    streamed.add(k)
    for (const call of openCalls.values()) {
      if (event.path.length > call.depth) call.streamed = true
    }
    if (openText !== undefined && openText.key !== k) flush()
    if (openText === undefined) {
      const indent = "  ".repeat(Math.max(0, event.path.length - 1) + 2)
      // text of something that is not a step of its own: a team member
      if (!started.has(k) && event.path.length > 0) write(`${indent}${paint("dim", `💬 ${event.path.at(-1)}:`)}\n`)
      openText = { key: k, indent, atLineStart: true }
    }
    const current = openText
    for (const piece of WorkflowEvent.format(event).split(/(\n)/)) {
      if (piece === "") continue
      if (piece === "\n") {
        write("\n")
        current.atLineStart = true
      } else {
        write(current.atLineStart ? current.indent + piece : piece)
        current.atLineStart = false
      }
    }
  }

  const render = (event: WorkflowEvent.WorkflowEvent): void => {
    if (event._tag === "TextDelta") return streamText(event)
    const k = key(event.path)
    let options: WorkflowEvent.FormatOptions = { paint }
    switch (event._tag) {
      case "RunStarted":
      case "RunResumed":
      case "StepStarted":
        started.set(k, event.timestamp)
        break
      case "RunCompleted":
      case "StepCompleted":
        options = { paint, elapsed: event.timestamp - (started.get(k) ?? event.timestamp), streamed: streamed.has(k) }
        break
      case "ToolCallStarted":
        openCalls.set(event.toolCallId, { depth: event.path.length, streamed: false })
        break
      case "ToolCallCompleted":
        options = { paint, streamed: openCalls.get(event.toolCallId)?.streamed === true }
        openCalls.delete(event.toolCallId)
        break
    }
    flush()
    write(`${WorkflowEvent.format(event, options)}\n`)
  }
  return { render, flush }
}

/**
 * Prints a run's events as they arrive (see {@link makeRenderer}: each one
 * as `WorkflowEvent.format` renders it, or as a JSON line) and returns the
 * `RunPaused` event the run ended with, if it paused for a person:
 * `Workflow.stream(wf, input).pipe(Output.print)`.
 *
 * @since 0.1.0
 * @category writing
 */
export const print = <E, R>(
  events: Stream.Stream<WorkflowEvent.WorkflowEvent, E, R>
): Effect.Effect<WorkflowEvent.RunPaused | undefined, E, R> =>
  Effect.flatMap(Output, (output) => {
    const renderer = makeRenderer(output)
    let paused: WorkflowEvent.RunPaused | undefined
    return events.pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          if (event._tag === "RunPaused") paused = event
          renderer.render(event)
        })
      ),
      Effect.ensuring(Effect.sync(() => renderer.flush())),
      Effect.map(() => paused)
    )
  })
