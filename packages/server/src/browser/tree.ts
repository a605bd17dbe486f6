/**
 * A JSON value as a collapsible tree: objects and arrays are `<details>`
 * (open), leaves are `key: value` lines.
 */
/** An element with a class and a text. */
export const el = <K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string) => {
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

/**
 * Values nested deeper are shown collapsed to `{…}` / `[…]`, so a deep state never overflows the stack or the layout.
 */
const maxDepth = 40

const node = (
  value: unknown,
  key: string | undefined,
  depth: number
): readonly [HTMLElement, Array<readonly [unknown, string]>] => {
  if (value !== null && typeof value === "object") {
    const isArray = Array.isArray(value)
    const entries = isArray
      ? value.map((v, i) => [v, String(i)] as const)
      : Object.entries(value as Record<string, unknown>).map(([k, v]) => [v, k] as const)
    if (depth >= maxDepth && entries.length > 0) {
      const line = el("div", "leaf")
      line.append(...label(key), el("span", "muted", isArray ? "[…]" : "{…}"))
      line.title = `nested deeper than ${maxDepth} levels`
      return [line, []]
    }
    const details = el("details")
    details.open = true
    const summary = el("summary")
    summary.append(...label(key), el("span", "muted", isArray ? `[${entries.length}]` : `{${entries.length}}`))
    details.append(summary)
    if (key !== undefined) details.dataset["key"] = key
    return [details, entries]
  }
  const line = el("div", "leaf")
  line.append(...label(key), leaf(value))
  return [line, []]
}

/** Renders without recursion: each container's children are appended as they are reached. */
export const renderTree = (value: unknown, key?: string): HTMLElement => {
  const [root, children] = node(value, key, 0)
  const stack: Array<readonly [HTMLElement, Array<readonly [unknown, string]>, number]> = [[root, children, 0]]
  while (stack.length > 0) {
    const [parent, entries, depth] = stack.pop()!
    for (const [child, childKey] of entries) {
      const [element, grandchildren] = node(child, childKey, depth + 1)
      parent.append(element)
      if (grandchildren.length > 0) stack.push([element, grandchildren, depth + 1])
    }
  }
  return root
}
