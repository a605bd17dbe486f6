/**
 * The page that shows a workflow, in Chromium under the server's
 * Content-Security-Policy: its step tree drawn as a graph (every kind of
 * container, a nested workflow; checked on the DOM, not on pixels), the run
 * input form built from the input Schema and used with the keyboard only, the
 * run's timeline (each step with its duration, output and state changes,
 * marked on the graph), and the same timeline replayed from the run's stored
 * events (a paused run's too); and a run started in the background, shown as
 * running in its session's runs until it completes.
 */
import { expect, it } from "@effect/vitest"
import { Step, Workflow } from "@sessionflow/core"
import { Deferred, Effect, Schema } from "effect"
import { describeBrowser, launch, waitUntil } from "../chromium.js"
import { gated } from "./fixtures.js"
import { shop } from "./shop.js"
import { request, start } from "./utils.js"

/**
 * An input Schema with an identifier (a `$ref` in its JSON
 * Schema), a choice of literals, an optional field and an integer.
 */
const parcel = Workflow.make({
  name: "parcel",
  input: Schema.Struct({ size: Schema.Literal("S", "M", "L"), note: Schema.optional(Schema.String), count: Schema.Int })
    .annotations({ identifier: "Parcel" }),
  steps: [Step.make("echo", ({ input }) => Effect.succeed(input))]
})

const textual = Workflow.make({
  name: "textual",
  input: Schema.String,
  steps: [Step.make("shout", ({ input }: { readonly input: string }) => Effect.succeed(input.toUpperCase()))]
})

/** Prepares, then asks before it sends. */
const asking = Workflow.make({
  name: "asking",
  steps: [
    Step.make("prepare", () => Effect.succeed("ready")),
    Step.pause("confirm", {
      payload: Schema.Struct({ question: Schema.String }),
      response: Schema.Struct({ approved: Schema.Boolean }),
      ask: () => Effect.succeed({ question: "send?" }),
      resume: ({ approved }) => Effect.succeed(approved ? "sent" : "kept")
    })
  ]
})

