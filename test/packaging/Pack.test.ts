/**
 * Installs the library packages the way the README's "Install" says, in a
 * fresh app outside the repository: `npm run pack` writes every tarball to one
 * folder, and the README's one `npm install` line installs them with their
 * peers. Then it compiles the README's "Use in your own project" example there
 * with a strict consumer's settings under NodeNext and Bundler resolution, runs
 * it twice with plain node (no tsx), then the installed `sessionflow` command
 * on the database it wrote.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { exec, root } from "../process.js"
import { appEnv, ok, pack, readJson, scratch, sqlitePrebuilds, version } from "./app.js"

/** The packages `npm run pack` packs: the workspaces that are not private. */
const libraries = (readJson(path.join(root, "package.json"))["workspaces"] as ReadonlyArray<string>)
  .map((dir) => readJson(path.join(root, dir, "package.json")))
  .filter((manifest) => manifest["private"] !== true)
  .map((manifest) => manifest["name"] as string)

/** The README's install line for the tarballs, as the arguments of `npm install`, the tarballs found in `packs`. */
const readmeInstall = (packs: string): ReadonlyArray<string> => {
  const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
  const line = readme.split("\n").find((l) => /^npm install \S+\/\*\.tgz /.test(l))
  if (line === undefined) throw new Error("no `npm install <folder>/*.tgz …` line in README.md")
  const [, , , ...peers] = line.split(/\s+/)
  const tarballs = fs.readdirSync(packs).filter((f) => f.endsWith(".tgz")).map((f) => path.join(packs, f))
  return [...tarballs, ...peers]
}

/** The README's "Use in your own project" example: the app's main module. */
const readmeExample = (): string => {
  const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
  const section = readme.slice(readme.indexOf("## Use in your own project"))
  const match = /```ts\n([\s\S]*?)```/.exec(section)
  if (match === null) throw new Error("no TypeScript example under 'Use in your own project' in README.md")
  return match[1]!
}

/** The other packages' public types must compile in the app too. */
const others = `import { OpenAIChat } from "@sessionflow/openai"
import { Cli } from "@sessionflow/cli"
import { SessionStore, TestModel } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { PgSessionStore } from "@sessionflow/store-pg"

export const model = OpenAIChat.model("gpt-4o-mini")
export const scripted = TestModel.layer([TestModel.text("hi")])
export const inspect = SqliteSessionStore.layer({
  filename: "sessions.db",
  readonly: true,
  table: "sessionflow_sessions"
})
export const memory = SessionStore.layerMemory
export const shared = PgSessionStore.layer({
  url: "postgres://app@db.internal:5432/app",
  schema: "sessions",
  maxConnections: 5
})
export const fromEnvironment = PgSessionStore.layerConfig()
export const help = Cli.main(["--help"])
`

/** The server, on plain node from the tarball: its API, its page and the page's compiled script. */
const serverApp = `import * as HttpServer from "@effect/platform/HttpServer"
import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { WorkflowServer } from "@sessionflow/server"
import { Context, Effect, Layer, Schema } from "effect"

class Count extends SessionState.Tag("app/Count")<Count>()({ n: Schema.Number }) {}
const count = Workflow.make({
  name: "count",
  state: Count,
  sessionState: { n: 0 },
  steps: [Step.make("inc", () => Count.update((s) => ({ n: s.n + 1 })))]
})

const program = Effect.gen(function*() {
  const context = yield* Layer.build(
    WorkflowServer.serve({ workflows: [count], port: 0 }).pipe(Layer.provide(SessionStore.layerMemory))
  )
  const address = Context.get(context, HttpServer.HttpServer).address
  const url = address._tag === "TcpAddress" ? \`http://127.0.0.1:\${address.port}\` : ""
  return yield* Effect.promise(async () => {
    const run = await fetch(\`\${url}/workflows/count/runs\`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: null, sessionId: "s" })
    }).then((r) => r.json() as Promise<{ readonly state: unknown }>)
    const page = await fetch(\`\${url}/\`).then((r) => r.text())
    const script = await fetch(\`\${url}/assets/app.js\`)
    return [JSON.stringify(run.state), page.includes("/assets/app.js"), script.status].join(" ")
  })
})

Effect.runPromise(Effect.scoped(program)).then(console.log)
`

