/**
 * Who is calling: bearer tokens (the default) or the app's own function; the
 * ownership rule over HTTP (another user's session is a 404, never its
 * state; anonymous callers cannot write to owned sessions).
 */
import { describe, expect, it } from "@effect/vitest"
import { WorkflowApi } from "@sessionflow/server"
import { Effect } from "effect"
import { notes } from "./fixtures.js"
import { parseEvents, request, start, streamRun } from "./utils.js"

const tokens = { "token-of-alice": "alice", "token-of-bob": "bob" }
const as = (token: string | undefined): Record<string, string> =>
  token === undefined ? {} : { authorization: `Bearer ${token}` }
const alice = as("token-of-alice")
const bob = as("token-of-bob")

describe("authentication and ownership", () => {
  it.scoped("another user's session is a 404 on every endpoint, for bob and for anonymous callers; nothing changes", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes], tokens })
      const runs = `${url}/workflows/notes/runs`
      const owned = `${url}/workflows/notes/sessions/s1`

      const mine = yield* request(runs, { method: "POST", json: { input: "secret", sessionId: "s1" }, headers: alice })
      expect(mine.status).toBe(200)
      expect(mine.body.userId).toBe("alice")
      expect((yield* request(owned, { headers: alice })).body.userId).toBe("alice")

      const notFound = { _tag: "NotFound", what: "session", id: "s1", message: "Session 's1' does not exist" }
      for (const headers of [bob, {}]) {
        const attempts = [
          yield* request(owned, { headers }),
          yield* request(`${owned}/state`, { headers }),
          yield* request(`${owned}/runs`, { headers }),
          yield* request(`${owned}/chat`, { headers }),
          yield* request(`${owned}/state`, { method: "PUT", json: { state: { notes: [] } }, headers }),
          yield* request(`${owned}/name`, { method: "PUT", json: { name: "mine now" }, headers }),
          yield* request(owned, { method: "DELETE", headers }),
          yield* request(runs, { method: "POST", json: { input: "x", sessionId: "s1" }, headers }),
          yield* streamRun(runs, { input: "x", sessionId: "s1" }, headers)
        ]
        for (const attempt of attempts) {
          expect(attempt.status).toBe(404)
          expect(attempt.body).toEqual(notFound)
          expect(attempt.text).not.toContain("alice")
          expect(attempt.text).not.toContain("secret")
        }
      }

      // alice's session is as she left it, with her run only
      const after = yield* request(owned, { headers: alice })
      expect(after.body).toMatchObject({ version: 1, state: { notes: ["secret"] } })
      expect(after.body.name).toBeUndefined()
      expect((yield* request(`${owned}/runs`, { headers: alice })).body).toHaveLength(1)
    }))

  it.scoped("listings show the caller's sessions and unowned ones; unowned sessions are open to everyone", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes], tokens })
      const runs = `${url}/workflows/notes/runs`
      yield* request(runs, { method: "POST", json: { input: "a", sessionId: "of-alice" }, headers: alice })
      yield* request(runs, { method: "POST", json: { input: "b", sessionId: "of-bob" }, headers: bob })
      yield* request(runs, { method: "POST", json: { input: "c", sessionId: "shared" } })

      const ids = (headers: Record<string, string>) =>
        request(`${url}/workflows/notes/sessions`, { headers }).pipe(
          Effect.map((reply) => reply.body.sessions.map((s: { sessionId: string }) => s.sessionId).sort())
        )
      expect(yield* ids(alice)).toEqual(["of-alice", "shared"])
      expect(yield* ids(bob)).toEqual(["of-bob", "shared"])
      expect(yield* ids({})).toEqual(["shared"])

      // anyone may use an unowned session; it stays unowned
      const bobs = yield* request(runs, { method: "POST", json: { input: "d", sessionId: "shared" }, headers: bob })
      expect(bobs.status).toBe(200)
      expect(bobs.body.state).toEqual({ notes: ["c", "d"] })
      expect((yield* request(`${url}/workflows/notes/sessions/shared`)).body.userId).toBeUndefined()
    }))

  it.scoped("an unknown token or another scheme is a 401; the workflow list needs no user", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes], tokens })
      const unknown = yield* request(`${url}/workflows/notes/sessions`, { headers: as("forged") })
      expect(unknown.status).toBe(401)
      expect(unknown.body).toEqual({ _tag: "Unauthorized", message: "Unknown bearer token" })
      const basic = yield* request(`${url}/workflows`, { headers: { authorization: "Basic YWxpY2U6eA==" } })
      expect(basic.status).toBe(401)
      expect(basic.body.message).toBe("The Authorization header is not a bearer token")
      const run = yield* request(`${url}/workflows/notes/runs`, {
        method: "POST",
        json: { input: "x", sessionId: "u1" },
        headers: as("forged")
      })
      expect(run.status).toBe(401)
      expect((yield* request(`${url}/workflows/notes/sessions/u1`)).status).toBe(404)
      expect((yield* request(`${url}/workflows`)).status).toBe(200)
    }))

  it.scoped("an app's own authenticate function decides who is calling", () =>
    Effect.gen(function*() {
      const url = yield* start({
        workflows: [notes],
        authenticate: (request) => {
          const user = request.headers["x-user"]
          return user === "mallory"
            ? Effect.fail(new WorkflowApi.Unauthorized({ message: "mallory is banned" }))
            : Effect.succeed(user)
        }
      })
      const runs = `${url}/workflows/notes/runs`
      const carol = yield* request(runs, { method: "POST", json: { input: "x", sessionId: "c1" }, headers: { "x-user": "carol" } })
      expect(carol.body.userId).toBe("carol")
      expect((yield* request(`${url}/workflows/notes/sessions/c1`, { headers: { "x-user": "dave" } })).status).toBe(404)
      const banned = yield* request(runs, { method: "POST", json: { input: "x" }, headers: { "x-user": "mallory" } })
      expect(banned.status).toBe(401)
      expect(banned.body.message).toBe("mallory is banned")

      // streamed, the owner's run shows the owner in RunStarted
      const streamed = yield* streamRun(runs, { input: "y", sessionId: "c1" }, { "x-user": "carol" })
      expect(parseEvents(streamed.text)[0]).toMatchObject({ _tag: "RunStarted", userId: "carol" })
    }))
})
