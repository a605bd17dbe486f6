/**
 * `sessionflow dev` as a user runs it: on an app module of their own
 * (TypeScript), it serves the workflows over HTTP, serves them again when the
 * module or a file it imports changes, prints a broken module's error and
 * keeps watching, and stops its server on Ctrl-C.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { root } from "../process.js"
import { postRun, start } from "./longRunning.js"

const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href

const workflows = `import { Effect, Schema } from "effect"
import { SessionState, Step, Workflow } from "@sessionflow/core"
import { greeting } from "./greeting.js"

class Visits extends SessionState.Tag("app/Visits")<Visits>()({ count: Schema.Number }) {}

export const greet = Workflow.make({
  name: "greet",
  input: Schema.String,
  state: Visits,
  sessionState: { count: 0 },
  steps: [
    Step.make("hello", (input) =>
      Visits.modify((s) => [\`\${greeting}, \${input.input}! (visit \${s.count + 1})\`, { count: s.count + 1 }]))
  ]
})

export const notAWorkflow = 42
`

const appDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-dev-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/**
 * An app (its node_modules the repository's) with `src/workflows.ts` and `src/greeting.ts`, under `sessionflow dev`.
 */
const devOn = (source: string) =>
  Effect.gen(function*() {
    const app = yield* appDir
    fs.writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }))
    fs.symlinkSync(path.join(root, "node_modules"), path.join(app, "node_modules"))
    fs.mkdirSync(path.join(app, "src"))
    const module = path.join(app, "src", "workflows.ts")
    fs.writeFileSync(path.join(app, "src", "greeting.ts"), `export const greeting: string = "Hello"\n`)
    fs.writeFileSync(module, source)
    const dev = yield* start(process.execPath, [
      "--import",
      tsxLoader,
      path.join(root, "packages", "cli", "src", "bin.ts"),
      "dev",
      "src/workflows.ts",
      "--port",
      "0",
      "--db",
      path.join(app, "dev.db")
    ], { cwd: app })
    return { app, module, dev }
  })

describe("sessionflow dev", () => {
  it.scoped(
    "serves the module's workflows, reloads on a change to it or to a file it imports, survives a broken module",
    () =>
      Effect.gen(function*() {
        const { app, module, dev } = yield* devOn(workflows)
        const first = yield* dev.line("stdout", /^sessionflow dev: /)
        const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(first)?.[1]
        expect(first).toMatch(
          /^sessionflow dev: http:\/\/127\.0\.0\.1:\d+ {2}\(session page at \/, API docs at \/docs\)$/
        )
        expect(yield* dev.line("stdout", /^serving /)).toBe(
          "serving greet from src/workflows.ts, sessions in dev.db; watching src/ for changes. Ctrl-C stops it."
        )
        const one = yield* postRun(url!, "greet", { input: "Ann", sessionId: "s1" })
        expect(one.status).toBe(200)
        expect(one.body["content"]).toBe("Hello, Ann! (visit 1)")
        // a run without the input the workflow declares is a bad request, not a run on null
        const missing = yield* postRun(url!, "greet", { sessionId: "s2" })
        expect(missing.status).toBe(400)
        expect(missing.body).toMatchObject({ _tag: "BadRequest" })
        // the session page and its API docs are served
        const page = yield* Effect.promise(() => fetch(`${url}/`).then((r) => r.text()))
        expect(page).toContain("/assets/app.js")

        // a file the module imports changes: the workflow answers differently, the session (in the file) goes on
        fs.writeFileSync(path.join(app, "src", "greeting.ts"), `export const greeting: string = "Hi"\n`)
        expect(yield* dev.line("stdout", /^reloaded /)).toBe("reloaded src/workflows.ts (greeting.ts): serving greet")
        const two = yield* postRun(url!, "greet", { input: "Ann", sessionId: "s1" })
        expect(two.body["content"]).toBe("Hi, Ann! (visit 2)")

        // a broken module: its error, one line, and the command keeps watching
        fs.writeFileSync(module, `${workflows}\nexport const broken = (\n`)
        const error = yield* dev.line("stderr", /^error: /)
        expect(error).toMatch(
          /^error: src\/workflows\.ts failed to load: .*workflows\.ts:\d+:\d+: ERROR: .* \(waiting for a change\)$/
        )
        expect(dev.stderr().trim().split("\n")).toHaveLength(1)

        // a module without a workflow says what to export
        fs.writeFileSync(module, `export const answer = 42\n`)
        expect(yield* dev.line("stderr", /^error: /, 1)).toBe(
          "error: src/workflows.ts failed to load: it exports no workflow: export each workflow (export " +
            "const greet = Workflow.make(…)), or export default an array of them (waiting for a change)"
        )

        // fixed, with a default export array: served again on the same port
        fs.writeFileSync(module, `${workflows.replace("export const greet", "const greet")}\nexport default [greet]\n`)
        expect(yield* dev.line("stdout", /^reloaded /, 1)).toBe(
          "reloaded src/workflows.ts (workflows.ts): serving greet"
        )
        const three = yield* postRun(url!, "greet", { input: "Bo", sessionId: "s1" })
        expect(three.body["content"]).toBe("Hi, Bo! (visit 3)")

        // Ctrl-C stops the command and its server
        expect(yield* dev.interrupt).toBe(130)
        const refused = yield* Effect.promise(() => fetch(`${url}/`).then(() => "answered", () => "refused"))
        expect(refused).toBe("refused")
        expect(dev.stdout().trim().split("\n")).toHaveLength(4)
      }),
    240_000
  )

  it.scoped(
    "a module that does not load at first: its error, then the URL once it loads",
    () =>
      Effect.gen(function*() {
        const { dev, module } = yield* devOn(`export const answer = 42\n`)
        expect(yield* dev.line("stderr", /^error: /)).toMatch(
          /^error: src\/workflows\.ts failed to load: it exports no workflow/
        )
        expect(dev.stdout()).toBe("")
        fs.writeFileSync(module, workflows)
        const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(yield* dev.line("stdout", /^sessionflow dev: /))?.[1]
        const run = yield* postRun(url!, "greet", { input: "Cy", sessionId: "s1" })
        expect(run.body["content"]).toBe("Hello, Cy! (visit 1)")
        expect(yield* dev.interrupt).toBe(130)
        expect(dev.stdout()).not.toContain("reloaded")
      }),
    240_000
  )
})