/**
 * The cluster placement on plain node from the tarball: one process as a
 * whole cluster, 8 runs at once on one session. Compiled on its own with the
 * DOM library added (`@effect/rpc`'s declarations, under `@effect/cluster`,
 * name DOM's `Transferable`; see the cluster package's README).
 */
const clusterApp = `import { SqliteClient } from "@effect/sql-sqlite-node"
import { ClusterPlacement } from "@sessionflow/cluster"
import { SessionState, SessionStore, Workflow } from "@sessionflow/core"
import { Effect, Layer, Schema } from "effect"

class Count extends SessionState.Tag("app/ClusterCount")<Count>()({ n: Schema.Number }) {}
const count = Workflow.make({ name: "count", state: Count, sessionState: { n: 0 } }).pipe(
  Workflow.andThen("inc", () => Count.modify((s) => [s.n + 1, { n: s.n + 1 }]))
)
const Placed = ClusterPlacement.layerSingleRunner({ workflows: [count], runnerStorage: "memory" }).pipe(
  Layer.provideMerge(SessionStore.layerMemory),
  Layer.provide(SqliteClient.layer({ filename: ":memory:" }))
)
const program = Effect.forEach([1, 2, 3, 4, 5, 6, 7, 8], () => Workflow.run(count, null, { sessionId: "s" }), {
  concurrency: "unbounded"
}).pipe(
  Effect.map((outputs) => outputs.map((o) => o.content).sort((a, b) => a - b).join(",")),
  Effect.provide(Placed)
)

Effect.runPromise(program).then(console.log)
`

const strict = {
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  noPropertyAccessFromIndexSignature: true,
  skipLibCheck: false,
  target: "ES2022",
  lib: ["ES2022"],
  types: ["node"]
}

const tsconfigs = {
  nodenext: { module: "NodeNext", moduleResolution: "NodeNext" },
  bundler: { module: "ESNext", moduleResolution: "Bundler" }
} as const

