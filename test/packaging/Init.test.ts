/**
 * The README's walkthrough for a new app, on the packed packages: `npm run
 * pack`, `npx sessionflow init <app> --packs packs` (the repository's own
 * command), then in the app `npm install`, `npm test` (passes right after the
 * install), `npx tsc --noEmit` (clean under the strict tsconfig) and
 * `npx sessionflow dev src/workflows.ts` (answers a run over HTTP).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { postRun, start } from "../cli/longRunning.js"
import { exec, root } from "../process.js"
import { appEnv, ok, pack, readJson, scratch, sqlitePrebuilds, version } from "./app.js"

describe("sessionflow init", () => {
  it.scoped(
    "writes an app that installs from the tarballs, passes its test, typechecks, and runs under sessionflow dev",
    () =>
      Effect.gen(function*() {
        const work = yield* scratch("sessionflow-init-")
        const packs = path.join(work, "packs")
        const prebuilds = path.join(work, "prebuilds")
        const app = path.join(work, "my-app")
        for (const dir of [packs, prebuilds]) fs.mkdirSync(dir)
        yield* pack(packs)
        yield* sqlitePrebuilds(prebuilds)

        // in the clone of the repository, as the README says
        const init = yield* exec("npx", ["sessionflow", "init", app, "--packs", packs], { cwd: root, env: appEnv() })
          .pipe(
            Effect.flatMap(ok("npx sessionflow init"))
          )
        expect(init.stdout).toContain(`Wrote a sessionflow app to ${app}`)
        // the app's better-sqlite3 is the repository's version, so that its local prebuild fits
        const manifest = readJson(path.join(app, "package.json"))
        fs.writeFileSync(
          path.join(app, "package.json"),
          JSON.stringify({ ...manifest, overrides: { "better-sqlite3": version("better-sqlite3") } }, null, 2)
        )

        const inApp = (what: string, command: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
          exec(command, args, { cwd: app, env: appEnv(env) }).pipe(Effect.flatMap(ok(what)))
        yield* inApp("npm install", "npm", ["install", "--prefer-offline", "--no-audit", "--no-fund"], {
          npm_config_better_sqlite3_local_prebuilds: prebuilds
        })
        // nothing fetched a sibling from the registry: each @sessionflow package is its tarball
        for (const name of ["core", "store-sql", "store-sqlite", "server", "cli"]) {
          const lock = readJson(path.join(app, "package-lock.json"))["packages"] as Record<
            string,
            { readonly resolved?: string }
          >
          expect(lock[`node_modules/@sessionflow/${name}`]?.resolved, name).toMatch(/^file:/)
        }

        const tested = yield* inApp("npm test", "npm", ["test"])
        expect(tested.stdout).toMatch(/Tests\s+1 passed/)
        const typecheck = yield* inApp("npx tsc --noEmit", "npx", ["tsc", "--noEmit"])
        expect(typecheck.stdout).toBe("")

        // npx sessionflow dev src/workflows.ts: the installed command
        // (plain node, compiled JavaScript, tsx for the module)
        const dev = yield* start(path.join(app, "node_modules", ".bin", "sessionflow"), [
          "dev",
          "src/workflows.ts",
          "--port",
          "0"
        ], {
          cwd: app,
          env: appEnv()
        })
        const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(yield* dev.line("stdout", /^sessionflow dev: /))?.[1]
        expect(yield* dev.line("stdout", /^serving /)).toBe(
          `serving greet from src/workflows.ts, sessions in ${
            path.join(".sessionflow", "dev.db")
          }; watching src/ for changes. Ctrl-C stops it.`
        )
        const first = yield* postRun(url!, "greet", { input: "Ada", sessionId: "s1" })
        const second = yield* postRun(url!, "greet", { input: "Ada", sessionId: "s1" })
        expect([first.body["content"], second.body["content"]]).toEqual(["Hello, Ada!", "Welcome back, Ada!"])
        const page = yield* Effect.promise(() => fetch(`${url}/`).then((r) => r.text()))
        expect(page).toContain("/assets/app.js")
        expect(yield* dev.interrupt).toBe(130)
        expect(fs.existsSync(path.join(app, ".sessionflow", "dev.db"))).toBe(true)
      }),
    600_000
  )
})
