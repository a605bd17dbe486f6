/**
 * The `npm install` lines of the READMEs name exactly the peer dependencies
 * the packages declare, with the same ranges.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { root } from "../process.js"

interface Manifest {
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly peerDependenciesMeta?: Record<string, { readonly optional?: boolean }>
}

const manifest = (name: string): Manifest =>
  JSON.parse(fs.readFileSync(path.join(root, "packages", name.replace("@sessionflow/", ""), "package.json"), "utf8"))

/** The peers a package needs (not the optional ones), with its @sessionflow dependencies' peers. */
const peersOf = (name: string): Record<string, string> => {
  const m = manifest(name)
  const inner = Object.keys(m.dependencies ?? {}).filter((d) => d.startsWith("@sessionflow/"))
  const needed = Object.entries(m.peerDependencies ?? {}).filter(([peer]) => m.peerDependenciesMeta?.[peer]?.optional !== true)
  return Object.assign({}, ...inner.map(peersOf), Object.fromEntries(needed))
}

const readmes = ["README.md", ...["core", "store-sql", "store-sqlite", "store-pg", "openai", "cli", "server"].map((p) => `packages/${p}/README.md`)]

describe("README install lines", () => {
  for (const readme of readmes) {
    it(`${readme}: every npm install line names its packages' peers with their declared ranges`, () => {
      const lines = fs.readFileSync(path.join(root, readme), "utf8").split("\n").filter((l) =>
        /^npm install (-D )?@sessionflow\//.test(l)
      )
      expect(lines.length).toBeGreaterThan(0)
      for (const line of lines) {
        const specs = line.split(/\s+/).slice(2).filter((s) => s !== "-D")
        const ours = specs.filter((s) => s.startsWith("@sessionflow/"))
        const expected = Object.assign({}, ...ours.map(peersOf)) as Record<string, string>
        const named = Object.fromEntries(
          specs.filter((s) => !s.startsWith("@sessionflow/")).map((s) => {
            const at = s.lastIndexOf("@")
            return [s.slice(0, at), s.slice(at + 1)]
          })
        )
        expect(named, line).toEqual(expected)
      }
    })
  }
})