describe("the published packages", () => {
  it.scoped(
    "install from their tarballs into a fresh app, compile strictly (NodeNext and Bundler) and run on plain node",
    () =>
      Effect.gen(function*() {
        const work = yield* scratch("sessionflow-consumer-")
        expect(path.relative(root, work).startsWith("..")).toBe(true)
        const packs = path.join(work, "packs")
        const app = path.join(work, "app")
        const prebuilds = path.join(work, "prebuilds")
        for (const dir of [packs, app, prebuilds]) fs.mkdirSync(dir)

        // npm run pack, as the README says (each package's prepack builds dist/ with tsc -b)
        const tarballs = yield* pack(packs)
        expect(tarballs.map((t) => t.name)).toEqual(libraries)
        for (const tarball of tarballs) {
          const files = tarball.files.map((f) => f.path)
          expect(files, tarball.name).toEqual(expect.arrayContaining([
            "package.json",
            "README.md",
            "LICENSE",
            "dist/index.js",
            "dist/index.d.ts",
            "dist/index.js.map",
            "dist/index.d.ts.map",
            "src/index.ts"
          ]))
          expect(files.filter((f) => !/^(dist|src|bin)\/|^(package\.json|README\.md|LICENSE)$/.test(f)), tarball.name)
            .toEqual([])
          expect(files.some((f) => f.endsWith(".tsbuildinfo")), tarball.name).toBe(false)
        }

        // better-sqlite3's native addon, a local prebuild for the install
        yield* sqlitePrebuilds(prebuilds)
        const sqliteVersion = version("better-sqlite3")

        fs.writeFileSync(
          path.join(app, "package.json"),
          JSON.stringify(
            {
              name: "sessionflow-consumer",
              private: true,
              type: "module",
              devDependencies: { typescript: version("typescript"), "@types/node": version("@types/node") },
              overrides: { "better-sqlite3": sqliteVersion }
            },
            null,
            2
          )
        )
        fs.mkdirSync(path.join(app, "src"))
        fs.writeFileSync(path.join(app, "src", "main.ts"), readmeExample())
        fs.writeFileSync(path.join(app, "src", "others.ts"), others)
        fs.writeFileSync(path.join(app, "src", "server.ts"), serverApp)
        fs.mkdirSync(path.join(app, "src-cluster"))
        fs.writeFileSync(path.join(app, "src-cluster", "cluster.ts"), clusterApp)
        fs.writeFileSync(
          path.join(app, "tsconfig.cluster.json"),
          JSON.stringify(
            {
              compilerOptions: { ...strict, ...tsconfigs.nodenext, lib: [...strict.lib, "DOM"], outDir: "out-cluster" },
              include: ["src-cluster"]
            },
            null,
            2
          )
        )
        for (const [name, resolution] of Object.entries(tsconfigs)) {
          fs.writeFileSync(
            path.join(app, `tsconfig.${name}.json`),
            JSON.stringify(
              { compilerOptions: { ...strict, ...resolution, outDir: `out-${name}` }, include: ["src"] },
              null,
              2
            )
          )
        }

        // the README's npm install line, and npm publish --dry-run of every tarball at the same time
        const [, ...published] = yield* Effect.all([
          exec("npm", ["install", ...readmeInstall(packs), "--prefer-offline", "--no-audit", "--no-fund"], {
            cwd: app,
            env: appEnv({ npm_config_better_sqlite3_local_prebuilds: prebuilds })
          }).pipe(Effect.flatMap(ok("npm install"))),
          ...tarballs.map((t) =>
            exec("npm", ["publish", "--dry-run", path.join(packs, t.filename)], { cwd: work, env: appEnv() }).pipe(
              Effect.flatMap(ok(`npm publish --dry-run ${t.filename}`))
            )
          )
        ], { concurrency: 2 })
        for (const [i, result] of published.entries()) {
          expect(`${result.stdout}${result.stderr}`).toContain(`+ ${tarballs[i]!.name}@`)
        }

        // effect is a peer of every library package, so the app has one copy
        for (const name of libraries) {
          const manifest = readJson(path.join(app, "node_modules", name, "package.json"))
          expect(manifest["peerDependencies"], name).toHaveProperty("effect")
          expect(manifest["dependencies"] ?? {}, name).not.toHaveProperty("effect")
        }
        const effects = yield* exec("npm", ["ls", "effect", "--all", "--parseable"], { cwd: app, env: appEnv() }).pipe(
          Effect.flatMap(ok("npm ls effect"))
        )
        expect(new Set(effects.stdout.trim().split("\n"))).toEqual(
          new Set([path.join(fs.realpathSync(app), "node_modules", "effect")])
        )

        // compile with the strict settings, both resolutions
        const tsc = path.join(app, "node_modules", "typescript", "bin", "tsc")
        yield* Effect.all(
          [...Object.keys(tsconfigs), "cluster"].map((name) =>
            exec(process.execPath, [tsc, "-p", `tsconfig.${name}.json`], { cwd: app, env: appEnv() }).pipe(
              Effect.flatMap(ok(`tsc (${name})`))
            )
          ),
          { concurrency: 2 }
        )

        // run on plain node: the example runs the workflow twice; a second process continues the session
        const db = path.join(app, "sessions.db")
        const node = (script: string) =>
          exec(process.execPath, [script], { cwd: app, env: appEnv() }).pipe(Effect.flatMap(ok(`node ${script}`)))
        expect((yield* node("out-nodenext/main.js")).stdout).toBe("{ count: 2 }\n")
        expect((yield* node("out-bundler/main.js")).stdout).toBe("{ count: 4 }\n")
        // the server logs where it listens, then the app prints what it fetched
        const served = (yield* node("out-nodenext/server.js")).stdout.trimEnd().split("\n")
        expect(served.at(-1)).toBe("{\"n\":1} true 200")
        expect(served.slice(0, -1).join("\n")).toMatch(/sessionflow server listening on http:\/\/127\.0\.0\.1:\d+/)

        // the cluster placement: the runs on one session one after the other, none conflicting
        expect((yield* node("out-cluster/cluster.js")).stdout.trimEnd().split("\n").at(-1)).toBe("1,2,3,4,5,6,7,8")

        // the installed command reads it back
        const bin = path.join(app, "node_modules", ".bin", "sessionflow")
        const state = yield* exec(bin, ["state", "--db", db, "user-1", "--json"], { cwd: app, env: appEnv() }).pipe(
          Effect.flatMap(ok("sessionflow state"))
        )
        expect(state.stdout).toBe(`{"count":4}\n`)
        const list = yield* exec(bin, ["sessions", "list", "--db", db], { cwd: app, env: appEnv() }).pipe(
          Effect.flatMap(ok("sessionflow sessions list"))
        )
        expect(list.stdout).toContain(`1 session in ${db}:`)
        expect(list.stdout).toContain("workflow: visits")
        expect(list.stdout).toContain("4 runs, version 4")
      }),
    300_000
  )
})
