/**
 * A workflow's step tree (`GET /workflows/:name/graph`) drawn as a graph:
 * a sequence top to bottom, a condition's branches, a router's choices and a
 * parallel's branches side by side, a loop's body and a nested workflow's
 * steps boxed inside their step. The nodes are a tree for the keyboard (one
 * tab stop; arrows move, Home / End jump); a run marks the nodes it ran.
 */
import { el } from "./tree.js"

export interface StepNode {
  readonly name: string
  readonly kind: string
  readonly path: ReadonlyArray<string>
  readonly description?: string
  readonly branch?: string
  readonly children?: ReadonlyArray<StepNode>
  readonly recursive?: true
}

/** The key of a step path (names may hold any character). */
export const pathKey = (path: ReadonlyArray<string>): string => JSON.stringify(path)

/** The containers whose children are alternatives or run side by side. */
const sideBySide = new Set(["condition", "router", "parallel"])

const branchLabels: Record<string, string> = { steps: "then", else: "else" }

/** The children of a container in columns: by branch (a condition), or one column each (router, parallel). */
const columns = (node: StepNode): Array<readonly [string, ReadonlyArray<StepNode>]> => {
  const children = node.children ?? []
  if (node.kind !== "condition") {
    return children.map((child) => [node.kind === "router" ? "choice" : "branch", [child]] as const)
  }
  const groups = new Map<string, Array<StepNode>>()
  for (const child of children) {
    const branch = child.branch ?? "steps"
    groups.set(branch, [...(groups.get(branch) ?? []), child])
  }
  if (!groups.has("else")) groups.set("else", [])
  return Array.from(groups, ([branch, nodes]) => [branchLabels[branch] ?? branch, nodes] as const)
}

export interface Graph {
  readonly element: HTMLElement
  /** the node element of each step path */
  readonly nodes: ReadonlyMap<string, HTMLElement>
}

/** Draws `tree` (`label`: the tree's accessible name). */
export const renderGraph = (tree: ReadonlyArray<StepNode>, label: string): Graph => {
  const nodes = new Map<string, HTMLElement>()
  const sequence = (steps: ReadonlyArray<StepNode>, root: boolean): HTMLOListElement => {
    const list = el("ol", "seq")
    list.setAttribute("role", root ? "tree" : "group")
    if (root) list.setAttribute("aria-label", label)
    for (const step of steps) list.append(item(step))
    return list
  }
  const item = (step: StepNode): HTMLLIElement => {
    const li = el("li", "node")
    li.dataset["kind"] = step.kind
    li.dataset["path"] = step.path.join(" › ")
    li.setAttribute("role", "treeitem")
    li.tabIndex = -1
    const box = el("div", "box")
    box.append(el("span", "kind", step.kind), el("span", "name", step.name))
    if (step.kind === "loop") box.append(el("span", "repeat", "↻"))
    if (step.recursive === true) box.append(el("span", "muted", " (itself, again)"))
    if (step.description !== undefined) box.title = step.description
    const status = el("span", "status")
    box.append(status)
    li.append(box)
    li.setAttribute("aria-label", `${step.kind} ${step.name}`)
    const children = step.children ?? []
    if (children.length > 0 || step.kind === "condition") {
      li.setAttribute("aria-expanded", "true")
      if (sideBySide.has(step.kind)) {
        const branches = el("div", "branches")
        branches.setAttribute("role", "group")
        for (const [name, steps] of columns(step)) {
          const column = el("div", "branch")
          column.dataset["branch"] = name
          column.append(
            el("div", "branch-label", name),
            steps.length === 0 ? el("div", "muted", "(passes its input on)") : sequence(steps, false)
          )
          branches.append(column)
        }
        li.append(branches)
      } else {
        li.append(sequence(children, false))
      }
    }
    nodes.set(pathKey(step.path), li)
    return li
  }
  const element: HTMLElement = tree.length === 0 ? el("p", "muted", "No steps.") : sequence(tree, true)
  const items = () => Array.from(element.querySelectorAll<HTMLElement>("li.node"))
  const first = items()[0]
  if (first !== undefined) first.tabIndex = 0
  // one tab stop: the arrows move it
  element.addEventListener("keydown", (event) => {
    const all = items()
    const current = all.indexOf(event.target as HTMLElement)
    if (current === -1) return
    const next = event.key === "ArrowDown" || event.key === "ArrowRight"
      ? all[current + 1]
      : event.key === "ArrowUp" || event.key === "ArrowLeft"
      ? all[current - 1]
      : event.key === "Home"
      ? all[0]
      : event.key === "End"
      ? all[all.length - 1]
      : undefined
    if (next === undefined) return
    event.preventDefault()
    for (const node of all) node.tabIndex = -1
    next.tabIndex = 0
    next.focus()
  })
  element.addEventListener("click", (event) => {
    const node = (event.target as HTMLElement).closest<HTMLElement>("li.node")
    if (node === null) return
    for (const other of items()) other.tabIndex = -1
    node.tabIndex = 0
    node.focus()
  })
  return { element, nodes }
}

/** Marks a step's node with how its last run went (`running`, `completed`, `failed`) and its duration. */
export const markNode = (
  graph: Graph | undefined,
  path: ReadonlyArray<string>,
  status: string,
  detail: string
): void => {
  const node = graph?.nodes.get(pathKey(path))
  if (node === undefined) return
  node.dataset["status"] = status
  const label = node.querySelector(":scope > .box > .status")
  if (label !== null) label.textContent = detail
}

/** Clears the marks of a run. */
export const clearMarks = (graph: Graph | undefined): void => {
  for (const node of graph?.nodes.values() ?? []) {
    delete node.dataset["status"]
    const label = node.querySelector(":scope > .box > .status")
    if (label !== null) label.textContent = ""
  }
}
