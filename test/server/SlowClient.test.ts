/**
 * A client that never reads its event stream costs the server a bounded
 * buffer: past `maxStreamBuffer` unsent bytes it is cut off, and its run
 * completes without it; it picks the run's events up again from the log.
 */
import { describe, expect, it } from "@effect/vitest"
import { Step, Workflow } from "@sessionflow/core"
import { Effect } from "effect"
import * as net from "node:net"
import { parseEvents, request, start } from "./utils.js"

const big = "x".repeat(100_000)

/** 200 steps of 100 KB each: about 20 MB of events. */
const chatty = Workflow.make({
  name: "chatty",
  steps: Array.from({ length: 200 }, (_, i) => Step.make(`s${i}`, () => Effect.succeed(big)))
})

/** A raw connection that posts a streamed run of `chatty` and then reads nothing (until resumed). */
const silentClient = (port: string, body: string) =>
  Effect.gen(function*() {
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
    return socket
  })

describe("a client that does not read", () => {
  it.scoped("is cut off past the bound, and its run completes without it", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [chatty], maxStreamBuffer: 256 * 1024 })
      const { port } = new URL(url)
      const body = JSON.stringify({ input: "go", sessionId: "slow-1" })
      // a raw connection that sends the request and then reads nothing
      const socket = yield* silentClient(port, body)

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

  it.scoped(
    "cut off, it resumes from the run's stored events with Last-Event-ID: every event once, in order",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [chatty], maxStreamBuffer: 256 * 1024 })
        const { port } = new URL(url)
        const body = JSON.stringify({ input: "go", sessionId: "slow-2", runId: "slow-run" })
        const socket = yield* silentClient(port, body)
        let status: string | undefined
        for (let i = 0; i < 200 && status !== "completed"; i++) {
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
          const reply = yield* request(`${url}/runs/slow-run`)
          status = reply.status === 200 ? reply.body.status : undefined
        }
        expect(status).toBe("completed")
        // what the cut-off client received: an HTTP response with a chunked body, up to where it was cut off
        const raw = yield* Effect.async<Buffer>((resume) => {
          const chunks: Array<Buffer> = []
          socket.on("data", (chunk: Buffer) => chunks.push(chunk))
          socket.on("close", () => resume(Effect.succeed(Buffer.concat(chunks))))
          socket.on("end", () => resume(Effect.succeed(Buffer.concat(chunks))))
          socket.resume()
        })
        const text = dechunk(raw)
        const seen = parseEvents(text.slice(0, text.lastIndexOf("\n\n") + 2))
        expect(seen.length).toBeGreaterThan(0)
        expect(seen.at(-1)._tag).not.toBe("RunCompleted")
        const rest = yield* request(`${url}/workflows/chatty/runs/slow-run/events`, {
          headers: { "last-event-id": String(seen.at(-1).seq) }
        })
        const events = [...seen, ...parseEvents(rest.text)]
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
        expect(events.filter((e) => e._tag === "StepCompleted")).toHaveLength(200)
        expect(events.at(-1)._tag).toBe("RunCompleted")
      }),
    60_000
  )
})

/** The body of a raw HTTP/1.1 response with `Transfer-Encoding: chunked`, as text (up to its last whole chunk). */
const dechunk = (raw: Buffer): string => {
  let at = raw.indexOf("\r\n\r\n") + 4
  const parts: Array<Buffer> = []
  while (at < raw.length) {
    const line = raw.indexOf("\r\n", at)
    if (line < 0) break
    const size = parseInt(raw.subarray(at, line).toString("latin1"), 16)
    if (!(size > 0) || line + 2 + size > raw.length) break
    parts.push(raw.subarray(line + 2, line + 2 + size))
    at = line + 2 + size + 2
  }
  return Buffer.concat(parts).toString("utf8")
}
