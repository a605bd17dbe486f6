/**
 * A session's kept versions: one row each (when, by which run, the keys it
 * changed) with a button that shows the state as committed then and one that
 * forks the session from it; and the differences between two chosen versions.
 */
import { preview } from "./timeline.js"
import { el } from "./tree.js"

export interface VersionInfo {
  readonly version: number
  readonly runId?: string
  readonly committedAt: number
  readonly changed?: ReadonlyArray<string>
}

/** One difference between two JSON values, at a path. */
export interface Difference {
  readonly path: ReadonlyArray<string>
  readonly op: "added" | "removed" | "changed"
  readonly before?: unknown
  readonly after?: unknown
}

const isObject = (u: unknown): u is Record<string, unknown> => u !== null && typeof u === "object" && !Array.isArray(u)

/** The differences from `before` to `after`, path by path (objects key by key; arrays and scalars as wholes). */
export const diff = (before: unknown, after: unknown): ReadonlyArray<Difference> => {
  const out: Array<Difference> = []
  const stack: Array<readonly [unknown, unknown, ReadonlyArray<string>]> = [[before, after, []]]
  while (stack.length > 0) {
    const [a, b, path] = stack.pop()!
    if (isObject(a) && isObject(b)) {
      const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort().reverse()
      for (const key of keys) {
        if (!Object.hasOwn(b, key)) out.push({ path: [...path, key], op: "removed", before: a[key] })
        else if (!Object.hasOwn(a, key)) out.push({ path: [...path, key], op: "added", after: b[key] })
        else stack.push([a[key], b[key], [...path, key]])
      }
    } else if (JSON.stringify(a) !== JSON.stringify(b)) {
      out.push({ path, op: "changed", before: a, after: b })
    }
  }
  return out
}

const describe = (difference: Difference): string => {
  const at = difference.path.length === 0 ? "(the whole state)" : difference.path.join(".")
  switch (difference.op) {
    case "added":
      return `+ ${at} = ${preview(difference.after)}`
    case "removed":
      return `− ${at} (was ${preview(difference.before)})`
    case "changed":
      return `~ ${at}: ${preview(difference.before)} → ${preview(difference.after)}`
  }
}

/** The differences as a list (one item per path), or a line saying there are none. */
export const renderDiff = (differences: ReadonlyArray<Difference>): HTMLElement => {
  if (differences.length === 0) return el("p", "muted", "No differences.")
  const list = el("ul", "diff")
  list.append(...differences.map((difference) => {
    const item = el("li", `op-${difference.op}`, describe(difference))
    item.dataset["path"] = difference.path.join(".")
    return item
  }))
  return list
}

export interface VersionActions {
  readonly show: (version: number) => void
  readonly fork: (version: number) => void
}

/** One row per kept version, newest first; and the two version pickers' options. */
export const renderVersions = (
  body: HTMLTableSectionElement,
  pickers: ReadonlyArray<HTMLSelectElement>,
  versions: ReadonlyArray<VersionInfo>,
  actions: VersionActions,
  time: (millis: number) => string
) => {
  body.replaceChildren(
    ...versions.slice().reverse().map((info) => {
      const row = document.createElement("tr")
      row.dataset["version"] = String(info.version)
      const cells = [
        `v${info.version}`,
        time(info.committedAt),
        info.runId === undefined ? "—" : info.runId.slice(0, 8),
        info.changed === undefined ? "(whole state)" : info.changed.length === 0 ? "(nothing)" : info.changed.join(", ")
      ]
      row.append(...cells.map((text) => el("td", undefined, text)))
      const buttons = el("td", "actions")
      const show = el("button", "show-version", "State")
      show.type = "button"
      show.setAttribute("aria-label", `Show the state at version ${info.version}`)
      show.addEventListener("click", () => actions.show(info.version))
      const fork = el("button", "fork-version", "Fork")
      fork.type = "button"
      fork.setAttribute("aria-label", `Fork the session at version ${info.version}`)
      fork.addEventListener("click", () => actions.fork(info.version))
      buttons.append(show, fork)
      row.append(buttons)
      return row
    })
  )
  for (const [i, picker] of pickers.entries()) {
    picker.replaceChildren(...versions.map((info) => new Option(`v${info.version}`, String(info.version))))
    // the last two versions by default: what the latest commit changed
    const chosen = versions[Math.max(0, versions.length - pickers.length + i)]
    if (chosen !== undefined) picker.value = String(chosen.version)
  }
}
