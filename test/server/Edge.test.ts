/**
 * The server's edge: what it refuses before any route reads a request (other
 * sites' state-changing requests, bodies that are not JSON, unknown methods),
 * JSON values it will not take (too deep, `__proto__` keys), ids out of
 * bounds, and the security headers on every answer.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { approvals, notes } from "./fixtures.js"
import { request, start } from "./utils.js"

const post = (url: string, body: RequestInit["body"] | undefined, headers: Record<string, string> = {}) =>
  request(url, { method: "POST", ...(body === undefined ? {} : { body }), headers })

describe("the edge", () => {
  it.scoped("a body that is not application/json is a 415 (multipart included, answered at once); JSON passes", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] })
      const runs = `${url}/workflows/notes/runs`
      const form = new FormData()
      form.append("input", "x")
      const attempts = [
        yield* post(runs, form),
        yield* post(runs, new URLSearchParams({ input: "x" })),
        yield* post(runs, JSON.stringify({ input: "x" }), { "content-type": "text/plain" }),
        // a Blob without a type: no Content-Type at all
        yield* post(runs, new Blob([JSON.stringify({ input: "x", sessionId: "m1" })])),
        yield* request(`${url}/workflows/notes/sessions/m1/state`, {
          method: "PUT",
          body: new Blob([JSON.stringify({ state: { notes: [] } })])
        })
      ]
      for (const attempt of attempts) {
        expect(attempt.status).toBe(415)
        expect(attempt.body._tag).toBe("UnsupportedMediaType")
      }
      expect((yield* request(`${url}/workflows/notes/sessions/m1`)).status).toBe(404)
      const json = yield* post(runs, JSON.stringify({ input: "x" }), {
        "content-type": "application/json; charset=utf-8"
      })
      expect(json.status).toBe(200)
    }))

  it.scoped(
    "500 multipart requests are each answered, and the server still answers JSON quickly",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [notes] })
        const replies = yield* Effect.forEach(
          Array.from({ length: 500 }, (_, i) => i),
          () => {
            const form = new FormData()
            form.append("file", new Blob(["x".repeat(1000)]), "a.txt")
            return Effect.map(post(`${url}/workflows/notes/runs`, form), (r) => r.status)
          },
          { concurrency: 32 }
        )
        expect(new Set(replies)).toEqual(new Set([415]))
        const started = Date.now()
        expect((yield* request(`${url}/workflows`)).status).toBe(200)
        expect(Date.now() - started).toBeLessThan(1000)
      }),
    60_000
  )

  it.scoped("an unknown method is a 405 and an unknown route a 404, both with a JSON body", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] })
      const patch = yield* request(`${url}/workflows/notes`, {
        method: "PATCH",
        body: "{}",
        headers: { "content-type": "application/json" }
      })
      expect(patch.status).toBe(405)
      expect(patch.body).toMatchObject({ _tag: "MethodNotAllowed", method: "PATCH" })
      const unknown = yield* request(`${url}/nothing/here`)
      expect(unknown.status).toBe(404)
      expect(unknown.body._tag).toBe("RouteNotFound")
    }))

  it.scoped(
    "a state-changing request from another origin or site is a 403, with or without a body; the own origin passes",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [approvals, notes] })
        const paused = yield* post(
          `${url}/workflows/approvals/runs`,
          JSON.stringify({ input: "tea", sessionId: "x1" }),
          {
            "content-type": "application/json"
          }
        )
        expect(paused.status).toBe(202)
        const cancel = `${url}/workflows/approvals/runs/${paused.body.runId}/cancel`
        for (
          const headers of [
            { origin: "http://evil.test" },
            { origin: "null" },
            { "sec-fetch-site": "cross-site" },
            { "sec-fetch-site": "same-site", origin: "http://127.0.0.1:1" }
          ]
        ) {
          const refused = yield* post(cancel, undefined, headers)
          expect(refused.status).toBe(403)
          expect(refused.body._tag).toBe("Forbidden")
          const run = yield* post(`${url}/workflows/notes/runs`, JSON.stringify({ input: "x" }), {
            ...headers,
            "content-type": "application/json"
          })
          expect(run.status).toBe(403)
        }
        expect((yield* request(`${url}/workflows/approvals/runs/paused`)).body).toHaveLength(1)
        const own = yield* post(cancel, undefined, { origin: url, "sec-fetch-site": "same-origin" })
        expect(own.status).toBe(200)
        expect(own.body.status).toBe("cancelled")
      })
  )

  it.scoped("allowedOrigins lets a named origin's pages in", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes], allowedOrigins: ["https://app.example.com"] })
      const run = (origin: string) =>
        post(`${url}/workflows/notes/runs`, JSON.stringify({ input: "x" }), {
          origin,
          "sec-fetch-site": "cross-site",
          "content-type": "application/json"
        })
      expect((yield* run("https://app.example.com")).status).toBe(200)
      expect((yield* run("https://other.example.com")).status).toBe(403)
    }))

  it.scoped("every answer has the security headers; JSON is not cached; the page allows no inline script", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] })
      const headersOf = (path: string, init: RequestInit = {}) =>
        Effect.promise(() =>
          fetch(`${url}${path}`, init).then(async (r) => ({
            status: r.status,
            headers: r.headers,
            text: await r.text()
          }))
        )
      for (
        const reply of [
          yield* headersOf("/workflows"),
          yield* headersOf("/workflows/nope"),
          yield* headersOf("/"),
          yield* headersOf("/docs"),
          yield* headersOf("/workflows/notes/runs", {
            method: "POST",
            body: "{",
            headers: { "content-type": "application/json" }
          })
        ]
      ) {
        expect(reply.headers.get("x-content-type-options")).toBe("nosniff")
        expect(reply.headers.get("x-frame-options")).toBe("DENY")
        expect(reply.headers.get("referrer-policy")).toBe("no-referrer")
        const csp = reply.headers.get("content-security-policy") ?? ""
        expect(csp).toContain("frame-ancestors 'none'")
        expect(csp).not.toContain("unsafe-inline")
        if ((reply.headers.get("content-type") ?? "").startsWith("application/json")) {
          expect(reply.headers.get("cache-control")).toBe("no-store")
        }
      }
      const page = yield* headersOf("/")
      expect(page.headers.get("content-security-policy")).toMatch(/script-src 'self'(;|$)/)
      const docs = yield* headersOf("/docs")
      expect(docs.headers.get("content-security-policy")).toMatch(/script-src 'self' 'sha256-[^']+'/)
    }))
})

describe("values", () => {
  it.scoped("JSON nested deeper than the limit is a 400 at the edge, not a stack overflow; so is a __proto__ key", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] })
      const deep = "[".repeat(5000) + "]".repeat(5000)
      const deepObject = "{\"a\":".repeat(5000) + "1" + "}".repeat(5000)
      for (
        const body of [
          `{"input":"x","sessionState":{"notes":[],"deep":${deep}}}`,
          `{"input":${deepObject}}`,
          `{"input":"x","sessionState":{"notes":[],"__proto__":{"polluted":true}}}`
        ]
      ) {
        const reply = yield* post(`${url}/workflows/notes/runs`, body, { "content-type": "application/json" })
        expect(reply.status).toBe(400)
        expect(reply.body).toMatchObject({ _tag: "BadRequest", reason: "body" })
      }
      const proto = yield* request(`${url}/workflows/notes/sessions/p1/state`, {
        method: "PUT",
        body: `{"state":{"notes":[],"x":{"__proto__":{"a":1}}}}`,
        headers: { "content-type": "application/json" }
      })
      expect(proto.status).toBe(400)
    }))

  it.scoped(
    "ids over 256 characters, empty or with control characters are a 400, in the path " +
      "and in the body, at every endpoint that takes a run id, before any store sees them",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [notes] })
        const long = "x".repeat(257)
        for (
          const reply of [
            yield* request(`${url}/workflows/notes/sessions/${long}`),
            yield* request(`${url}/workflows/notes/sessions/a%00b/state`),
            yield* request(`${url}/workflows/notes/runs/paused?sessionId=a%00b`),
            yield* post(`${url}/workflows/notes/runs/${long}/cancel`, undefined),
            yield* request(`${url}/runs/a%00b`),
            yield* request(`${url}/workflows/notes/runs/a%00b`),
            yield* request(`${url}/workflows/notes/runs/${long}/events`),
            yield* post(`${url}/workflows/notes/runs/a%00b/continue`, JSON.stringify({ response: true }), {
              "content-type": "application/json"
            }),
            yield* post(`${url}/workflows/notes/runs/a%0Ab/signals/paid`, JSON.stringify({ value: 1 }), {
              "content-type": "application/json"
            }),
            yield* post(`${url}/workflows/notes/runs/a%00b/cancel`, undefined),
            yield* post(`${url}/workflows/notes/runs`, JSON.stringify({ input: "x", runId: "a\u0000b" }), {
              "content-type": "application/json"
            }),
            yield* post(`${url}/workflows/notes/runs`, JSON.stringify({ input: "x", runId: "" }), {
              "content-type": "application/json"
            }),
            yield* post(`${url}/workflows/notes/runs`, JSON.stringify({ input: "x", sessionId: long }), {
              "content-type": "application/json"
            }),
            yield* post(`${url}/workflows/notes/runs`, JSON.stringify({ input: "x", sessionId: "a\u0000b" }), {
              "content-type": "application/json"
            }),
            yield* post(`${url}/workflows/notes/runs`, JSON.stringify({ input: "x", runId: long }), {
              "content-type": "application/json"
            })
          ]
        ) {
          expect(reply.status).toBe(400)
          expect(reply.body._tag).toBe("HttpApiDecodeError")
        }
        const longest = "y".repeat(256)
        expect(
          (yield* post(`${url}/workflows/notes/runs`, JSON.stringify({ input: "x", sessionId: longest }), {
            "content-type": "application/json"
          })).status
        ).toBe(200)
        expect((yield* request(`${url}/workflows/notes/sessions/${longest}`)).status).toBe(200)
      })
  )
})
