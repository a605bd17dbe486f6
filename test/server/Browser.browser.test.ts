/**
 * The session browser in a real browser: Debian's chromium, driven by
 * playwright-core, against a server on a free 127.0.0.1 port serving the
 * offline examples on a SQLite file. The shopping-list scenario is run from
 * the page; the list in the state tree, the live events, the session list and
 * the run history are checked, then a change committed by another store shows
 * in the page as it lands; a screenshot is saved under tmp/.
 */
import { expect, it } from "@effect/vitest"
import { Workflow } from "@sessionflow/core"
import { Approval, ShoppingList } from "@sessionflow/examples"
import * as Serve from "@sessionflow/examples/Serve"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, type Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Page } from "playwright-core"
import { describeBrowser, launch } from "../chromium.js"
import { root } from "../process.js"
import { start } from "./utils.js"

const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), prefix))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

/**
 * The offline examples served over a fresh SQLite file, and chromium on the
 * page with `workflow` selected and a new session: the page, the page's
 * errors, the store.
 */
const openPage = (workflow: string) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("sessionflow-browser-")
    const db = path.join(dir, "sessions.db")
    const store = SqliteSessionStore.layer({ filename: db })
    const workflows = yield* Serve.entries({ offline: true })
    const url = yield* start({ workflows }, store as Layer.Layer<any>)

    const { page } = yield* launch({ viewport: { width: 1280, height: 1100 } })
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(String(error)))

    yield* Effect.promise(async () => {
      await page.goto(`${url}/`)
      await page.waitForSelector("body[data-ready=true]")
      await page.selectOption("#workflow", workflow)
      await page.click("#new-session")
    })
    return { page, errors, store }
  })

/** Saves a full-page screenshot under tmp/. */
const screenshot = (page: Page, name: string) =>
  Effect.gen(function*() {
    const file = path.join(root, "tmp", name)
    fs.mkdirSync(path.dirname(file), { recursive: true })
    yield* Effect.promise(() => page.screenshot({ path: file, fullPage: true }))
    expect(fs.statSync(file).size).toBeGreaterThan(10_000)
  })

/** The events shown in the page: [tag, text] of each line. */
const shownEvents = (page: Page) =>
  page.$$eval("#events li", (items) => items.map((li) => [li.getAttribute("data-tag"), li.textContent] as const))

