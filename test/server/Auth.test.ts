/**
 * Who is calling: bearer tokens (the default) or the app's own function; the
 * ownership rule over HTTP (another user's session is a 404, never its
 * state; anonymous callers cannot write to owned sessions).
 */
import { describe, expect, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { WorkflowApi, WorkflowServer } from "@sessionflow/server"
import { Effect, Layer } from "effect"
import * as jose from "jose"
import { approvals, notes } from "./fixtures.js"
import { parseEvents, request, start, streamRun } from "./utils.js"

const tokens = { "token-of-alice": "alice", "token-of-bob": "bob" }
const as = (token: string | undefined): Record<string, string> =>
  token === undefined ? {} : { authorization: `Bearer ${token}` }
const alice = as("token-of-alice")
const bob = as("token-of-bob")

describe("authentication and ownership", () => {
  it.scoped(
    "another user's session is a 404 on every endpoint, for bob and for anonymous callers; nothing changes",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [notes], tokens })
        const runs = `${url}/workflows/notes/runs`
        const owned = `${url}/workflows/notes/sessions/s1`

        const mine = yield* request(runs, {
          method: "POST",
          json: { input: "secret", sessionId: "s1" },
          headers: alice
        })
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
            yield* request(`${owned}/versions`, { headers }),
            yield* request(`${owned}/versions/1`, { headers }),
            yield* request(`${owned}/fork`, { method: "POST", json: { newSessionId: "stolen" }, headers }),
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
      })
  )

  it.scoped(
    "a session is its creator's only: listings show the caller's " +
      "own sessions, anonymous ones are anonymous callers' only",
    () =>
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
        expect(yield* ids(alice)).toEqual(["of-alice"])
        expect(yield* ids(bob)).toEqual(["of-bob"])
        expect(yield* ids({})).toEqual(["shared"])

        // anonymous callers share anonymous sessions; a signed-in user gets the 404 of a missing session
        expect((yield* request(runs, { method: "POST", json: { input: "d", sessionId: "shared" } })).body.state)
          .toEqual({
            notes: ["c", "d"]
          })
        const bobs = yield* request(runs, { method: "POST", json: { input: "e", sessionId: "shared" }, headers: bob })
        expect(bobs.status).toBe(404)
        expect(bobs.body).toMatchObject({ _tag: "NotFound", what: "session", id: "shared" })
        expect((yield* request(`${url}/workflows/notes/sessions/shared`)).body).toMatchObject({
          state: { notes: ["c", "d"] }
        })
      })
  )

  it.scoped("a squatter's anonymous session cannot be taken over, nor read through once a user picks its id", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes], tokens })
      const runs = `${url}/workflows/notes/runs`
      // an anonymous caller creates the session a user will ask for
      expect((yield* request(runs, { method: "POST", json: { input: "bait", sessionId: "alice-chat" } })).status).toBe(
        200
      )
      // alice's run on it is refused: nothing of hers is written there
      for (
        const attempt of [
          yield* request(runs, {
            method: "POST",
            json: { input: "my secret", sessionId: "alice-chat" },
            headers: alice
          }),
          yield* streamRun(runs, { input: "my secret", sessionId: "alice-chat" }, alice),
          yield* request(`${url}/workflows/notes/sessions/alice-chat/state`, {
            method: "PUT",
            json: { state: { notes: ["mine"] } },
            headers: alice
          })
        ]
      ) {
        expect(attempt.status).toBe(404)
      }
      const squatted = yield* request(`${url}/workflows/notes/sessions/alice-chat/runs`)
      expect(squatted.body).toHaveLength(1)
      expect(squatted.text).not.toContain("my secret")
      expect((yield* request(`${url}/workflows/notes/sessions/alice-chat`)).body.userId).toBeUndefined()
    }))

  it.scoped(
    "a user's first run on a new session, waiting for approval, " +
      "is invisible: a 404 for anyone else, never a 409 naming it",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [approvals], tokens })
        const runs = `${url}/workflows/approvals/runs`
        const paused = yield* request(runs, {
          method: "POST",
          json: { input: "plan", sessionId: "fresh" },
          headers: alice
        })
        expect(paused.status).toBe(202)
        for (const headers of [bob, {}]) {
          for (
            const attempt of [
              yield* request(runs, { method: "POST", json: { input: "x", sessionId: "fresh" }, headers }),
              yield* streamRun(runs, { input: "x", sessionId: "fresh" }, headers)
            ]
          ) {
            expect(attempt.status).toBe(404)
            expect(attempt.body).toEqual({
              _tag: "NotFound",
              what: "session",
              id: "fresh",
              message: "Session 'fresh' does not exist"
            })
            expect(attempt.text).not.toContain(paused.body.runId)
          }
        }
        // alice herself is told her run waits
        const mine = yield* request(runs, { method: "POST", json: { input: "x", sessionId: "fresh" }, headers: alice })
        expect(mine.status).toBe(409)
        expect(mine.body).toMatchObject({ reason: "session-paused", runId: paused.body.runId })
      })
  )

  it.scoped("requireAuth refuses anonymous callers on every endpoint", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes], tokens, requireAuth: true })
      for (
        const attempt of [
          yield* request(`${url}/workflows`),
          yield* request(`${url}/workflows/notes/sessions`),
          yield* request(`${url}/workflows/notes/runs`, { method: "POST", json: { input: "x" } })
        ]
      ) {
        expect(attempt.status).toBe(401)
        expect(attempt.body._tag).toBe("Unauthorized")
      }
      const run = yield* request(`${url}/workflows/notes/runs`, {
        method: "POST",
        json: { input: "x" },
        headers: alice
      })
      expect(run.status).toBe(200)
      expect(run.body.userId).toBe("alice")
    }))

  it.scoped("bearer JWTs: a valid token is its subject; a forged, expired or foreign one is a 401", () =>
    Effect.gen(function*() {
      const secret = new TextEncoder().encode("a-test-secret-of-at-least-32-bytes!!")
      const url = yield* start({
        workflows: [notes],
        requireAuth: true,
        authenticate: WorkflowServer.jwt({ secret, issuer: "https://id.test", audience: "sessionflow" })
      })
      const sign = (claims: { sub?: string; iss?: string; exp?: string | number }, key = secret) =>
        Effect.promise(() => {
          let jwt = new jose.SignJWT({}).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setAudience("sessionflow")
            .setIssuer(claims.iss ?? "https://id.test").setExpirationTime(claims.exp ?? "5m")
          if (claims.sub !== undefined) jwt = jwt.setSubject(claims.sub)
          return jwt.sign(key)
        })
      const runs = `${url}/workflows/notes/runs`
      const good = yield* sign({ sub: "carol" })
      const ok = yield* request(runs, { method: "POST", json: { input: "x", sessionId: "j1" }, headers: as(good) })
      expect(ok.status).toBe(200)
      expect(ok.body.userId).toBe("carol")
      for (
        const token of [
          yield* sign({ sub: "carol" }, new TextEncoder().encode("another-secret-of-at-least-32-bytes!")),
          yield* sign({ sub: "carol", exp: Math.floor(Date.now() / 1000) - 60 }),
          yield* sign({ sub: "carol", iss: "https://evil.test" }),
          yield* sign({}),
          "not.a.jwt"
        ]
      ) {
        const refused = yield* request(`${url}/workflows/notes/sessions/j1`, { headers: as(token) })
        expect(refused.status).toBe(401)
        expect(refused.text).not.toContain("carol")
      }
    }))

  it.effect("serve refuses a non-loopback host without requireAuth unless allowOpen", () =>
    Effect.gen(function*() {
      expect(WorkflowServer.isLoopback("127.0.0.1")).toBe(true)
      expect(WorkflowServer.isLoopback("::1")).toBe(true)
      expect(WorkflowServer.isLoopback("0.0.0.0")).toBe(false)
      const refused = yield* Layer.build(
        WorkflowServer.serve({ workflows: [notes], host: "0.0.0.0", port: 0, tokens }).pipe(
          Layer.provide(SessionStore.layerMemory)
        )
      ).pipe(Effect.scoped, Effect.flip)
      expect(refused._tag).toBe("OpenServerRefused")
      expect(refused.message).toContain("0.0.0.0")
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
      const carol = yield* request(runs, {
        method: "POST",
        json: { input: "x", sessionId: "c1" },
        headers: { "x-user": "carol" }
      })
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
