/**
 * What a chaos run records, one JSON object a line, in its folder:
 *
 * - `history-<worker>.jsonl`: each client's calls, an `invoke` line before
 *   and a `complete` line after (ok with what it was told, or the error's
 *   `_tag` and fields), with epoch-millisecond times;
 * - `effects.jsonl`: every step's side effects, appended by whichever process
 *   runs the step (`fs.appendFileSync`, one write a line);
 * - `controller.jsonl`: the processes started and ended, the faults, and
 *   samples of PostgreSQL's connections per process;
 * - `snapshot.json`: what the store holds at the end (see `snapshot.ts`);
 * - `meta.json`: the run's options, and the command that replays it.
 */
import * as fs from "node:fs"
import * as path from "node:path"

export interface Invoke {
  readonly type: "invoke"
  readonly t: number
  readonly worker: string
  readonly pid: number
  /** unique in the run: `<worker>.<incarnation>.<n>` */
  readonly id: string
  readonly op: string
  readonly args: Readonly<Record<string, unknown>>
}

export interface ToldError {
  readonly _tag: string
  readonly [field: string]: unknown
}

export interface Complete {
  readonly type: "complete"
  readonly t: number
  readonly worker: string
  readonly pid: number
  readonly id: string
  readonly op: string
  readonly ok: boolean
  readonly value?: unknown
  readonly error?: ToldError
}

export type Phase = "begin" | "end" | "took" | "answer"

/** A step's side effect. */
export interface StepEffect {
  readonly type: "effect"
  readonly t: number
  readonly pid: number
  readonly runId: string
  readonly sessionId: string
  readonly wf: string
  readonly step: string
  readonly phase: Phase
  /** the run input's token: the op that sent it */
  readonly token: string
  /** what a wait took (`took`), the answer a pause got (`answer`), the list appended to (`end` of `append`) */
  readonly value?: unknown
}

export type FaultKind = "kill" | "stop" | "cont" | "terminate" | "lock" | "unlock"

interface Fault {
  readonly type: "fault"
  readonly t: number
  readonly kind: FaultKind
  /** the worker's name (a lock: the store) */
  readonly target: string
  readonly pid?: number | undefined
  readonly detail?: string | undefined
}

interface Proc {
  readonly type: "proc"
  readonly t: number
  readonly name: string
  readonly role: "client" | "supervisor"
  readonly pid: number
  readonly event: "start" | "exit"
  readonly code?: number | string | null | undefined
}

interface Conns {
  readonly type: "conns"
  readonly t: number
  /** open connections by application_name */
  readonly counts: Readonly<Record<string, number>>
}

/** The controller's own notes: the phases of the run. */
interface Note {
  readonly type: "note"
  readonly t: number
  readonly text: string
}

export type Line = Invoke | Complete | StepEffect | Fault | Proc | Conns | Note

export const append = (file: string, line: Line): void => fs.appendFileSync(file, JSON.stringify(line) + "\n")

/** The lines of a JSONL file (a torn last line, from a process killed mid-write, is left out). */
const readLines = (file: string): Array<Line> => {
  if (!fs.existsSync(file)) return []
  const lines: Array<Line> = []
  for (const text of fs.readFileSync(file, "utf8").split("\n")) {
    if (text.trim() === "") continue
    try {
      lines.push(JSON.parse(text) as Line)
    } catch {
      // a torn line
    }
  }
  return lines
}

/** Every line of a run's folder, in time order. */
export const readFolder = (dir: string): Array<Line> =>
  fs.readdirSync(dir)
    .filter((name) => name.endsWith(".jsonl"))
    .flatMap((name) => readLines(path.join(dir, name)))
    .sort((a, b) => a.t - b.t)

/** An error as a caller was told it: its `_tag` and its fields, JSON-safe (no `cause`). */
export const toldError = (error: unknown): ToldError => {
  if (typeof error !== "object" || error === null) return { _tag: "Defect", message: String(error) }
  const fields: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(error)) {
    if (key === "cause") continue
    try {
      fields[key] = JSON.parse(JSON.stringify(value ?? null))
    } catch {
      fields[key] = String(value)
    }
  }
  const tag = "_tag" in error && typeof error._tag === "string" ? error._tag : "Defect"
  const message = error instanceof Error ? error.message : undefined
  return { ...fields, _tag: tag, ...(message === undefined ? {} : { message: message.slice(0, 300) }) }
}
