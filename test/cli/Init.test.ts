/**
 * `sessionflow init` writes a minimal app (the packaging test installs it and
 * runs its test); `sessionflow dev` finds a module's workflows.
 */
import { describe, expect, it } from "@effect/vitest"
import { Dev, Init } from "@sessionflow/cli"
import { Step, Workflow } from "@sessionflow/core"
import { WorkflowServer } from "@sessionflow/server"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { root } from "../process.js"
import { inProcess } from "./utils.js"

interface Manifest {
  readonly name: string
  readonly version: string
  readonly dependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly peerDependenciesMeta?: Record<string, { readonly optional?: boolean }>
}

const readJson = (file: string): Manifest => JSON.parse(fs.readFileSync(file, "utf8"))
const manifests = new Map(
  (JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).workspaces as ReadonlyArray<string>)
    .map((dir) => readJson(path.join(root, dir, "package.json")))
    .map((m) => [m.name, m] as const)
)

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-init-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const listing = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort()

describe("sessionflow init", () => {
  it.scoped("writes the app into a new folder and says what to run next", () =>
    Effect.gen(function*() {
      const dir = path.join(yield* tempDir, "My App")
      const result = yield* inProcess(["init", dir])
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      expect(result.stdout).toContain(
        `Wrote a sessionflow app to ${dir}: package.json, tsconfig.json, src/workflows.ts`
      )
      expect(result.stdout).toContain("  npm install\n  npm test\n  npx sessionflow dev src/workflows.ts")
      expect(listing(dir)).toEqual([
        ".gitignore",
        "README.md",
        "package.json",
        "src/workflows.ts",
        "test/workflows.test.ts",
        "tsconfig.json"
      ])
      const manifest = readJson(path.join(dir, "package.json"))
      expect(manifest.name).toBe("my-app")
      // from the registry: the packages it uses, at this version
      const version = manifests.get("@sessionflow/cli")!.version
      expect(manifest.dependencies).toMatchObject({
        "@sessionflow/core": `^${version}`,
        "@sessionflow/server": `^${version}`,
        "@sessionflow/cli": `^${version}`,
        effect: "^3.22.4"
      })
      const tsconfig = JSON.parse(fs.readFileSync(path.join(dir, "tsconfig.json"), "utf8"))
      expect(tsconfig.compilerOptions).toMatchObject({
        strict: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: false
      })
    }))

  it.scoped("refuses a folder that has files, writing nothing; an empty one is fine", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      fs.writeFileSync(path.join(dir, "notes.txt"), "mine\n")
      const refused = yield* inProcess(["init", dir])
      expect(refused).toEqual({
        code: 1,
        stdout: "",
        stderr: `error: '${dir}' is not empty: sessionflow init writes a ` +
          `new app into a new or empty folder (nothing was written)\n`
      })
      expect(fs.readdirSync(dir)).toEqual(["notes.txt"])
      const empty = path.join(dir, "empty")
      fs.mkdirSync(empty)
      expect((yield* inProcess(["init", empty])).code).toBe(0)
    }))

  it.scoped("--packs: the @sessionflow packages from the tarballs in a folder, by relative file: paths", () =>
    Effect.gen(function*() {
      const work = yield* tempDir
      const packs = path.join(work, "packs")
      fs.mkdirSync(packs)
      for (const name of Init.packages) {
        fs.writeFileSync(path.join(packs, `${name.slice(1).replace("/", "-")}-0.1.0.tgz`), "")
      }
      fs.writeFileSync(path.join(packs, "sessionflow-store-sqlite-extra-0.1.0.tgz"), "")
      const app = path.join(work, "app")
      expect((yield* inProcess(["init", app, "--packs", packs])).code).toBe(0)
      const dependencies = readJson(path.join(app, "package.json")).dependencies!
      expect(Object.fromEntries(Object.entries(dependencies).filter(([name]) => name.startsWith("@sessionflow/"))))
        .toEqual({
          "@sessionflow/core": "file:../packs/sessionflow-core-0.1.0.tgz",
          "@sessionflow/store-sql": "file:../packs/sessionflow-store-sql-0.1.0.tgz",
          "@sessionflow/store-sqlite": "file:../packs/sessionflow-store-sqlite-0.1.0.tgz",
          "@sessionflow/server": "file:../packs/sessionflow-server-0.1.0.tgz",
          "@sessionflow/cli": "file:../packs/sessionflow-cli-0.1.0.tgz"
        })
      fs.rmSync(path.join(packs, "sessionflow-server-0.1.0.tgz"))
      const missing = yield* inProcess(["init", path.join(work, "other"), "--packs", packs])
      expect(missing.stderr).toBe(
        `error: no sessionflow-server-*.tgz in '${packs}' (npm run pack writes every package's tarball)\n`
      )
      expect(fs.existsSync(path.join(work, "other"))).toBe(false)
    }))

  it("the app lists every peer of the packages it installs, with their ranges, and the repository's test tools", () => {
    const expected: Record<string, string> = {}
    for (const name of Init.packages) {
      const m = manifests.get(name)!
      // the siblings each package depends on are installed with it
      for (const dependency of Object.keys(m.dependencies ?? {}).filter((d) => d.startsWith("@sessionflow/"))) {
        expect(Init.packages, `${name} depends on ${dependency}`).toContain(dependency)
      }
      for (const [peer, range] of Object.entries(m.peerDependencies ?? {})) {
        if (m.peerDependenciesMeta?.[peer]?.optional !== true) expected[peer] = range
      }
    }
    expect(Init.peers).toEqual(expected)
    const pins = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).devDependencies as Record<
      string,
      string
    >
    for (const [name, range] of Object.entries(Init.devDependencies)) expect(range, name).toBe(pins[name])
  })
})

