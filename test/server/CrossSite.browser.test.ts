/**
 * A hostile page on another origin, in a real browser (Debian's chromium,
 * driven by playwright-core), tries every request a page can send without
 * the server's consent — `no-cors` fetches with a Blob body (no
 * Content-Type), `navigator.sendBeacon`, a form post, a JSON fetch that needs
 * a preflight — to start runs, approve a paused run and cancel it. Every
 * attempt that reaches the server is refused, and nothing changes.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { describeBrowser, launch } from "../chromium.js"
import { approvals, notes } from "./fixtures.js"
import { request, start } from "./utils.js"

const attackerPage = (target: string, runId: string) =>
  `<!doctype html>
<html><body>
<form id="form" method="POST" action="${target}/workflows/notes/runs" enctype="text/plain" target="sink">
  <input name='{"input":"form","sessionId":"hijacked","x":"' value='"}'>
</form>
<iframe name="sink"></iframe>
<script>
(async () => {
  const blob = (value) => new Blob([JSON.stringify(value)])
  const attempts = [
    fetch("${target}/workflows/notes/runs", {
      method: "POST", mode: "no-cors", body: blob({ input: "x", sessionId: "hijacked" })
    }),
    fetch("${target}/workflows/approvals/runs/${runId}/continue", {
      method: "POST", mode: "no-cors", body: blob({ response: { approved: true } })
    }),
    fetch("${target}/workflows/approvals/runs/${runId}/cancel", { method: "POST", mode: "no-cors" }),
    fetch("${target}/workflows/notes/runs", {
      method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" },
      body: JSON.stringify({ input: "x", sessionId: "hijacked" })
    }),
    fetch("${target}/workflows/notes/runs", {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "x", sessionId: "hijacked" })
    })
  ]
  navigator.sendBeacon("${target}/workflows/notes/runs", blob({ input: "beacon", sessionId: "hijacked" }))
  navigator.sendBeacon(
    "${target}/workflows/approvals/runs/${runId}/continue", JSON.stringify({ response: { approved: true } })
  )
  document.getElementById("form").submit()
  await Promise.allSettled(attempts)
  document.body.dataset.done = "true"
})()
</script>
</body></html>`

/** A plain Node server on a free 127.0.0.1 port for the scope. */
const listen = (handler: http.RequestListener) =>
  Effect.acquireRelease(
    Effect.async<http.Server>((resume) => {
      const server = http.createServer(handler)
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

describeBrowser("a page on another origin", () => {
  it.scoped(
    "cannot start, approve or cancel a run: every attempt is refused and nothing changes",
    () =>
      Effect.gen(function*() {
        const server = yield* start({ workflows: [approvals, notes] })
        // the server behind a recording proxy: what it answered each request that reached it
        const answered: Array<{ url: string; method: string; status: number }> = []
        const proxy = yield* listen((req, res) => {
          const forwarded = http.request(
            `${server}${req.url}`,
            { method: req.method, headers: req.headers },
            (reply) => {
              answered.push({ url: req.url ?? "", method: req.method ?? "", status: reply.statusCode ?? 0 })
              res.writeHead(reply.statusCode ?? 502, reply.headers)
              reply.pipe(res)
            }
          )
          req.pipe(forwarded)
        })
        const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
        const paused = yield* request(`${url}/workflows/approvals/runs`, {
          method: "POST",
          json: { input: "buy a yacht", sessionId: "victim" }
        })
        expect(paused.status).toBe(202)
        const runId: string = paused.body.runId

        // the attacker's site: another origin (localhost, another port)
        const attacker = yield* listen((_, res) => {
          res.writeHead(200, { "content-type": "text/html" })
          res.end(attackerPage(url, runId))
        })
        const attackerUrl = `http://localhost:${(attacker.address() as AddressInfo).port}/`

        const { page } = yield* launch()
        answered.length = 0
        yield* Effect.promise(async () => {
          await page.goto(attackerUrl)
          await page.waitForSelector("body[data-done=true]", { timeout: 10_000 })
          // the beacons and the form are sent in the background
          await page.waitForTimeout(1000)
        })

        const posts = answered.filter((a) => a.method === "POST")
        // the no-cors fetches, the beacons and the form reached the server (the JSON fetch stops at its preflight)
        expect(posts.length).toBeGreaterThanOrEqual(6)
        for (const post of posts) expect([403, 415]).toContain(post.status)

        // the run still waits, no session was created, nothing was run
        const stillPaused = yield* request(`${url}/workflows/approvals/runs/paused`)
        expect(stillPaused.body.map((r: { runId: string }) => r.runId)).toEqual([runId])
        expect((yield* request(`${url}/workflows/notes/sessions`)).body.sessions).toEqual([])
        expect((yield* request(`${url}/workflows/notes/sessions/hijacked`)).status).toBe(404)
      }),
    60_000
  )
})
