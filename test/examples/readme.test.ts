import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { program } from "../../packages/examples/src/ReadmeExample.js"

const root = path.resolve(import.meta.dirname, "../..")

describe("README", () => {
  it("shows packages/examples/src/ReadmeExample.ts unchanged", () => {
    const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
    const example = fs.readFileSync(path.join(root, "packages/examples/src/ReadmeExample.ts"), "utf8")
    expect(readme).toContain("```ts\n" + example + "```")
  })

  it.effect("the README example greets once and keeps the count", () =>
    Effect.gen(function*() {
      expect(yield* program).toEqual({ greeted: true, count: 1 })
    }))
})
