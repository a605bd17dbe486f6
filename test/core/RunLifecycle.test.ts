import { assert, describe, it } from "@effect/vitest"
import { RunLifecycle, Workflow } from "@sessionflow/core"
import { SchemaAST } from "effect"
import * as fs from "node:fs"

const readme = fs.readFileSync(new URL("../../packages/core/README.md", import.meta.url), "utf8")

describe("RunLifecycle", () => {
  it("the core README's table of transitions is RunLifecycle.table()", () => {
    assert.include(readme, RunLifecycle.table())
  })

  it("every state but the unfinished ones is terminal, and every terminal state is left only by prune", () => {
    const unfinished = RunLifecycle.State.literals.filter((state) => !RunLifecycle.isTerminal(state))
    assert.deepStrictEqual(unfinished, ["queued", "running", "paused", "sleeping", "waiting"])
    for (const transition of RunLifecycle.Transition.literals) {
      const rule = RunLifecycle.rules[transition]
      const fromTerminal = rule.from.filter((state) => state !== "new" && RunLifecycle.isTerminal(state))
      if (transition === "prune") assert.deepStrictEqual(rule.to, ["removed"])
      else assert.deepStrictEqual(fromTerminal, [], `${transition} leaves a terminal state`)
    }
  })

  it("every state is reached by a transition, and every unfinished one is left by one", () => {
    for (const state of RunLifecycle.State.literals) {
      const reached = RunLifecycle.Transition.literals.some((t) => RunLifecycle.rules[t].to.includes(state))
      assert.isTrue(reached, `${state} is reached by no transition`)
      if (RunLifecycle.isTerminal(state)) continue
      const left = RunLifecycle.Transition.literals.some((t) =>
        RunLifecycle.leaves(t, state) && RunLifecycle.rules[t].to.some((to) => to !== state)
      )
      assert.isTrue(left, `${state} is left by no transition`)
    }
  })

  it("the states are Workflow.RunStatus's tags, one for one", () => {
    const tags = Workflow.RunStatus.members.map((member) => {
      const ast = member.fields._tag.ast
      return ast._tag === "PropertySignatureDeclaration" && SchemaAST.isLiteral(ast.type)
        ? String(ast.type.literal)
        : ""
    })
    assert.deepStrictEqual(
      tags.map((tag) => tag.toLowerCase()).sort(),
      RunLifecycle.State.literals.map((state) => state).slice().sort()
    )
  })
})
