/**
 * Mounting the server in an existing HttpApi app (the package README's
 * example, run as it is shown), and calling it with a client derived from
 * `WorkflowApi`.
 */
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest, HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { WorkflowApi } from "@sessionflow/server"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { root } from "../process.js"
import { AppServer } from "./MountExample.js"
import { request } from "./utils.js"

describe("mounted in an existing HttpApi app", () => {
  for (const readme of ["README.md", "packages/server/README.md"]) {
    it(`${readme} shows test/server/MountExample.ts unchanged`, () => {
      const text = fs.readFileSync(path.join(root, readme), "utf8")
      const example = fs.readFileSync(path.join(root, "test/server/MountExample.ts"), "utf8")
      expect(text).toContain("```ts\n" + example + "```")
    })
  }

  it.scoped("serves the app's routes and the workflows under the prefix, and a WorkflowApi client calls it", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(AppServer(0))
      const address = Context.get(context, HttpServer.HttpServer).address
      const url = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`

      expect((yield* request(`${url}/health`)).body).toBe("ok")
      const run = yield* request(`${url}/sessionflow/workflows/visits/runs`, {
        method: "POST",
        json: { input: null, sessionId: "home" },
        headers: { authorization: "Bearer token-of-alice" }
      })
      expect(run.status).toBe(200)
      expect(run.body).toMatchObject({ userId: "alice", content: 1, state: { count: 1 } })
      expect((yield* request(`${url}/workflows`)).status).toBe(404)
      const page = yield* request(`${url}/sessionflow/`)
      expect(page.text).toContain("<meta name=\"sessionflow-base\" content=\"/sessionflow\">")
      expect(page.text).toContain("src=\"/sessionflow/assets/app.js\"")
      expect((yield* request(`${url}/sessionflow/assets/app.js`)).contentType).toContain("text/javascript")
      expect((yield* request(`${url}/sessionflow/assets/nope.js`)).status).toBe(404)
      const spec = yield* request(`${url}/sessionflow/openapi.json`)
      expect(Object.keys(spec.body.paths)).toContain("/sessionflow/workflows/{name}/runs")
      expect((yield* request(`${url}/sessionflow/docs`)).status).toBe(200)

      // a typed client of the same API
      const client = yield* HttpApiClient.make(WorkflowApi.WorkflowApi.prefix("/sessionflow"), {
        baseUrl: url,
        transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken("token-of-alice"))
      }).pipe(Effect.provide(FetchHttpClient.layer))
      const second = yield* client.runs.start({
        path: { name: "visits" },
        payload: { input: null, sessionId: "home" },
        headers: {}
      })
      expect(second.status === "completed" && second.state).toEqual({ count: 2 })
      const sessions = yield* client.sessions.list({ path: { name: "visits" }, urlParams: {} })
      expect(sessions.sessions.map((s) => [s.sessionId, s.userId, s.version])).toEqual([["home", "alice", 2]])
      const missing = yield* Effect.flip(client.sessions.get({ path: { name: "visits", sessionId: "nope" } }))
      expect(missing).toBeInstanceOf(WorkflowApi.NotFound)
    }))
})
