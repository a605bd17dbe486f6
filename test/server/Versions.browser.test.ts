/**
 * The session page's versions, forks and token usage, in a real browser
 * (Debian's chromium, driven by playwright-core), by keyboard: the kept
 * versions of a session are listed newest first with the keys each changed;
 * the state at one and the differences between two are shown; a fork made
 * from a version is selected, holds that version's state, and leaves the
 * original alone; a run that called a model shows its tokens.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { describeBrowser, launch } from "../chromium.js"
import { notes, summarising } from "./fixtures.js"
import { request, start } from "./utils.js"

const post = (url: string, json: unknown) => request(url, { method: "POST", json })

describeBrowser("the session page: versions, forks and tokens", () => {
  it.live(
    "lists a session's versions, shows one, compares two, forks one; shows a run's tokens; by keyboard",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const url = yield* start({ workflows: [notes, summarising] })
        for (const note of ["milk", "eggs", "jam"]) {
          yield* post(`${url}/workflows/notes/runs`, { input: note, sessionId: "n1" })
        }
        yield* post(`${url}/workflows/summarising/runs`, { input: "a long text", sessionId: "u1" })

        const { page } = yield* launch()
        const problems: Array<string> = []
        page.on("pageerror", (error) => problems.push(String(error)))
        /** presses Enter on an element reached by focus (a button works from the keyboard) */
        const enter = async (selector: string) => {
          await page.focus(selector)
          await page.keyboard.press("Enter")
        }

        const seen = yield* Effect.promise(async () => {
          await page.goto(`${url}/?workflow=notes`)
          await page.waitForSelector("body[data-ready=true]")
          await enter("#sessions li button[data-session-id=n1]")
          await page.waitForSelector("#versions tr[data-version='3']")
          const rows = await page.$$eval("#versions tr", (rows) =>
            rows.map((row) => [...row.querySelectorAll("td")].slice(0, 4).map((cell) => cell.textContent)))
          const pickers = [await page.inputValue("#diff-from"), await page.inputValue("#diff-to")]

          // the state at version 1
          await enter("#versions tr[data-version='1'] button.show-version")
          await page.waitForSelector("#version-view[data-shows=v1]")
          const atOne = {
            title: await page.textContent("#version-title"),
            leaves: await page.$$eval("#version-view .leaf .string", (nodes) =>
              nodes.map((n) => n.textContent))
          }

          // the differences from version 1 to version 3, picked with the keyboard
          await page.focus("#diff-from")
          await page.selectOption("#diff-from", "1")
          await page.focus("#diff-to")
          await page.selectOption("#diff-to", "3")
          await enter("#compare")
          await page.waitForSelector("#version-view[data-shows='v1..v3']")
          const differences = await page.$$eval(
            "#version-view ul.diff li",
            (items) => items.map((item) => [item.getAttribute("data-path"), item.className, item.textContent])
          )

          // a fork at version 2: the page selects it
          await enter("#versions tr[data-version='2'] button.fork-version")
          await page.waitForSelector("#sessions button[aria-current=true]:not([data-session-id=n1])")
          await page.waitForSelector("#versions tr[data-version='2']")
          const forkedId = await page.getAttribute("#sessions button[aria-current=true]", "data-session-id")
          const fork = {
            id: forkedId,
            title: await page.textContent("#session-title"),
            state: await page.$$eval("#state .leaf .string", (nodes) => nodes.map((n) => n.textContent)),
            versions: await page.$$eval("#versions tr", (rows) => rows.map((row) => row.getAttribute("data-version"))),
            note: await page.textContent("#version-title")
          }

          // the tokens of a run that called a model
          await page.selectOption("#workflow", "summarising")
          await page.waitForSelector("#sessions li button[data-session-id=u1]")
          await enter("#sessions li button[data-session-id=u1]")
          await page.waitForSelector("#runs td.tokens")
          const tokens = [
            await page.textContent("#runs td.tokens"),
            await page.getAttribute("#runs td.tokens", "title")
          ]
          const header = await page.$$eval("table:has(#runs) th", (cells) => cells.map((th) => th.textContent))
          return { rows, pickers, atOne, differences, fork, tokens, header, error: await page.textContent("#error") }
        })

        expect(seen.rows).toEqual([
          ["v3", expect.any(String), expect.any(String), "notes"],
          ["v2", expect.any(String), expect.any(String), "notes"],
          ["v1", expect.any(String), expect.any(String), "notes"]
        ])
        expect(seen.pickers).toEqual(["2", "3"])
        expect(seen.atOne).toEqual({ title: "State at version 1", leaves: ["\"milk\""] })
        expect(seen.differences).toEqual([
          ["notes", "op-changed", "~ notes: [\"milk\"] → [\"milk\",\"eggs\",\"jam\"]"]
        ])
        expect(seen.fork.id).not.toBe("n1")
        expect(seen.fork.title).toBe(`Session ${seen.fork.id}`)
        expect(seen.fork.state).toEqual(["\"milk\"", "\"eggs\""])
        expect(seen.fork.versions).toEqual(["2", "1"])
        expect(seen.fork.note).toBe("Forked from session n1 at version 2")
        expect(seen.tokens).toEqual(["48", "40 in, 8 out, 1 model call"])
        expect(seen.header).toContain("tokens")
        expect(seen.error).toBe("")
        expect(problems).toEqual([])
        // the original is as it was
        expect((yield* request(`${url}/workflows/notes/sessions/n1/state`)).body.state).toEqual({
          notes: ["milk", "eggs", "jam"]
        })
        expect((yield* request(`${url}/workflows/notes/sessions/${seen.fork.id}/state`)).body.state).toEqual({
          notes: ["milk", "eggs"]
        })
      })),
    90_000
  )
})
