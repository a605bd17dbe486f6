/**
 * What the packaging tests share: a scratch folder outside the repository,
 * `npm run pack` into it, the environment of an app's commands, and
 * better-sqlite3's native addon as a local prebuild for the app's install.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { exec, type ProcessResult, root } from "../process.js"

export const readJson = (file: string): Record<string, unknown> => JSON.parse(fs.readFileSync(file, "utf8"))

/** The version of a package installed in the repository. */
export const version = (pkg: string): string =>
  readJson(path.join(root, "node_modules", pkg, "package.json"))["version"] as string

/**
 * The environment of the app's commands: none of the npm settings of the
 * `npm test` that runs this, and not the source condition the tests use.
 */
export const appEnv = (extra: Record<string, string> = {}): Record<string, string | undefined> => ({
  ...Object.fromEntries(Object.keys(process.env).filter((k) => /^npm_/i.test(k)).map((k) => [k, undefined])),
  NODE_OPTIONS: undefined,
  ...extra
})

export const ok = (what: string) => (result: ProcessResult) =>
  result.code === 0
    ? Effect.succeed(result)
    : Effect.fail(new Error(`${what} exited with ${result.code}\n${result.stderr}\n${result.stdout}`))

/** A new folder outside the repository, removed with the scope. */
export const scratch = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), prefix))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

export interface Packed {
  readonly name: string
  readonly filename: string
  readonly files: ReadonlyArray<{ readonly path: string }>
}

/** `npm run pack -- <packs> --json`, as the README says (each package's prepack builds dist/ with tsc -b). */
export const pack = (packs: string) =>
  exec("npm", ["run", "pack", "--silent", "--", packs, "--json"]).pipe(
    Effect.flatMap(ok("npm run pack")),
    Effect.map((result) => JSON.parse(result.stdout) as ReadonlyArray<Packed>)
  )

/**
 * A folder with better-sqlite3's native addon as a local prebuild (the one
 * built for this repository: same version, same Node), so that an app's
 * install finds it instead of downloading it or compiling SQLite for a
 * minute; give it as `npm_config_better_sqlite3_local_prebuilds`.
 */
export const sqlitePrebuilds = (prebuilds: string) =>
  exec("tar", [
    "-czf",
    path.join(
      prebuilds,
      `better-sqlite3-v${
        version("better-sqlite3")
      }-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`
    ),
    "-C",
    path.join(root, "node_modules", "better-sqlite3"),
    "build/Release/better_sqlite3.node"
  ]).pipe(Effect.flatMap(ok("tar")), Effect.as(prebuilds))
