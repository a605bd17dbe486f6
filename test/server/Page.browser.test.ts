/**
 * The session browser under the server's Content-Security-Policy, in a real
 * browser (Debian's chromium, driven by playwright-core): a session whose
 * state is nested almost as deep as a store takes (990 levels) is shown without crashing (deep
 * levels collapsed), the page breaks no rule of the policy, and the bearer
 * token typed in the page is kept in no storage.
 */
import { expect, it } from "@effect/vitest"
import { SessionStore, Step, Workflow } from "@sessionflow/core"
import { Effect, Layer } from "effect"
import { describeBrowser, launch } from "../chromium.js"
import { start } from "./utils.js"

const nested = (depth: number): Record<string, unknown> => {
  let value: Record<string, unknown> = { leaf: "bottom" }
  for (let i = 0; i < depth; i++) value = { next: value }
  return value
}

const deep = Workflow.make({
  name: "deep",
  sessionState: {},
  steps: [Step.make("echo", ({ input }) => Effect.succeed(input))]
})

describeBrowser("the session browser's limits", () => {
  it.live(
    "shows a deeply nested state collapsed, breaks no CSP rule, and keeps the token in no storage",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const context = yield* Layer.build(SessionStore.layerMemory)
        // a deep state, written in process (the HTTP edge refuses such bodies)
        yield* Workflow.run(deep, "x", { sessionId: "deep-1", sessionState: { tree: nested(990) } }).pipe(
          Effect.provide(context)
        )
        const url = yield* start(
          { workflows: [deep], tokens: { "token-of-alice": "alice" } },
          Layer.succeedContext(context)
        )

        const { page } = yield* launch()
        const problems: Array<string> = []
        page.on("pageerror", (error) => problems.push(String(error)))
        page.on("console", (message) => {
          if (message.type() === "error") problems.push(message.text())
        })
        page.on("crash", () => problems.push("the page crashed"))

        const shown = yield* Effect.promise(async () => {
          await page.goto(`${url}/`)
          await page.waitForSelector("body[data-ready=true]")
          await page.click("#sessions li button[data-session-id=deep-1]")
          await page.waitForSelector("#state details[data-key=tree]")
          const shown = {
            title: await page.textContent("#session-title"),
            collapsed: await page.$$eval("#state .leaf .muted", (nodes) => nodes.map((n) => n.textContent)),
            depth: await page.$$eval("#state details", (nodes) => nodes.length),
            problems: [...problems]
          }
          // (alice does not see the anonymous session: the page's reads as her are 404s)
          await page.fill("#token", "token-of-alice")
          await page.dispatchEvent("#token", "change")
          await page.waitForTimeout(300)
          const storage = await page.evaluate<string>(
            "JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })"
          )
          return { ...shown, storage }
        })
        expect(shown.title).toBe("Session deep-1")
        expect(shown.collapsed).toContain("{…}")
        expect(shown.depth).toBeLessThanOrEqual(41)
        expect(shown.storage).not.toContain("token-of-alice")
        expect(shown.problems).toEqual([])
      })),
    60_000
  )

  it.live(
    "on a server that requires a token, the page lists the workflows once the token is typed",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const url = yield* start({ workflows: [deep], tokens: { "token-of-alice": "alice" }, requireAuth: true })
        const { page } = yield* launch()
        const shown = yield* Effect.promise(async () => {
          await page.goto(`${url}/`)
          await page.waitForSelector("body[data-ready=true]")
          const before = await page.$$eval("#workflow option", (options) => options.length)
          const refused = await page.textContent("#error")
          await page.fill("#token", "token-of-alice")
          await page.dispatchEvent("#token", "change")
          await page.waitForSelector("#workflow option[value=deep]", { state: "attached" })
          return { before, refused, error: await page.textContent("#error") }
        })
        expect(shown.before).toBe(0)
        expect(shown.refused).toContain("Authentication is required")
        expect(shown.error).toBe("")
      })),
    60_000
  )
})
