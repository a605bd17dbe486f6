/**
 * The session browser shows where each unfinished run of a session is, in a
 * real browser: a sleeping run with the time it wakes, a waiting run with the
 * signal it waits for and its timeout, the runs queued behind it, the
 * workflow's schedules; the sleeping and waiting runs offer no answer
 * (nothing to approve); the lists refresh from the keyboard, and the page
 * breaks no rule of its CSP.
 */
import { expect, it } from "@effect/vitest"
import { SessionStore, Step, Workflow } from "@sessionflow/core"
import { Context, Effect, Fiber, Layer, Schedule, Schema } from "effect"
import { describeBrowser, launch } from "../chromium.js"
import { request, start } from "./utils.js"

const post = (url: string, json: unknown, headers: Record<string, string> = {}) =>
  request(url, { method: "POST", json, headers })

const napping = Workflow.make({ name: "napping", input: Schema.String, sessionState: {} }).pipe(
  Workflow.andThen(Step.sleep("nap", "1 hour")),
  Workflow.andThen("wake", ({ input }) => Effect.succeed(`${input} woke`))
)

const paying = Workflow.make({ name: "paying", input: Schema.String, sessionState: {} }).pipe(
  Workflow.andThen(Step.waitFor("paid", Schema.Struct({ amount: Schema.Number }), { timeout: "1 day" })),
  Workflow.andThen("ship", ({ previousStepContent: paid }) => Effect.succeed(paid._tag))
)

/** The "Scheduled" table's rows, read in the page. */
interface Row {
  getAttribute(name: string): string | null
  querySelector(selector: string): { getAttribute(name: string): string | null } | null
  querySelectorAll(selector: string): ArrayLike<{ readonly textContent: string | null }>
}
const scheduleRowsOf = (rows: ReadonlyArray<Row>) =>
  rows.map((row) => ({
    name: row.getAttribute("data-schedule"),
    cron: row.querySelectorAll("td")[1]?.textContent,
    nextTick: row.querySelector("time.next-tick")?.getAttribute("datetime"),
    lastFired: row.querySelector("time.last-fired")?.getAttribute("datetime") ?? null,
    cells: row.querySelectorAll("td").length
  }))

