/**
 * `Workflow.describeSteps`: a workflow's step tree as plain data — every kind
 * of container with its children (a condition's children with their branch),
 * a nested workflow's steps under it, each step's path the path its events
 * carry, and the tree whose flattened lines are the workflow's shape.
 */
import { describe, expect, it } from "@effect/vitest"
import { Condition, Loop, Parallel, Router, SessionStore, Step, Steps, Workflow } from "@sessionflow/core"
import { Chunk, Effect, Schema, Stream } from "effect"

const leaf = (name: string) => Step.make(name, ({ previousStepContent }) => Effect.succeed(previousStepContent))

const inner = Workflow.make({ name: "inner", steps: [leaf("inner a"), leaf("inner b")] })

const everything = Workflow.make({
  name: "everything",
  steps: [
    leaf("first"),
    Condition.make({
      name: "check",
      description: "is it so?",
      evaluator: () => Effect.succeed(true),
      steps: [leaf("yes 1"), leaf("yes 2")],
      elseSteps: [leaf("no")]
    }),
    Router.make({ name: "route", choices: [leaf("left"), leaf("right")], selector: () => "right" }),
    Loop.make({ name: "repeat", steps: [leaf("body")], maxIterations: 2 }),
    Parallel.make("fan", [leaf("branch a"), Steps.make("branch b", [leaf("b1"), leaf("b2")])]),
    Step.workflow("nested", inner)
  ]
})

describe("Workflow.describeSteps", () => {
  it("describes every kind of container, the condition's branches and a nested workflow's steps", () => {
    const l = (path: ReadonlyArray<string>, extra: object = {}) => ({
      name: path[path.length - 1],
      kind: "step",
      path,
      ...extra
    })
    expect(Workflow.describeSteps(everything)).toEqual([
      l(["first"]),
      {
        name: "check",
        kind: "condition",
        path: ["check"],
        description: "is it so?",
        children: [
          l(["check", "yes 1"], { branch: "steps" }),
          l(["check", "yes 2"], { branch: "steps" }),
          l(["check", "no"], { branch: "else" })
        ]
      },
      { name: "route", kind: "router", path: ["route"], children: [l(["route", "left"]), l(["route", "right"])] },
      { name: "repeat", kind: "loop", path: ["repeat"], children: [l(["repeat", "body"])] },
      {
        name: "fan",
        kind: "parallel",
        path: ["fan"],
        children: [
          l(["fan", "branch a"]),
          {
            name: "branch b",
            kind: "steps",
            path: ["fan", "branch b"],
            children: [l(["fan", "branch b", "b1"]), l(["fan", "branch b", "b2"])]
          }
        ]
      },
      {
        name: "nested",
        kind: "workflow",
        path: ["nested"],
        children: [l(["nested", "inner a"]), l(["nested", "inner b"])]
      }
    ])
  })

  it("is data: it encodes with its Schema as it is", () => {
    const tree = Workflow.describeSteps(everything)
    expect(JSON.parse(JSON.stringify(tree))).toEqual(tree)
    expect(Effect.runSync(Effect.forEach(tree, (node) => Effect.orDie(roundTrip(node))))).toEqual(tree)
  })

  it("keeps a condition's branches through a copy of the step (retry, skipOnError)", () => {
    const condition = Condition.make({
      name: "c",
      evaluator: () => Effect.succeed(false),
      steps: [leaf("a")],
      elseSteps: [leaf("b")]
    })
    const workflow = Workflow.make({ name: "copied", steps: [Step.skipOnError(condition)] })
    expect(Workflow.describeSteps(workflow)[0]?.children?.map((c) => c.branch)).toEqual(["steps", "else"])
  })

  it(
    "marks a container listed again inside itself, without walking it twice; a custom container keeps its branches",
    () => {
      const children: Array<Step.Any> = [leaf("inside")]
      const again = Step.container("again", (input, runner) => runner.sequence([], input), {
        children,
        branches: ["first"]
      })
      children.push(again)
      const tree = Workflow.describeSteps(Workflow.make({ name: "recursive", steps: [again] }))
      expect(tree).toEqual([{
        name: "again",
        kind: "container",
        path: ["again"],
        children: [
          { name: "inside", kind: "step", path: ["again", "inside"], branch: "first" },
          { name: "again", kind: "container", path: ["again", "again"], recursive: true }
        ]
      }])
    }
  )

  it.effect("gives each step the path its events carry", () =>
    Effect.gen(function*() {
      const events = yield* Workflow.stream(everything, "go").pipe(
        Stream.runCollect,
        Effect.provide(SessionStore.layerMemory)
      )
      const started = Chunk.toArray(events).flatMap((event) =>
        event._tag === "StepStarted" ? [event.path.join("/")] : []
      )
      const paths = new Set<string>()
      const collect = (nodes: ReadonlyArray<Workflow.StepNode>): void =>
        nodes.forEach((node) => {
          paths.add(node.path.join("/"))
          if (node.children !== undefined) collect(node.children)
        })
      collect(Workflow.describeSteps(everything))
      expect(started.length).toBeGreaterThan(10)
      for (const path of started) expect(paths).toContain(path)
      // the steps not run are the branches not taken
      expect([...paths].filter((path) => !started.includes(path)).sort()).toEqual(["check/no", "route/left"])
    }))
})

/** Decodes a node with `Workflow.StepNode` and encodes it back. */
const roundTrip = (node: Workflow.StepNode) =>
  Effect.flatMap(Schema.decodeUnknown(Workflow.StepNode)(node), Schema.encode(Workflow.StepNode))
