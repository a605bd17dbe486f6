/**
 * The shape of a workflow, recorded with each unfinished run: its step tree
 * (names, kinds, nesting) with a fingerprint, and its `version`. A run's
 * journal says where it stands by step index, so it is carried on only by a
 * workflow of the shape that started it, or one that declares that shape
 * compatible (`resumes`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as SessionStore from "../../SessionStore.js"
import * as WorkflowError from "../../WorkflowError.js"
import type * as step from "../step/node.js"
import type { Any } from "../workflow/model.js"

/** Shapes by workflow value: a workflow is immutable, so its shape is computed once. */
const shapes = new WeakMap<Any, SessionStore.WorkflowShape>()

/**
 * A step of a workflow's step tree, as plain data (see `Workflow.StepNode`).
 *
 * @internal
 */
export interface StepNode {
  readonly name: string
  readonly kind: step.Any["kind"]
  readonly path: ReadonlyArray<string>
  readonly description?: string
  readonly branch?: string
  readonly children?: ReadonlyArray<StepNode>
  readonly recursive?: true
}

/** Trees by workflow value, as shapes. */
const trees = new WeakMap<Any, ReadonlyArray<StepNode>>()

/**
 * The step tree of `self`, from the top level down: each step's name, kind,
 * path (the names from the top level down, as in the events' `path`), the
 * branch it belongs to in its container, and its children (a container
 * listed as its own descendant is not walked again: it is marked
 * `recursive`). The shape is this tree, flattened.
 *
 * @internal
 */
export const treeOf = (self: Any): ReadonlyArray<StepNode> => {
  const known = trees.get(self)
  if (known !== undefined) return known
  const open = new Set<step.Any>()
  const walk = (nodes: ReadonlyArray<step.Any>, prefix: ReadonlyArray<string>, branches?: ReadonlyArray<string>) =>
    nodes.map((node, i): StepNode => {
      const path = [...prefix, node.name]
      const branch = branches?.[i]
      const recursive = node.children !== undefined && open.has(node)
      let children: ReadonlyArray<StepNode> | undefined
      if (node.children !== undefined && !recursive) {
        open.add(node)
        children = walk(node.children, path, node.branches)
        open.delete(node)
      }
      return {
        name: node.name,
        kind: node.kind,
        path,
        ...(node.description === undefined ? {} : { description: node.description }),
        ...(branch === undefined ? {} : { branch }),
        ...(children === undefined ? {} : { children }),
        ...(recursive ? { recursive: true as const } : {})
      }
    })
  const tree = walk(self.steps, [])
  trees.set(self, tree)
  return tree
}

/**
 * The shape of `self`: one line per step, in order, `path kind` (the path of
 * names from the top level down, joined by `/`), a fingerprint of the lines,
 * and the workflow's version.
 *
 * @internal
 */
export const shapeOf = (self: Any): SessionStore.WorkflowShape => {
  const known = shapes.get(self)
  if (known !== undefined) return known
  const steps: Array<string> = []
  const flatten = (nodes: ReadonlyArray<StepNode>): void => {
    for (const node of nodes) {
      steps.push(`${node.path.join("/")} ${node.kind}`)
      if (node.children !== undefined) flatten(node.children)
    }
  }
  flatten(treeOf(self))
  const shape: SessionStore.WorkflowShape = {
    ...(self.version === undefined ? {} : { version: self.version }),
    fingerprint: fingerprint(steps.join("\n")),
    steps
  }
  shapes.set(self, shape)
  return shape
}

/**
 * A 53-bit hash of `text` (cyrb53), as 14 hex digits: it tells shapes apart,
 * it is no security measure.
 */
const fingerprint = (text: string): string => {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, "0")
}

const summary = (shape: SessionStore.WorkflowShape): string => {
  const topLevel = shape.steps.filter((line) => !line.slice(0, line.lastIndexOf(" ")).includes("/")).length
  return `(${shape.version === undefined ? "no version" : `version '${shape.version}'`}, ${topLevel} top-level step${
    topLevel === 1 ? "" : "s"
  }, fingerprint ${shape.fingerprint})`
}

/** The first difference between a recorded shape and the current one. */
const difference = (recorded: SessionStore.WorkflowShape, current: SessionStore.WorkflowShape): string => {
  if (recorded.fingerprint === current.fingerprint) {
    return `the steps are the same, the version is ${
      current.version === undefined ? "none" : `'${current.version}'`
    } instead of ${recorded.version === undefined ? "none" : `'${recorded.version}'`}`
  }
  const was = recorded.steps
  const now = current.steps
  for (let i = 0; i < Math.max(was.length, now.length); i++) {
    if (was[i] === now[i]) continue
    if (was[i] === undefined) return `step ${i + 1} '${now[i]}' is new: the run's workflow ended after step ${i}`
    if (now[i] === undefined) return `step ${i + 1} '${was[i]}' is gone: the workflow now ends after step ${i}`
    return `step ${i + 1} was '${was[i]}', now '${now[i]}'`
  }
  // the same lines with a different fingerprint: not from this version of the shapes
  return "the fingerprint differs"
}

/**
 * Whether `self` may carry on the unfinished run `active`: a run recorded
 * without a shape (stored before shapes were recorded) may; else its shape
 * must be `self`'s, or `self` must list its version or fingerprint in
 * `resumes`.
 *
 * @internal
 */
export const checkShape = (
  self: Any,
  active: SessionStore.ActiveRun
): Effect.Effect<void, WorkflowError.WorkflowChanged> => {
  const recorded = active.shape
  if (recorded === undefined) return Effect.void
  const current = shapeOf(self)
  if (recorded.fingerprint === current.fingerprint && recorded.version === current.version) return Effect.void
  if (
    self.resumes.includes(recorded.fingerprint) ||
    (recorded.version !== undefined && self.resumes.includes(recorded.version))
  ) return Effect.void
  return Effect.fail(
    new WorkflowError.WorkflowChanged({
      runId: active.runId,
      workflowName: self.name,
      recorded: summary(recorded),
      current: summary(current),
      difference: difference(recorded, current)
    })
  )
}
