/**
 * The `npm install` lines of the READMEs name exactly the peer dependencies
 * the packages declare, with the same ranges; a sibling a package needs is a
 * dependency (packed with it), one it may do without an optional peer.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { root } from "../process.js"

interface Manifest {
  readonly name: string
  readonly private?: boolean
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly peerDependenciesMeta?: Record<string, { readonly optional?: boolean }>
}

const readJson = (file: string) => JSON.parse(fs.readFileSync(path.join(root, file), "utf8"))

/** The packages `npm run pack` packs: the workspaces that are not private. */
const libraries: ReadonlyArray<{ readonly dir: string; readonly manifest: Manifest }> =
  (readJson("package.json").workspaces as ReadonlyArray<string>)
    .map((dir) => ({ dir, manifest: readJson(`${dir}/package.json`) as Manifest }))
    .filter(({ manifest }) => manifest.private !== true)

const manifest = (name: string): Manifest => {
  const library = libraries.find((l) => l.manifest.name === name)
  if (library === undefined) throw new Error(`${name} is not a library package of this repository`)
  return library.manifest
}

const ours = (name: string) => name.startsWith("@sessionflow/")

/** The peers a package needs (not the optional ones), with those of the @sessionflow packages it depends on. */
const peersOf = (name: string): Record<string, string> => {
  const m = manifest(name)
  const needed = Object.entries(m.peerDependencies ?? {}).filter(([peer]) =>
    m.peerDependenciesMeta?.[peer]?.optional !== true
  )
  const inner = Object.keys(m.dependencies ?? {}).filter(ours)
  return Object.assign({}, ...inner.map(peersOf), Object.fromEntries(needed))
}

/** `name@range` specs by name (a bare name has the range `""`). */
const parse = (specs: ReadonlyArray<string>): Record<string, string> =>
  Object.fromEntries(specs.map((s) => {
    const at = s.lastIndexOf("@")
    return at > 0 ? [s.slice(0, at), s.slice(at + 1)] : [s, ""]
  }))

const readmes = ["README.md", ...libraries.map(({ dir }) => `${dir}/README.md`)]

const installLines = (readme: string, pattern: RegExp) =>
  fs.readFileSync(path.join(root, readme), "utf8").split("\n").filter((l) => pattern.test(l))

describe("README install lines", () => {
  for (const readme of readmes) {
    it(`${readme}: every registry npm install line names its packages' peers with their declared ranges`, () => {
      const lines = installLines(readme, /^npm install (-D )?@sessionflow\//)
      expect(lines.length).toBeGreaterThan(0)
      for (const line of lines) {
        const named = parse(line.split(/\s+/).slice(2).filter((s) => s !== "-D"))
        const packages = Object.keys(named).filter(ours)
        const expected = Object.assign({}, ...packages.map(peersOf)) as Record<string, string>
        expect(Object.keys(expected).filter(ours), `${line}: a required @sessionflow peer`).toEqual([])
        expect(named, line).toEqual({ ...expected, ...Object.fromEntries(packages.map((p) => [p, ""])) })
      }
    })
  }

  it("README.md: the tarball install line names every peer of every library package (the ones not ours)", () => {
    const lines = installLines("README.md", /^npm install \S+\/\*\.tgz /)
    expect(lines.length).toBe(1)
    const expected = Object.fromEntries(
      libraries.flatMap(({ manifest }) => Object.entries(manifest.peerDependencies ?? {})).filter(([peer]) =>
        !ours(peer)
      )
    )
    expect(parse(lines[0]!.split(/\s+/).slice(3)), lines[0]).toEqual(expected)
  })

  it(
    "a library package depends on the siblings it always needs, " +
      "all packed with it, and has the others as optional peers",
    () => {
      const names = libraries.map(({ manifest }) => manifest.name)
      for (const { manifest } of libraries) {
        expect(names, manifest.name).toEqual(
          expect.arrayContaining(Object.keys(manifest.dependencies ?? {}).filter(ours))
        )
        const siblingPeers = Object.keys(manifest.peerDependencies ?? {}).filter(ours)
        for (const peer of siblingPeers) {
          expect(manifest.peerDependenciesMeta?.[peer]?.optional, `${manifest.name}: ${peer}`).toBe(true)
        }
      }
    }
  )
})
