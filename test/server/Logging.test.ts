/**
 * The server logs one line when it listens and one per request, at the
 * level its options give.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, LogLevel } from "effect"
import { notes } from "./fixtures.js"
import { request, start } from "./utils.js"

describe("logging", () => {
  it.scoped("one line when listening and one per request at requestLogLevel", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        lines.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
      })
      const url = yield* start({ workflows: [notes], requestLogLevel: "Info" }).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Logger.withMinimumLogLevel(LogLevel.Debug)
      )
      expect(lines.filter((l) => l.includes("listening on http://127.0.0.1:"))).toHaveLength(1)
      yield* request(`${url}/workflows`)
      yield* request(`${url}/workflows/nope`)
      expect(lines).toEqual(expect.arrayContaining([
        expect.stringMatching(/^INFO GET \/workflows 200 \d+ ms$/),
        expect.stringMatching(/^INFO GET \/workflows\/nope 404 \d+ ms$/)
      ]))
    }))
  it.scoped("the default Debug line is written only where the minimum log level lets Debug through", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        lines.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
      })
      const withLogger = Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      // the default minimum (Info): no request line
      const quiet = yield* start({ workflows: [notes] }).pipe(withLogger)
      yield* request(`${quiet}/workflows`)
      expect(lines.filter((l) => l.includes("GET /workflows"))).toEqual([])
      // Debug let through: the line, at Debug
      const verbose = yield* start({ workflows: [notes] }).pipe(withLogger, Logger.withMinimumLogLevel(LogLevel.Debug))
      yield* request(`${verbose}/workflows`)
      expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(/^DEBUG GET \/workflows 200 \d+ ms$/)]))
    }))
})
