/**
 * A client that never reads its event stream costs the server a bounded
 * buffer: past `maxStreamBuffer` unsent bytes it is cut off, and its run
 * completes without it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Step, Workflow } from "@sessionflow/core"
import { Effect } from "effect"
import * as net from "node:net"
import { request, start } from "./utils.js"

const big = "x".repeat(100_000)

/** 200 steps of 100 KB each: about 20 MB of events. */
const chatty = Workflow.make({
  name: "chatty",
  steps: Array.from({ length: 200 }, (_, i) => Step.make(`s${i}`, () => Effect.succeed(big)))
})

describe("a client that does not read", () => {
  it.scoped("is cut off past the bound, and its run completes without it", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [chatty], maxStreamBuffer: 256 * 1024 })
      const { port } = new URL(url)
      const body = JSON.stringify({ input: "go", sessionId: "slow-1" })
      // a raw connection that sends the request and then reads nothing
      const socket = yield* Effect.acquireRelease(
        Effect.async<net.Socket>((resume) => {
          const socket = net.connect({ port: Number(port), host: "127.0.0.1" }, () => resume(Effect.succeed(socket)))
        }),
        (socket) => Effect.sync(() => socket.destroy())
      )
      socket.pause()
      socket.write(
        `POST /workflows/chatty/runs HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
          `Accept: text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      )

      // the run completes although its client reads nothing
      const runs = `${url}/workflows/chatty/sessions/slow-1/runs`
      let status: string | undefined
      for (let i = 0; i < 200 && status !== "completed"; i++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
        const reply = yield* request(runs)
        status = reply.status === 200 ? reply.body[0]?.status : undefined
      }
      expect(status).toBe("completed")

      // the client was cut off: what it can still read is a fraction of the run's 20 MB, then the end
      const received = yield* Effect.async<number>((resume) => {
        let bytes = 0
        socket.on("data", (chunk: Buffer) => {
          bytes += chunk.length
        })
        socket.on("close", () => resume(Effect.succeed(bytes)))
        socket.on("end", () => resume(Effect.succeed(bytes)))
        socket.resume()
      })
      expect(received).toBeGreaterThan(0)
      expect(received).toBeLessThan(10_000_000)
    }), 60_000)
})