describe("sessionflow dev: the module's workflows", () => {
  const a = Workflow.make({ name: "a", steps: [Step.make("s", () => Effect.void)] })
  const b = Workflow.make({ name: "b", steps: [Step.make("s", () => Effect.void)] })

  it("a default export array, else the named exports that are workflows (or mounted ones)", () => {
    const mounted = WorkflowServer.withId(b, "bee")
    expect(Dev.workflowsOf({ default: [a, mounted], b })).toEqual([a, mounted])
    expect(Dev.workflowsOf({ a, mounted, answer: 42, default: { a } })).toEqual([a, mounted])
    expect(Dev.workflowsOf({ default: [a, 42] })).toBe(
      "the default export's item 1 is not a workflow (Workflow.make) or a mounted one (WorkflowServer.withLayer)"
    )
    expect(Dev.workflowsOf({ answer: 42 })).toMatch(/^it exports no workflow/)
  })

  it.effect("dev refuses a host other machines reach (its server has no authentication), before loading anything", () =>
    Effect.gen(function*() {
      const refused = yield* inProcess(["dev", "no-such-module.ts", "--host", "0.0.0.0"])
      expect(refused).toEqual({
        code: 1,
        stdout: "",
        stderr: "error: dev listens on a loopback address only (its server has no " +
          "authentication): --host 127.0.0.1, ::1 or localhost, not 0.0.0.0\n"
      })
      expect(yield* inProcess(["dev", "no-such-module.ts"])).toEqual({
        code: 1,
        stdout: "",
        stderr: "error: no module 'no-such-module.ts'\n"
      })
      expect([
        Dev.isLoopback("127.0.0.1"),
        Dev.isLoopback("localhost"),
        Dev.isLoopback("::1"),
        Dev.isLoopback("192.168.1.2")
      ]).toEqual([
        true,
        true,
        true,
        false
      ])
    }))

  it("the URL of an IPv6 host has brackets", () => {
    expect(Dev.urlOf("127.0.0.1", 3000)).toBe("http://127.0.0.1:3000")
    expect(Dev.urlOf("::1", 3000)).toBe("http://[::1]:3000")
  })
})
