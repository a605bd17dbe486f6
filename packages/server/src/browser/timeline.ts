/**
 * A run's timeline, from its events (as they stream, or replayed from
 * `GET …/runs/:runId/events`): one row per step run — its path, kind, status,
 * duration, output and the state changes it made (its `StateChanged`
 * events) — with the graph's nodes marked as the steps run.
 */
import { type Graph, markNode, pathKey } from "./graph.js"

type Event =
  & { readonly _tag: string; readonly path: ReadonlyArray<string>; readonly timestamp: number }
  & Record<string, any>

interface Change {
  readonly op: string
  readonly path: ReadonlyArray<string | number>
  readonly value?: unknown
  readonly items?: unknown
}

/** A value as one line of at most 160 characters. */
export const preview = (value: unknown) => {
  const text = typeof value === "string" ? value : JSON.stringify(value)
  return text === undefined ? "" : text.length > 160 ? `${text.slice(0, 157)}…` : text
}

const cell = (className: string, text = "") =>
  Object.assign(document.createElement("td"), { className, textContent: text })

/** One state change in words: `set a.b = 1`, `append items ["x"]`, `delete a`. */
export const describeChange = (change: Change): string =>
  `${change.op} ${change.path.join(".")}${
    change.op === "append" ? ` ${preview(change.items)}` : change.op === "set" ? ` = ${preview(change.value)}` : ""
  }`

interface Row {
  readonly element: HTMLTableRowElement
  readonly path: ReadonlyArray<string>
  readonly started: number
  readonly status: HTMLTableCellElement
  readonly duration: HTMLTableCellElement
  readonly output: HTMLTableCellElement
  readonly diff: HTMLUListElement
  done: boolean
}

export class Timeline {
  /** the rows of steps still running, by path (a loop's body runs once per iteration: the latest one) */
  private readonly open = new Map<string, Row>()

  constructor(private readonly body: HTMLTableSectionElement, private readonly graph: () => Graph | undefined) {}

  clear(): void {
    this.open.clear()
    this.body.replaceChildren()
  }

  add(event: Event): void {
    switch (event._tag) {
      case "StepStarted":
        return this.started(event)
      case "StepCompleted":
        return this.finished(event, "completed", preview(event["content"]))
      case "StepFailed":
        return this.finished(event, "failed", String(event["error"]))
      case "RunPaused":
      case "RunCancelled":
      case "RunFailed":
        // the steps still open wait for a response, or were cut off
        for (const row of this.open.values()) {
          if (!row.done) this.end(row, event._tag === "RunPaused" ? "paused" : "stopped", undefined, "")
        }
        return
      case "StateChanged": {
        const row = this.open.get(pathKey(event.path))
        if (row === undefined) return
        for (const change of event["changes"] as ReadonlyArray<Change>) {
          row.diff.append(
            Object.assign(document.createElement("li"), {
              className: `op-${change.op}`,
              textContent: describeChange(change)
            })
          )
        }
        return
      }
    }
  }

  private started(event: Event): void {
    const element = document.createElement("tr")
    element.dataset["path"] = event.path.join(" › ")
    const status = cell("status", "running")
    const duration = cell("duration")
    const output = cell("output")
    const diff = document.createElement("ul")
    diff.className = "diff"
    const changes = cell("changes")
    changes.append(diff)
    const name = cell("step")
    name.style.paddingLeft = `${0.4 + (event.path.length - 1) * 1.1}rem`
    name.textContent = event.path[event.path.length - 1] ?? ""
    name.title = event.path.join(" › ")
    element.append(name, cell("kind", String(event["kind"])), status, duration, output, changes)
    element.dataset["status"] = "running"
    this.body.append(element)
    this.open.set(pathKey(event.path), {
      element,
      path: event.path,
      started: event.timestamp,
      status,
      duration,
      output,
      diff,
      done: false
    })
    markNode(this.graph(), event.path, "running", "running")
  }

  private finished(event: Event, status: string, output: string): void {
    const row = this.open.get(pathKey(event.path))
    if (row === undefined || row.done) return
    this.end(row, status, Math.max(0, event.timestamp - row.started), output)
  }

  /** Ends a row: `millis` undefined for a step that did not finish (paused, cut off). */
  private end(row: Row, status: string, millis: number | undefined, output: string): void {
    row.done = true
    row.element.dataset["status"] = status
    row.status.textContent = status
    row.duration.textContent = millis === undefined ? "" : `${millis} ms`
    row.output.textContent = output
    if (row.diff.childElementCount === 0) {
      row.diff.append(Object.assign(document.createElement("li"), { className: "muted", textContent: "no change" }))
    }
    markNode(this.graph(), row.path, status, millis === undefined ? status : `${millis} ms`)
  }
}
