/**
 * `GET /workflows/:name/graph`: the workflow's step tree (every kind of
 * container, a nested workflow), described in the OpenAPI document; the
 * page's icon.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { shop } from "./shop.js"
import { request, start } from "./utils.js"

describe("the step tree", () => {
  it.scoped("answers the workflow's step tree, by id or name; an unknown workflow is a 404", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [shop] })
      const graph = yield* request(`${url}/workflows/shop/graph`)
      expect(graph.status).toBe(200)
      const summary = (nodes: ReadonlyArray<any>): Array<unknown> =>
        nodes.map((
          n
        ) => [
          n.kind,
          n.path.join("/"),
          ...(n.branch === undefined ? [] : [n.branch]),
          ...(n.children === undefined ? [] : [summary(n.children)])
        ])
      expect(summary(graph.body)).toEqual([
        ["step", "price"],
        ["condition", "bulk?", [["step", "bulk?/bulk discount", "steps"], ["step", "bulk?/single price", "else"]]],
        ["router", "ship", [["step", "ship/courier"], ["step", "ship/post"]]],
        ["loop", "pack", [["step", "pack/box"]]],
        ["parallel", "notify", [["step", "notify/email"], ["step", "notify/sms"]]],
        ["workflow", "book", [["step", "book/write"]]]
      ])
      const missing = yield* request(`${url}/workflows/nope/graph`)
      expect(missing.status).toBe(404)
      expect(missing.body._tag).toBe("NotFound")
    }))

  it.scoped("is in the OpenAPI document with the StepNode Schema", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [shop] })
      const openapi = yield* request(`${url}/openapi.json`)
      const operation = openapi.body.paths["/workflows/{name}/graph"]?.get
      expect(operation?.summary).toBe("The workflow's step tree")
      expect(JSON.stringify(operation.responses["200"])).toContain("StepNode")
      expect(Object.keys(openapi.body.components.schemas)).toContain("StepNode")
    }))

  it.scoped("the page links its icon, an SVG served by the server", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [shop] })
      const page = yield* request(`${url}/`)
      expect(page.text).toContain(`<link rel="icon" type="image/svg+xml" href="/favicon.svg">`)
      const icon = yield* request(`${url}/favicon.svg`)
      expect(icon.status).toBe(200)
      expect(icon.contentType).toBe("image/svg+xml")
      expect(icon.text).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/)
    }))
})