describeBrowser("the session browser", () => {
  it.live(
    "runs the shopping list from the page, showing the live events, the state tree and the history",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { errors, page, store } = yield* openPage(ShoppingList.shoppingWorkflow.name)

        const run = (input: string) =>
          Effect.promise(async () => {
            await page.fill("#input", input)
            await page.click("#send")
            await page.waitForSelector("#events li[data-tag=RunCompleted]")
            await page.waitForSelector("body[data-running=false]")
            return shownEvents(page)
          })

        // 1: three items added by the assistant's tools, shown as they happen
        const first = yield* run(ShoppingList.inputs[0])
        const tags = first.map(([tag]) => tag)
        expect(tags[0]).toBe("RunStarted")
        expect(tags[tags.length - 1]).toBe("RunCompleted")
        expect(tags).toEqual(
          expect.arrayContaining(["StepStarted", "ToolCallStarted", "ToolCallCompleted", "StateChanged"])
        )
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
        const stored = yield* Workflow.getSessionState(ShoppingList.shoppingWorkflow, sessionId).pipe(
          Effect.provide(store)
        )
        expect(stored.shopping_list).toEqual(["milk", "eggs", "apples", "bananas"])

        // live: a change another client commits (a store of its own over the same file, as another
        // server would have) shows in the page without a reload
        yield* Effect.promise(() => page.waitForSelector(`body[data-watching="${sessionId}"]`))
        yield* Workflow.updateSessionState(
          ShoppingList.shoppingWorkflow,
          sessionId,
          (s) => ({ shopping_list: [...s.shopping_list, "watched pears"] })
        ).pipe(Effect.provide(store))
        const live = yield* Effect.promise(async () => {
          await page.waitForSelector("#state details[data-key=shopping_list] > .leaf .string >> text=watched pears")
          return page.$$eval(
            "#state details[data-key=shopping_list] > .leaf .string",
            (nodes) => nodes.map((n) => JSON.parse(n.textContent ?? "null"))
          )
        })
        expect(live).toEqual(["milk", "eggs", "apples", "bananas", "watched pears"])

        yield* screenshot(page, "session-browser.png")
      })),
    120_000
  )

  it.live(
    "runs the approval scenario: an expense above the limit waits " +
      "in the page; Approve continues it, Reject with a reason too",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { errors, page, store } = yield* openPage(Approval.expenseWorkflow.name)

        // the run pauses: its question is shown with Approve / Reject
        const paused = yield* Effect.promise(async () => {
          await page.fill("#input", Approval.input)
          await page.click("#send")
          await page.waitForSelector("#events li[data-tag=RunPaused]")
          await page.waitForSelector("body[data-running=false]")
          await page.waitForSelector("#paused li button.approve")
          return {
            events: await shownEvents(page),
            questions: await page.$$eval("#paused li .question", (nodes) => nodes.map((n) => n.textContent)),
            panelHidden: await page.$eval("#paused-panel", (panel) =>
              (panel as unknown as { readonly hidden: boolean }).hidden),
            title: await page.textContent("#session-title"),
            error: await page.textContent("#error")
          }
        })
        expect(paused.events.at(-1)?.[0]).toBe("RunPaused")
        expect(paused.events.map(([tag]) =>
          tag
        )).not.toContain("RunCompleted")
        expect(paused.questions).toEqual([expect.stringContaining("wants to call record_expense(")])
        expect(paused.questions[0]).toContain("240")
        expect(paused.panelHidden).toBe(false)
        expect(paused.error).toBe("")
        const sessionId = paused.title!.replace(/^Session /, "")
        expect(yield* Workflow.pausedRuns(Approval.expenseWorkflow, { sessionId }).pipe(Effect.provide(store)))
          .toHaveLength(1)
        yield* screenshot(page, "session-browser-paused.png")

        // approved in the page: the run continues (streamed) and completes with both expenses recorded
        const approved = yield* Effect.promise(async () => {
          await page.click("#paused li button.approve")
          await page.waitForSelector("#events li[data-tag=RunCompleted]")
          await page.waitForSelector("body[data-running=false]")
          return {
            events: await shownEvents(page),
            expenses: await page.$$eval(
              "#state details[data-key=expenses] > details",
              (items) =>
                items.map((item) =>
                  Array.from(
                    item.querySelectorAll(".leaf") as ArrayLike<{ readonly textContent: string | null }>,
                    (leaf) => leaf.textContent
                  )
                )
            ),
            total: await page.$$eval("#state .leaf", (leaves) =>
              leaves.map((l) => l.textContent).filter((t) => t?.startsWith("total"))),
            paused: await page.$$eval("#paused li", (items) =>
              items.length),
            panelHidden: await page.$eval("#paused-panel", (panel) =>
              (panel as unknown as { readonly hidden: boolean }).hidden),
            history: await page.$$eval("#runs tr", (rows) =>
              rows.map((r) =>
                r.children[1]?.textContent
              )),
            error: await page.textContent("#error")
          }
        })
        const tags = approved.events.map(([tag]) => tag)
        expect(tags.indexOf("RunResumed")).toBeGreaterThan(tags.indexOf("RunPaused"))
        expect(tags.at(-1)).toBe("RunCompleted")
        expect(approved.events.map(([, text]) => text).join("\n")).toContain("answered: {\"approved\":true}")
        expect(approved.expenses).toEqual([
          ["description: \"taxi to the airport\"", "amount: 35"],
          ["description: \"team dinner\"", "amount: 240"]
        ])
        expect(approved.total).toEqual(["total: 275"])
        expect(approved.paused).toBe(0)
        expect(approved.panelHidden).toBe(true)
        expect(approved.history).toEqual(["completed"])
        expect(approved.error).toBe("")
        yield* screenshot(page, "session-browser-approval.png")

        // the next expense above the limit, rejected with a reason: nothing recorded
        const rejected = yield* Effect.promise(async () => {
          await page.fill("#input", "Please record 500 EUR for a new laptop.")
          await page.click("#send")
          await page.waitForSelector("#paused li button.reject")
          await page.waitForSelector("body[data-running=false]")
          await page.fill("#paused li input.reason", "not in the budget")
          await page.click("#paused li button.reject")
          await page.waitForSelector("#events li[data-tag=RunCompleted]")
          await page.waitForSelector("body[data-running=false]")
          return {
            events: await shownEvents(page),
            history: await page.$$eval("#runs tr", (rows) => rows.map((r) => r.children[1]?.textContent))
          }
        })
        const lines = rejected.events.map(([, text]) => text).join("\n")
        expect(lines).toContain("Rejected by a person: not in the budget")
        expect(rejected.history).toEqual(["completed", "completed"])
        expect(errors).toEqual([])

        // the page showed what the store holds
        const stored = yield* Workflow.getSessionState(Approval.expenseWorkflow, sessionId).pipe(Effect.provide(store))
        expect(stored).toEqual({
          expenses: [{ description: "taxi to the airport", amount: 35 }, { description: "team dinner", amount: 240 }],
          total: 275
        })
      })),
    120_000
  )
})