describeBrowser("the session browser's unfinished runs", () => {
  it.live(
    "shows a sleeping run until when, a waiting run's signal and timeout, the queued runs and the workflow's schedules",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const context = yield* Layer.build(SessionStore.layerMemory)
        // the sessions exist before their runs (a session is stored when a run commits)
        const store = Context.get(context, SessionStore.SessionStore)
        yield* store.commit({ sessionId: "nap-1", workflowName: "napping", expectedVersion: 0, state: {} })
        yield* store.commit({ sessionId: "pay-1", workflowName: "paying", expectedVersion: 0, state: {} })
        // a schedule of `paying` (none of `napping`): the page lists it under "Scheduled"
        const nightlyTick = Date.UTC(2030, 0, 2, 2)
        yield* store.putSchedule({
          workflowName: "paying",
          name: "nightly",
          cron: "0 2 * * *",
          nextTick: nightlyTick,
          now: 0
        })
        const url = yield* start({ workflows: [napping, paying] }, Layer.succeedContext(context))

        const slept = yield* post(`${url}/workflows/napping/runs`, { input: "cat", sessionId: "nap-1" })
        expect(slept.status).toBe(202)
        const payRuns = `${url}/workflows/paying/runs`
        const waited = yield* post(payRuns, { input: "order", sessionId: "pay-1" })
        expect(waited.status).toBe(202)
        // queued behind the waiting run (its caller waits for its turn)
        const second = yield* Effect.fork(
          post(payRuns, { input: "second order", sessionId: "pay-1", onBusy: "enqueue" })
        )
        const listed = yield* request(`${payRuns}/queued?sessionId=pay-1`).pipe(
          Effect.filterOrFail((reply) => reply.body?.length === 1),
          Effect.retry(Schedule.intersect(Schedule.spaced("20 millis"), Schedule.recurs(250)))
        )
        const queued = { body: { runId: listed.body[0].runId as string } }

        const { page } = yield* launch()
        const problems: Array<string> = []
        page.on("pageerror", (error) => problems.push(String(error)))
        page.on("console", (message) => {
          if (message.type() === "error") problems.push(message.text())
        })
        const enter = async (selector: string) => {
          await page.focus(selector)
          await page.keyboard.press("Enter")
        }

        const seen = yield* Effect.promise(async () => {
          await page.goto(`${url}/?workflow=napping`)
          await page.waitForSelector("body[data-ready=true]")
          await enter("#sessions li button[data-session-id=nap-1]")
          await page.waitForSelector(`#runs tr[data-run-id='${slept.body.runId}'][data-state=sleeping]`)
          const sleeping = await page.$eval(
            `#runs tr[data-run-id='${slept.body.runId}'] td.state-sleeping`,
            (cell) => ({
              text: cell.firstChild?.textContent,
              wakeAt: cell.querySelector("time.wake-at")?.getAttribute("datetime")
            })
          )
          // the paused-runs panel lists it with nothing to answer
          const napItem = await page.$eval(`#paused li[data-run-id='${slept.body.runId}']`, (item) => ({
            state: item.getAttribute("data-state"),
            answers: item.querySelectorAll("button.approve, button.reject, textarea").length
          }))
          const napSchedules = await page.$eval(
            "#schedules-panel",
            (panel) => ({ hidden: panel.hidden, rows: panel.querySelectorAll("tr[data-schedule]").length })
          )

          await page.goto(`${url}/?workflow=paying`)
          await page.waitForSelector("body[data-ready=true]")
          await enter("#sessions li button[data-session-id=pay-1]")
          await page.waitForSelector(`#runs tr[data-run-id='${waited.body.runId}'][data-state=waiting]`)
          const waiting = await page.$eval(`#runs tr[data-run-id='${waited.body.runId}'] td.state-waiting`, (cell) => ({
            text: cell.firstChild?.textContent,
            signal: cell.querySelector("code.signal")?.textContent,
            timeoutAt: cell.querySelector("time.timeout-at")?.getAttribute("datetime")
          }))
          await page.waitForSelector("#queued-panel:not([hidden])")
          const queuedRows = await page.$$eval("#queued tr", (rows) =>
            rows.map((row) => ({
              runId: row.getAttribute("data-run-id"),
              status: row.getAttribute("data-status"),
              position: row.getAttribute("data-position"),
              place: row.querySelectorAll("td")[1]?.textContent,
              input: row.querySelectorAll("td")[2]?.textContent
            })))
          await page.waitForSelector("#schedules-panel:not([hidden])")
          const scheduleRows = await page.$$eval("#schedules tr", scheduleRowsOf)
          return { sleeping, napItem, napSchedules, waiting, queuedRows, scheduleRows }
        })

        const wakeAt = new Date(seen.sleeping.wakeAt ?? "").getTime()
        expect(seen.sleeping.text).toBe("sleeping")
        expect(wakeAt - Date.now()).toBeGreaterThan(50 * 60 * 1000)
        expect(wakeAt - Date.now()).toBeLessThanOrEqual(60 * 60 * 1000)
        expect(seen.napItem).toEqual({ state: "sleeping", answers: 0 })
        expect(seen.napSchedules).toEqual({ hidden: true, rows: 0 })
        expect(seen.scheduleRows).toEqual([
          {
            name: "nightly",
            cron: "0 2 * * *",
            nextTick: new Date(nightlyTick).toISOString(),
            lastFired: null,
            cells: 4
          }
        ])
        expect(seen.waiting.text).toBe("waiting")
        expect(seen.waiting.signal).toBe("paid")
        expect(new Date(seen.waiting.timeoutAt ?? "").getTime() - Date.now()).toBeGreaterThan(23 * 60 * 60 * 1000)
        expect(seen.queuedRows).toEqual([{
          runId: queued.body.runId,
          status: expect.stringMatching(/^(running|waiting)$/),
          position: "0",
          place: expect.stringMatching(/^(running|waiting) · first$/),
          input: "second order"
        }])

        // the waiting run is signalled: it completes, the queued run takes its turn and waits in turn; a refresh
        // from the keyboard shows it
        const signalled = yield* post(`${payRuns}/${waited.body.runId}/signals/paid`, { value: { amount: 3 } })
        expect(signalled.status).toBe(200)
        expect((yield* Fiber.join(second)).status).toBe(202)
        yield* request(`${payRuns}/${queued.body.runId}`).pipe(
          Effect.filterOrFail((reply) => reply.body?.state === "waiting"),
          Effect.retry(Schedule.intersect(Schedule.spaced("20 millis"), Schedule.recurs(250)))
        )
        // a schedule fired meanwhile, another one added: "Refresh runs" reads the schedules again
        yield* store.putSchedule({
          workflowName: "paying",
          name: "hourly",
          cron: "0 * * * *",
          nextTick: nightlyTick,
          now: 0
        })
        const claimed = yield* store.claimScheduleTick("paying", "nightly", {
          tick: nightlyTick,
          next: nightlyTick + 86_400_000,
          now: nightlyTick
        })
        const after = yield* Effect.promise(async () => {
          await enter("#refresh-runs")
          await page.waitForSelector("#schedules tr[data-schedule=hourly]")
          await page.waitForSelector(`#runs tr[data-run-id='${queued.body.runId}'][data-state=waiting]`)
          await page.waitForSelector("#queued-panel[hidden]", { state: "attached" })
          return {
            first: await page.$eval(`#runs tr[data-run-id='${waited.body.runId}'] td:nth-child(2)`, (cell) => ({
              text: cell.textContent,
              className: cell.className
            })),
            queued: await page.$$eval("#queued tr", (rows) => rows.length),
            scheduleRows: await page.$$eval("#schedules tr", scheduleRowsOf)
          }
        })
        expect(after.first).toEqual({ text: "completed", className: "status-completed" })
        expect(after.queued).toBe(0)
        expect(claimed).toBe(true)
        expect(after.scheduleRows).toEqual([
          {
            name: "hourly",
            cron: "0 * * * *",
            nextTick: new Date(nightlyTick).toISOString(),
            lastFired: null,
            cells: 4
          },
          {
            name: "nightly",
            cron: "0 2 * * *",
            nextTick: new Date(nightlyTick + 86_400_000).toISOString(),
            lastFired: new Date(nightlyTick).toISOString(),
            cells: 4
          }
        ])
        expect(problems).toEqual([])
      })),
    60_000
  )
})