describeBrowser("the workflow page", () => {
  it.live(
    "draws the step tree, runs from the input form by keyboard, and shows the run's timeline",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const url = yield* start({ workflows: [shop] })
        const { page } = yield* launch({ viewport: { width: 1280, height: 900 } })
        const problems: Array<string> = []
        page.on("pageerror", (error) => problems.push(String(error)))
        page.on("console", (message) => {
          if (message.type() === "error") problems.push(message.text())
        })

        const result = yield* Effect.promise(async () => {
          await page.goto(`${url}/`)
          await page.waitForSelector("body[data-ready=true]")
          await page.waitForSelector("#graph li.node")
          const nodes = await page.$$eval(
            "#graph li.node",
            (items) => items.map((li) => `${li.getAttribute("data-kind")} ${li.getAttribute("data-path")}`)
          )
          // the structure: what is drawn inside what, and side by side
          const structure = await page.evaluate<{ readonly [key: string]: unknown }>(`(() => {
          const node = (path) => document.querySelector('#graph li.node[data-path="' + path + '"]')
          const paths = (parent, selector) => Array.from(parent.querySelectorAll(selector), (li) => li.dataset.path)
          const columns = (path) =>
            Array.from(node(path).querySelectorAll(":scope > .branches > .branch"), (column) =>
              column.dataset.branch + ": " + paths(column, "li.node").join(", "))
          return {
            top: paths(document, "#graph > ol[role=tree] > li.node"),
            tabStops: Array.from(document.querySelectorAll("#graph li.node")).filter((li) => li.tabIndex === 0).length,
            condition: columns("bulk?"),
            router: columns("ship"),
            parallel: columns("notify"),
            loop: paths(node("pack"), "li.node"),
            nested: paths(node("book"), "li.node")
          }
        })()`)
          const form = {
            fields: await page.$$eval(
              "#input-fields [name]",
              (items) =>
                items.map((i) => `${i.getAttribute("name")} ${i.getAttribute("type") ?? i.tagName.toLowerCase()}`)
            ),
            textareaHidden: await page.$eval("#input", (t) => t.hasAttribute("hidden"))
          }

          // the graph is one tab stop whose arrows move through the steps
          await page.focus("#graph li.node[data-path=price]")
          await page.keyboard.press("ArrowDown")
          const afterArrow = await page.evaluate<string | undefined>("document.activeElement?.dataset.path")

          // the keyboard only: Tab to the first field, fill the form, Tab to Run, Enter
          await page.focus("#token")
          let tabs = 0
          const focused = () => page.evaluate<string | undefined>("document.activeElement?.id")
          while ((await focused()) !== "input-field-item" && tabs < 60) {
            await page.keyboard.press("Tab")
            tabs++
          }
          await page.keyboard.type("apples")
          await page.keyboard.press("Tab")
          await page.keyboard.type("12")
          await page.keyboard.press("Tab")
          await page.keyboard.press("Space")
          await page.keyboard.press("Tab")
          const onRun = await focused()
          await page.keyboard.press("Enter")
          await page.waitForSelector("#events li[data-tag=RunCompleted]")
          await page.waitForSelector("body[data-running=false]")

          const readTimeline = () =>
            page.$$eval("#timeline tr", (rows) =>
              rows.map((row) => {
                const cell = (name: string) => row.querySelector(`td.${name}`)?.textContent ?? ""
                return {
                  path: row.getAttribute("data-path"),
                  status: cell("status"),
                  duration: cell("duration"),
                  output: cell("output"),
                  changes: Array.from(
                    row.querySelectorAll("ul.diff li") as ArrayLike<{ readonly textContent: string | null }>,
                    (li) => li.textContent
                  )
                }
              }))
          const live = await readTimeline()
          const marked = await page.$$eval("#graph li.node", (items) =>
            items.map((li) => `${li.getAttribute("data-path")}: ${li.getAttribute("data-status") ?? "-"}`))
          const state = await page.textContent("#state")

          // drawn as a graph: a sequence top to bottom, branches side by side, children inside their container
          const box = async (path: string) =>
            (await page.locator(`#graph li.node[data-path="${path}"] > .box`).boundingBox())!
          const [price, check, ship, yes, no, courier, post, pack, body] = await Promise.all(
            [
              "price",
              "bulk?",
              "ship",
              "bulk? › bulk discount",
              "bulk? › single price",
              "ship › courier",
              "ship › post",
              "pack",
              "pack › box"
            ].map(box)
          )
          const layout = {
            sequence: price!.y < check!.y && check!.y < ship!.y,
            conditionSideBySide: yes!.x + yes!.width <= no!.x && Math.abs(yes!.y - no!.y) < 2,
            routerSideBySide: courier!.x + courier!.width <= post!.x && Math.abs(courier!.y - post!.y) < 2,
            branchesBelow: yes!.y > check!.y + check!.height && yes!.y < ship!.y,
            loopBodyInside: body!.x > pack!.x && body!.y > pack!.y + pack!.height
          }

          // the same run, replayed from its stored events
          await page.click("#runs tr button.show-timeline")
          await waitUntil(async () =>
            (await page.locator("#timeline-title").textContent())?.includes("replayed") === true &&
            (await page.locator("#timeline tr[data-status=completed]").count()) === live.length
          )
          const replayed = await readTimeline()
          return {
            nodes,
            structure,
            form,
            afterArrow,
            tabs,
            onRun,
            live,
            marked,
            state,
            layout,
            replayed,
            problems: [...problems]
          }
        })

        expect(result.nodes).toEqual([
          "step price",
          "condition bulk?",
          "step bulk? › bulk discount",
          "step bulk? › single price",
          "router ship",
          "step ship › courier",
          "step ship › post",
          "loop pack",
          "step pack › box",
          "parallel notify",
          "step notify › email",
          "step notify › sms",
          "workflow book",
          "step book › write"
        ])
        expect(result.structure).toEqual({
          top: ["price", "bulk?", "ship", "pack", "notify", "book"],
          tabStops: 1,
          condition: ["then: bulk? › bulk discount", "else: bulk? › single price"],
          router: ["choice: ship › courier", "choice: ship › post"],
          parallel: ["branch: notify › email", "branch: notify › sms"],
          loop: ["pack › box"],
          nested: ["book › write"]
        })
        expect(result.form).toEqual({
          fields: ["item text", "quantity number", "express checkbox"],
          textareaHidden: true
        })
        expect(result.afterArrow).toBe("bulk?")
        expect(result.tabs).toBeLessThan(60)
        expect(result.onRun).toBe("send")

        // every step that ran, in the order it started, each with a duration; the loop's body twice
        expect(result.live.map((row) =>
          row.path
        )).toEqual([
          "price",
          "bulk?",
          "bulk? › bulk discount",
          "ship",
          "ship › courier",
          "pack",
          "pack › box",
          "pack › box",
          "notify",
          "notify › email",
          "notify › sms",
          "book",
          "book › write"
        ])
        for (const row of result.live) {
          expect(row.status).toBe("completed")
          expect(row.duration).toMatch(/^\d+ ms$/)
        }
        const row = (path: string) => result.live.find((r) => r.path === path)!
        expect(row("price").changes).toEqual(["set total = 36"])
        expect(row("price").output).toContain(`"item":"apples"`)
        expect(row("ship › courier").changes.join(" ")).toContain("courier")
        expect(row("book › write").changes.join(" ")).toContain("write")
        expect(row("bulk?").changes).toEqual(["no change"])
        expect(result.marked).toContain("bulk? › bulk discount: completed")
        expect(result.marked).toContain("bulk? › single price: -")
        expect(result.marked).toContain("ship › post: -")
        expect(result.marked).toContain("book › write: completed")
        expect(result.state).toContain("courier")

        expect(result.layout).toEqual({
          sequence: true,
          conditionSideBySide: true,
          routerSideBySide: true,
          branchesBelow: true,
          loopBodyInside: true
        })

        expect(result.replayed.map((r) => [r.path, r.status, r.changes])).toEqual(
          result.live.map((r) => [r.path, r.status, r.changes])
        )
        expect(result.problems).toEqual([])
      })),
    90_000
  )

  it.live(
    "builds the form from an input Schema with references, " +
      "choices and optional fields; a text input keeps the text area",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const url = yield* start({ workflows: [parcel, textual] })
        const { page } = yield* launch()
        const result = yield* Effect.promise(async () => {
          await page.goto(`${url}/?workflow=parcel`)
          await page.waitForSelector("body[data-ready=true]")
          await page.waitForSelector("#input-fields [name=size]")
          const fields = await page.$$eval("#input-fields [name]", (items) =>
            items.map((i) => `${i.getAttribute("name")} ${i.getAttribute("type") ?? i.tagName.toLowerCase()}`))
          const choices = await page.$$eval("#input-fields select[name=size] option", (options) =>
            options.map((o) =>
              o.textContent
            ))
          await page.selectOption("#input-fields select[name=size]", "M")
          await page.fill("#input-fields [name=count]", "3")
          await page.press("#input-fields [name=count]", "Enter")
          await page.waitForSelector("#events li[data-tag=RunCompleted]")
          const completed = await page.textContent("#events li[data-tag=RunCompleted]")
          await page.selectOption("#workflow", "textual")
          await page.waitForSelector("#graph li.node[data-path=shout]")
          const text = {
            fieldsHidden: await page.$eval("#input-fields", (d) =>
              d.hasAttribute("hidden")),
            textareaHidden: await page.$eval("#input", (t) => t.hasAttribute("hidden"))
          }
          return { fields, choices, completed, text }
        })
        expect(result.fields).toEqual(["size select", "note text", "count number"])
        expect(result.choices).toEqual(["S", "M", "L"])
        expect(result.completed).toContain(`{"size":"M","count":3}`)
        expect(result.text).toEqual({ fieldsHidden: true, textareaHidden: false })
      })),
    60_000
  )

  it.live(
    "a paused run's timeline: the steps before the question, the asking step paused; continuing it completes the step",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const url = yield* start({ workflows: [asking] })
        const { page } = yield* launch()
        const rows = () =>
          page.$$eval("#timeline tr", (items) =>
            items.map((row) => `${row.getAttribute("data-path")} ${row.getAttribute("data-status")}`))
        const result = yield* Effect.promise(async () => {
          await page.goto(`${url}/?workflow=asking`)
          await page.waitForSelector("body[data-ready=true]")
          await page.fill("#input", "go")
          await page.click("#send")
          await page.waitForSelector("#events li[data-tag=RunPaused]")
          await page.waitForSelector("body[data-running=false]")
          const live = await rows()
          const marked = await page.$eval("#graph li.node[data-path=confirm]", (li) =>
            li.getAttribute("data-status"))
          // a reload: the paused run's timeline, replayed from its stored events
          await page.reload()
          await page.waitForSelector("body[data-ready=true]")
          // (a session whose first run waits is not stored yet: the paused list is the workflow's)
          await page.click("#paused li button.show-timeline")
          await waitUntil(async () =>
            (await page.locator("#timeline-title").textContent())?.includes("replayed") === true &&
            (await page.locator("#timeline tr[data-status=paused]").count()) === 1
          )
          const replayed = await rows()
          await page.click("#paused li button.approve")
          await page.waitForSelector("#events li[data-tag=RunCompleted]")
          await page.waitForSelector("body[data-running=false]")
          const continued = await rows()
          return { live, marked, replayed, continued }
        })
        expect(result.live).toEqual(["prepare completed", "confirm paused"])
        expect(result.marked).toBe("paused")
        expect(result.replayed).toEqual(["prepare completed", "confirm paused"])
        // the continued run asks its pausing step again, which completes now
        expect(result.continued).toEqual(["prepare completed", "confirm paused", "confirm completed"])
      })),
    60_000
  )

  it.live(
    "a run started in the background shows as running in its session's runs, then as completed",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const url = yield* start({ workflows: [gated(started, gate)] })
        const runs = `${url}/workflows/gated/runs`
        const json = (body: unknown, headers: Record<string, string> = {}) =>
          request(runs, { method: "POST", json: body, headers })
        // the session exists (one run), then a second run goes on in the background
        expect((yield* json({ input: "first", sessionId: "bg-page" })).status).toBe(200)
        expect((yield* json({ input: "wait", sessionId: "bg-page" }, { prefer: "respond-async" })).status).toBe(202)
        yield* Deferred.await(started)
        const { page } = yield* launch()
        const statuses = () => page.$$eval("#runs tr", (rows) => rows.map((r) => r.children[1]?.textContent ?? ""))
        // (the page's CSP allows no evaluated strings: the rows are polled)
        const rowsUntil = async (done: (shown: ReadonlyArray<string>) => boolean) => {
          for (let attempt = 0; attempt < 200; attempt++) {
            const shown = await statuses()
            if (done(shown)) return shown
            await page.waitForTimeout(50)
          }
          return statuses()
        }
        const running = yield* Effect.promise(async () => {
          await page.goto(`${url}/?workflow=gated`)
          await page.waitForSelector("body[data-ready=true]")
          await page.click("#sessions li button[data-session-id=bg-page]")
          return rowsUntil((shown) => shown.length === 2)
        })
        expect(running).toEqual(["running", "completed"])
        yield* Deferred.succeed(gate, undefined)
        // its commit reaches the page (the session's watch), with the run's new status
        const done = yield* Effect.promise(async () => {
          return rowsUntil((shown) => shown.every((status) => status === "completed"))
        })
        expect(done).toEqual(["completed", "completed"])
      })),
    60_000
  )
})
