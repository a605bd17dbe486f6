/**
 * `sessionflow init [dir]`: writes a minimal sessionflow app into a new (or
 * empty) folder: `package.json`, one typed workflow (`src/workflows.ts`), its
 * test (vitest with `@effect/vitest`), a strict `tsconfig.json`, a README and
 * a `.gitignore`. `npm install`, then `npm test` passes and `npm run dev`
 * (`sessionflow dev src/workflows.ts`) serves the workflow.
 *
 * With `--packs <folder>` the `@sessionflow` packages come from the tarballs
 * `npm run pack` wrote there (until the packages are on the npm registry).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * The `@sessionflow` packages the app installs: the ones it imports (`core`,
 * `server`), the `sessionflow` command, and the siblings they depend on (which
 * come from the same folder of tarballs).
 *
 * @since 0.1.0
 * @category packages
 */
export const packages = [
  "@sessionflow/core",
  "@sessionflow/store-sql",
  "@sessionflow/store-sqlite",
  "@sessionflow/server",
  "@sessionflow/cli"
] as const

/**
 * The peer dependencies of {@link packages}, with the ranges they declare:
 * the app lists them so that it has one copy of each.
 *
 * @since 0.1.0
 * @category packages
 */
export const peers: Readonly<Record<string, string>> = {
  effect: "^3.22.4",
  "@effect/ai": "^0.37.0",
  "@effect/cli": "^0.77.2",
  "@effect/experimental": "^0.61.1",
  "@effect/platform": "^0.97.2",
  "@effect/platform-node": "^0.108.2",
  "@effect/rpc": "^0.76.2",
  "@effect/sql": "^0.52.1",
  "@effect/sql-sqlite-node": "^0.53.0"
}

/**
 * The app's development dependencies: TypeScript, vitest and `@effect/vitest`.
 *
 * @since 0.1.0
 * @category packages
 */
export const devDependencies: Readonly<Record<string, string>> = {
  "@effect/vitest": "0.30.0",
  "@types/node": "^20.19.0",
  typescript: "~5.9.3",
  vitest: "~3.2.4"
}

/**
 * What `init` was asked for.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** the app's folder: new, or empty */
  readonly dir: string
  /** a folder of the tarballs `npm run pack` writes: the `@sessionflow` packages come from there */
  readonly packs?: string | undefined
  /** the version of the `@sessionflow` packages from the registry (without `packs`) */
  readonly version: string
}

/** A file name of `npm pack`'s: `@sessionflow/core` → `sessionflow-core-<version>.tgz`. */
const tarballPrefix = (name: string) => `${name.replace(/^@/, "").replace("/", "-")}-`

/**
 * Where each of {@link packages} comes from: `file:` its tarball in `packs`
 * (relative to the app), or `^version` from the registry.
 *
 * @since 0.1.0
 * @category packages
 */
export const sources = (options: Options): Effect.Effect<Record<string, string>, Error> =>
  Effect.suspend(() => {
    const packs = options.packs
    if (packs === undefined) {
      return Effect.succeed(
        Object.fromEntries(
          packages.filter((name) => name !== "@sessionflow/store-sql").map((name) => [name, `^${options.version}`])
        )
      )
    }
    if (!fs.existsSync(packs) || !fs.statSync(packs).isDirectory()) {
      return Effect.fail(
        new Error(`no folder '${packs}' (npm run pack writes the tarballs to packs/ in the sessionflow repository)`)
      )
    }
    const files = fs.readdirSync(packs).filter((file) => file.endsWith(".tgz"))
    const found: Record<string, string> = {}
    for (const name of packages) {
      const tarball = files.filter((file) =>
        file.startsWith(tarballPrefix(name)) && /^\d/.test(file.slice(tarballPrefix(name).length))
      ).sort().at(-1)
      if (tarball === undefined) {
        return Effect.fail(
          new Error(`no ${tarballPrefix(name)}*.tgz in '${packs}' (npm run pack writes every package's tarball)`)
        )
      }
      const relative = path.relative(path.resolve(options.dir), path.resolve(packs, tarball)).split(path.sep).join("/")
      found[name] = `file:${relative}`
    }
    return Effect.succeed(found)
  })

