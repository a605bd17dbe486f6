/**
 * Watching a session over HTTP: a client connected to one server sees what a
 * run on another server (another store over the same database) committed.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, type Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { notes } from "./fixtures.js"
import { type Frame, parseFrames, request, start } from "./utils.js"

const tokens = { "token-of-alice": "alice", "token-of-bob": "bob" }

/**
 * Opens the watch stream and reads it until `done` holds for the frames so far
 * (then closes it); `opened` runs once the response has started.
 */
const watchUntil = (
  url: string,
  done: (frames: ReadonlyArray<Frame>) => boolean,
  opened: () => Promise<void>,
  headers: Record<string, string> = {}
) =>
  Effect.promise(async () => {
    const abort = new AbortController()
    const response = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: abort.signal })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ""
    let started = false
    try {
      for (;;) {
        const { done: ended, value } = await reader.read()
        if (ended) break
        text += decoder.decode(value, { stream: true })
        const frames = parseFrames(text.slice(0, text.lastIndexOf("\n\n") + 2))
        if (!started && frames.length > 0) {
          started = true
          await opened()
        }
        if (done(frames)) return frames
      }
      return parseFrames(text)
    } finally {
      abort.abort()
    }
  })

const updates = (frames: ReadonlyArray<Frame>) =>
  frames.filter((f) => f.event === "SessionUpdate").map((f) => JSON.parse(f.data!))

describe("watching a session over HTTP", () => {
  // live clock: the SQLite store polls the session's version with real sleeps
  it.scopedLive("a client of server B sees the runs a client of server A made, version after version", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-watch-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const db = path.join(dir, "shared.db")
      // two servers, each with its own store over one SQLite file: two app servers over one database
      const a = yield* start({ workflows: [notes] }, SqliteSessionStore.layer({ filename: db }) as Layer.Layer<any>)
      const b = yield* start({ workflows: [notes] }, SqliteSessionStore.layer({ filename: db }) as Layer.Layer<any>)
      const first = yield* request(`${a}/workflows/notes/runs`, {
        method: "POST",
        json: { input: "one", sessionId: "shared" }
      })
      expect(first.status).toBe(200)

      const later: Array<string> = []
      const frames = yield* watchUntil(
        `${b}/workflows/notes/sessions/shared/watch`,
        (frames) => updates(frames).some((u) => u.version === 3),
        async () => {
          // the stream has started (with the current version): now run twice on the other server
          for (const input of ["two", "three"]) {
            const reply = await fetch(`${a}/workflows/notes/runs`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ input, sessionId: "shared" })
            })
            later.push(((await reply.json()) as { runId: string }).runId)
          }
        }
      )
      const seen = updates(frames)
      expect(seen[0]).toMatchObject({
        sessionId: "shared",
        version: 1,
        runId: first.body.runId,
        state: { notes: ["one"] }
      })
      expect(frames.find((f) => f.event === "SessionUpdate")?.id).toBe("1")
      const last = seen[seen.length - 1]
      expect(last).toMatchObject({ version: 3, runId: later[1], state: { notes: ["one", "two", "three"] } })
      // versions only go up (a polling store may skip one committed within an interval, never the latest)
      expect(seen.map((u) => u.version)).toEqual([...new Set(seen.map((u) => u.version))].sort((x, y) => x - y))
    }))

  it.scoped("an unknown session, or another user's, is a 404 that tells nothing of it", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes], tokens })
      const alice = { authorization: "Bearer token-of-alice" }
      const created = yield* request(`${url}/workflows/notes/runs`, {
        method: "POST",
        json: { input: "secret", sessionId: "alices" },
        headers: alice
      })
      expect(created.status).toBe(200)
      const missing = yield* request(`${url}/workflows/notes/sessions/nobody/watch`, { headers: alice })
      expect(missing.status).toBe(404)
      const bobs = yield* request(`${url}/workflows/notes/sessions/alices/watch`, {
        headers: { authorization: "Bearer token-of-bob" }
      })
      expect(bobs.status).toBe(404)
      expect(bobs.text).not.toContain("secret")
      // alice herself gets her session's current version
      const frames = yield* watchUntil(
        `${url}/workflows/notes/sessions/alices/watch`,
        (frames) => updates(frames).length > 0,
        async () => {},
        alice
      )
      expect(updates(frames)[0]).toMatchObject({ version: 1, state: { notes: ["secret"] } })
    }))

  it.scoped("the OpenAPI document describes the watch as an event stream", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] })
      const doc = yield* request(`${url}/openapi.json`)
      const ok = doc.body.paths["/workflows/{name}/sessions/{sessionId}/watch"].get.responses["200"]
      expect(Object.keys(ok.content)).toEqual(["text/event-stream"])
    }))
})
