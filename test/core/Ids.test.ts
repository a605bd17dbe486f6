/**
 * Session ids every store takes: 1 to 256 characters of well-formed Unicode
 * without control characters; a run on any other id fails with
 * `InvalidSessionId` before a store sees it.
 */
import { describe, expect, it } from "@effect/vitest"
import { SessionStore, Step, Workflow } from "@sessionflow/core"
import { Effect, Either, Schema } from "effect"

const echo = Workflow.make({ name: "echo", steps: [Step.make("echo", ({ input }) => Effect.succeed(input))] })

describe("session ids", () => {
  it.effect("a run on an id that is too long, has a control character or a lone surrogate is refused", () =>
    Effect.gen(function*() {
      for (
        const [sessionId, reason] of [
          ["", "empty"],
          ["x".repeat(SessionStore.maxIdLength + 1), "too-long"],
          ["a\u0000b", "control-character"],
          ["line\nbreak", "control-character"],
          ["\uD800", "malformed"],
          ["\uDC00", "malformed"],
          ["a\uD800b", "malformed"],
          ["\uDC00\uD800", "malformed"],
          ["\u007F", "control-character"],
          ["\u0085", "control-character"],
          // a control character is named before a lone surrogate, wherever each is
          ["\uD800x\u0000", "control-character"]
        ] as const
      ) {
        const error = yield* Effect.flip(Workflow.run(echo, "x", { sessionId }))
        expect(error).toMatchObject({ _tag: "InvalidSessionId", reason })
        expect(yield* SessionStore.SessionStore.pipe(Effect.flatMap((store) => store.info(sessionId)))).toEqual(
          expect.objectContaining({ _tag: "None" })
        )
      }
      expect(SessionStore.maxIdLength).toBe(256)
      const longest = "é".repeat(SessionStore.maxIdLength)
      expect((yield* Workflow.run(echo, "x", { sessionId: longest })).sessionId).toBe(longest)
      // a character above U+FFFF is a surrogate pair, well-formed
      expect((yield* Workflow.run(echo, "x", { sessionId: "a\u{1F600}b\u{10FFFF}" })).sessionId).toBe(
        "a\u{1F600}b\u{10FFFF}"
      )
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it("the Id Schema says the same", () => {
    const decode = Schema.decodeUnknownEither(SessionStore.Id)
    expect(Either.isRight(decode("a-session:1 with spaces"))).toBe(true)
    expect(Either.isLeft(decode("x".repeat(257)))).toBe(true)
    expect(Either.isLeft(decode("nul\u0000"))).toBe(true)
    expect(Either.isLeft(decode(""))).toBe(true)
  })
})