/** An npm package name made of a folder's name. */
const packageName = (dir: string) =>
  path.basename(path.resolve(dir)).toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[._-]+/, "") ||
  "sessionflow-app"

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`

/**
 * The `tsconfig.json` a new app gets: the strict settings the packages' types
 * are checked under (the READMEs' code blocks are compiled with them too).
 *
 * @since 0.1.0
 * @category files
 */
export const tsconfig = {
  compilerOptions: {
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    noPropertyAccessFromIndexSignature: true,
    skipLibCheck: false,
    module: "NodeNext",
    moduleResolution: "NodeNext",
    target: "ES2022",
    lib: ["ES2022"],
    types: ["node"],
    noEmit: true
  },
  include: ["src", "test"]
}

const workflows = `import { SessionState, Workflow } from "@sessionflow/core"
import { Schema } from "effect"

// \`sessionflow dev src/workflows.ts\` serves every workflow this module exports

/** What the workflow remembers between runs of one session. */
export class Greetings extends SessionState.Tag("app/Greetings")<Greetings>()({
  names: Schema.Array(Schema.String)
}) {}

/** Greets a name (its input), and remembers who it greeted in this session. */
export const greet = Workflow.make({
  name: "greet",
  input: Schema.String,
  state: Greetings,
  sessionState: { names: [] }
}).pipe(
  Workflow.andThen("greet", ({ input }) =>
    Greetings.modify((s) =>
      s.names.includes(input)
        ? [\`Welcome back, \${input}!\`, s]
        : [\`Hello, \${input}!\`, { names: [...s.names, input] }]
    ))
)
`

const test = `import { describe, expect, it } from "@effect/vitest"
import { SessionStore, Workflow } from "@sessionflow/core"
import { Effect } from "effect"
import { greet } from "../src/workflows.js"

describe("greet", () => {
  it.effect("greets a name, then welcomes it back in the same session", () =>
    Effect.gen(function*() {
      const first = yield* Workflow.run(greet, "Ada", { sessionId: "s1" })
      const second = yield* Workflow.run(greet, "Ada", { sessionId: "s1" })
      expect([first.content, second.content]).toEqual(["Hello, Ada!", "Welcome back, Ada!"])
      expect((yield* Workflow.getSessionState(greet, "s1")).names).toEqual(["Ada"])
    }).pipe(Effect.provide(SessionStore.layerMemory)))
})
`

const readme = (name: string) =>
  `# ${name}

A sessionflow app: \`npm test\` runs its test, \`npm run dev\` serves \`src/workflows.ts\` (the HTTP API
and the session page; it reloads when a file under \`src/\` changes), \`npm run typecheck\` checks the types.
`

const gitignore = `node_modules/
.sessionflow/
`

/**
 * The files of the app, by path relative to its folder.
 *
 * @since 0.1.0
 * @category files
 */
export const files = (options: Options): Effect.Effect<Record<string, string>, Error> =>
  Effect.map(sources(options), (sessionflow) => {
    const name = packageName(options.dir)
    return {
      "package.json": json({
        name,
        private: true,
        type: "module",
        scripts: { test: "vitest run", dev: "sessionflow dev src/workflows.ts", typecheck: "tsc --noEmit" },
        dependencies: { ...sessionflow, ...peers },
        devDependencies
      }),
      "tsconfig.json": json(tsconfig),
      "src/workflows.ts": workflows,
      "test/workflows.test.ts": test,
      "README.md": readme(name),
      ".gitignore": gitignore
    }
  })

/**
 * Writes the app into `options.dir` (created if missing). Fails, writing
 * nothing, when the folder has files; succeeds with the files written.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (options: Options): Effect.Effect<ReadonlyArray<string>, Error> =>
  Effect.gen(function*() {
    const dir = path.resolve(options.dir)
    if (fs.existsSync(dir)) {
      if (!fs.statSync(dir).isDirectory()) {
        return yield* Effect.fail(new Error(`'${options.dir}' is a file, not a folder`))
      }
      if (fs.readdirSync(dir).length > 0) {
        return yield* Effect.fail(
          new Error(
            `'${options.dir}' is not empty: sessionflow init writes ` +
              `a new app into a new or empty folder (nothing was written)`
          )
        )
      }
    }
    const written = yield* files(options)
    yield* Effect.try({
      try: () => {
        for (const [file, text] of Object.entries(written)) {
          fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
          fs.writeFileSync(path.join(dir, file), text, { flag: "wx" })
        }
      },
      catch: (cause) =>
        new Error(
          `cannot write the app into '${options.dir}': ${cause instanceof Error ? cause.message : String(cause)}`
        )
    })
    return Object.keys(written)
  })
