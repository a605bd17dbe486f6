/**
 * A JSON value as a collapsible tree: objects and arrays are `<details>`
 * (open), leaves are `key: value` lines.
 */
const el = <K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string) => {
  const node = document.createElement(tag)
  if (className !== undefined) node.className = className
  if (text !== undefined) node.textContent = text
  return node
}

const leaf = (value: unknown): HTMLElement => {
  const type = value === null ? "null" : typeof value
  return el("span", type, type === "string" ? JSON.stringify(value) : String(value))
}

const label = (key: string | undefined): Array<Node> =>
  key === undefined ? [] : [el("span", "key", key), document.createTextNode(": ")]

export const renderTree = (value: unknown, key?: string): HTMLElement => {
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.entries(value as Record<string, unknown>)
    const details = el("details")
    details.open = true
    const summary = el("summary")
    summary.append(
      ...label(key),
      el("span", "muted", Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`)
    )
    details.append(summary, ...entries.map(([k, v]) => renderTree(v, k)))
    if (key !== undefined) details.dataset["key"] = key
    return details
  }
  const line = el("div", "leaf")
  line.append(...label(key), leaf(value))
  return line
}
