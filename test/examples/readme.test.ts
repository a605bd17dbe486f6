import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { agentProgram } from "../../packages/examples/src/ReadmeAgentExample.js"
import { program } from "../../packages/examples/src/ReadmeExample.js"
import { pipelineProgram } from "../../packages/examples/src/ReadmePipelineExample.js"
import { routerProgram } from "../../packages/examples/src/ReadmeRouterExample.js"
import { watchProgram } from "../../packages/examples/src/ReadmeWatchExample.js"

const root = path.resolve(import.meta.dirname, "../..")

describe("README", () => {
  for (
    const file of [
      "ReadmePipelineExample.ts",
      "ReadmeExample.ts",
      "ReadmeRouterExample.ts",
      "ReadmeAgentExample.ts",
      "ReadmeWatchExample.ts"
    ]
  ) {
    it(`shows packages/examples/src/${file} unchanged`, () => {
      const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
      const example = fs.readFileSync(path.join(root, "packages/examples/src", file), "utf8")
      expect(readme).toContain("```ts\n" + example + "```")
    })
  }

  it.effect("the README pipeline passes the agent's typed order to the next steps", () =>
    Effect.gen(function*() {
      const content: string = yield* pipelineProgram
      expect(content).toBe("Order #1 saved: \"Two coffees, please\"")
    }))

  it("the README's first example is the typed pipeline", () => {
    const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
    const first = readme.indexOf("```ts\n")
    expect(readme.slice(first, first + 400)).toContain(
      "const Order = Schema.Struct({ item: Schema.String, quantity: Schema.Int })"
    )
  })

  it.effect("the README example greets once and keeps the count", () =>
    Effect.gen(function*() {
      expect(yield* program).toEqual({ greeted: true, count: 1 })
    }))

  it.effect(
    "the README router escalates the first urgent request (answer, then a ticket) and only answers the next",
    () =>
      Effect.gen(function*() {
        expect(yield* routerProgram).toEqual(["Ticket #1: urgent: the site is down", "Answered: urgent: still down"])
      })
  )

  it.effect("the README watch example follows the session up to its third version, in order", () =>
    Effect.gen(function*() {
      const lines = [...(yield* watchProgram)]
      const versions = lines.map((line) => Number(/^version (\d+): \1 visits \(run [0-9a-f-]{36}\)$/.exec(line)?.[1]))
      expect(versions.at(-1)).toBe(3)
      expect(versions.every((version, i) => i === 0 || version > versions[i - 1]!)).toBe(true)
    }))

  it.effect("the README agent example runs its tool loop on the scripted model", () =>
    Effect.gen(function*() {
      expect(yield* agentProgram).toEqual({ reply: "Added milk and eggs.", items: ["milk", "eggs"] })
    }))
})
