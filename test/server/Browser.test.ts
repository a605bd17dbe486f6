/**
 * The session browser in a real browser: Debian's chromium, driven by
 * playwright-core, against a server on a free 127.0.0.1 port serving the
 * offline examples on a SQLite file. The shopping-list scenario is run from
 * the page; the list in the state tree, the live events, the session list and
 * the run history are checked, and a screenshot is saved under tmp/.
 */
import { describe, expect, it } from "@effect/vitest"
import { ShoppingList } from "@sessionflow/examples"
import * as Serve from "@sessionflow/examples/Serve"
import { Workflow } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { chromium } from "playwright-core"
import { root } from "../process.js"
import { start } from "./utils.js"

const chromiumPath = "/usr/bin/chromium"

const flags = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync"
]

const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), prefix))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

describe("the session browser", () => {
  it.live("runs the shopping list from the page, showing the live events, the state tree and the history", () =>
    Effect.scoped(Effect.gen(function*() {
      expect(fs.existsSync(chromiumPath), `${chromiumPath} (apt-get install chromium)`).toBe(true)
      const dir = yield* tempDir("sessionflow-browser-")
      const db = path.join(dir, "sessions.db")
      const store = SqliteSessionStore.layer({ filename: db })
      const workflows = yield* Serve.entries({ offline: true })
      const url = yield* start({ workflows }, store as Layer.Layer<any>)

      const profile = yield* tempDir("sessionflow-chromium-")
      const context = yield* Effect.acquireRelease(
        Effect.promise(() =>
          chromium.launchPersistentContext(profile, {
            executablePath: chromiumPath,
            headless: true,
            // playwright passes the fresh profile as --user-data-dir
            args: flags,
            viewport: { width: 1280, height: 1100 }
          })
        ),
        (context) => Effect.promise(() => context.close())
      )
      const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(String(error)))

      yield* Effect.promise(async () => {
        await page.goto(`${url}/`)
        await page.waitForSelector("body[data-ready=true]")
        await page.selectOption("#workflow", ShoppingList.shoppingWorkflow.name)
        await page.click("#new-session")
      })

      const run = (input: string) =>
        Effect.promise(async () => {
          await page.fill("#input", input)
          await page.click("#send")
          await page.waitForSelector("#events li[data-tag=RunCompleted]")
          await page.waitForSelector("body[data-running=false]")
          return page.$$eval("#events li", (items) => items.map((li) => [li.getAttribute("data-tag"), li.textContent]))
        })

      // 1: three items added by the assistant's tools, shown as they happen
      const first = yield* run(ShoppingList.inputs[0])
      const tags = first.map(([tag]) => tag)
      expect(tags[0]).toBe("RunStarted")
      expect(tags[tags.length - 1]).toBe("RunCompleted")
      expect(tags).toEqual(expect.arrayContaining(["StepStarted", "ToolCallStarted", "ToolCallCompleted", "StateChanged"]))
      const lines = first.map(([, text]) => text).join("\n")
      for (const item of ["milk", "bread", "eggs"]) expect(lines).toContain(`call add_item({"item":"${item}"})`)
      expect(lines).toContain("state: append shopping_list")

      // 2 and 3 on the same session (selected by the page after the first run)
      yield* run(ShoppingList.inputs[1])
      const third = yield* run(ShoppingList.inputs[2])
      expect(third.map(([, text]) => text).join("\n")).toContain("remove_item")

      const shown = yield* Effect.promise(async () => ({
        items: await page.$$eval(
          "#state details[data-key=shopping_list] > .leaf .string",
          (nodes) => nodes.map((n) => JSON.parse(n.textContent ?? "null"))
        ),
        sessions: await page.$$eval("#sessions li", (items) => items.length),
        title: await page.textContent("#session-title"),
        history: await page.$$eval("#runs tr", (rows) => rows.map((r) => r.children[1]?.textContent)),
        error: await page.textContent("#error")
      }))
      expect(shown.items).toEqual(["milk", "eggs", "apples", "bananas"])
      expect(shown.sessions).toBe(1)
      expect(shown.history).toEqual(["completed", "completed", "completed"])
      expect(shown.error).toBe("")
      expect(errors).toEqual([])

      // the page shows what the store holds
      const sessionId = shown.title!.replace(/^Session /, "")
      const stored = yield* Workflow.getSessionState(ShoppingList.shoppingWorkflow, sessionId).pipe(Effect.provide(store))
      expect(stored.shopping_list).toEqual(["milk", "eggs", "apples", "bananas"])

      const screenshot = path.join(root, "tmp", "session-browser.png")
      fs.mkdirSync(path.dirname(screenshot), { recursive: true })
      yield* Effect.promise(() => page.screenshot({ path: screenshot, fullPage: true }))
      expect(fs.statSync(screenshot).size).toBeGreaterThan(10_000)
    })), 120_000)
})
