/**
 * The local OpenAI-compatible test server for W6, in its own process so that
 * its CPU time is not the client's. Prints `{ url, apiKey }` as one JSON line
 * and serves until stdin closes. Every Chat Completions request is answered
 * with a call of `add_item`, unless it already carries a tool result, which
 * is answered with a short text.
 */
import * as Effect from "effect/Effect"
import * as TestServer from "../../test/openai/TestServer.ts"

const hasToolResult = (body: Readonly<Record<string, unknown>>) =>
  Array.isArray(body.messages) &&
  body.messages.some((m) => typeof m === "object" && m !== null && (m as { role?: unknown }).role === "tool")

await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const server = yield* TestServer.make({
    handler: (request) =>
      hasToolResult(request.body)
        ? TestServer.text("I added milk to your shopping list.")
        : TestServer.toolCalls([{ name: "add_item", arguments: { item: "milk" } }])
  })
  process.stdout.write(JSON.stringify({ url: server.url, apiKey: server.apiKey }) + "\n")
  yield* Effect.async<void>((resume) => {
    process.stdin.on("end", () => resume(Effect.void))
    process.stdin.on("close", () => resume(Effect.void))
    process.stdin.resume()
  })
})))
