/**
 * The cursors of paged listings (`SessionStore.encodeCursor` /
 * `decodeCursor`), which the server's `next` and the CLI's `--after` give:
 * a key comes back as it went in, and text that is not such a cursor names
 * nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { Option } from "effect"

describe("SessionStore cursors", () => {
  it("a key comes back as it went in, whatever its id's characters", () => {
    for (
      const key of [[1_700_000_000_000, "s1"], [0, "é/日本 ?&=+"], [Number.MAX_SAFE_INTEGER, "x".repeat(256)]] as const
    ) {
      const cursor = SessionStore.encodeCursor(key)
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/)
      expect(SessionStore.decodeCursor(cursor)).toEqual(Option.some(key))
    }
  })

  it("text that is not a cursor it made names nothing", () => {
    const encoded = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
    for (
      const text of [
        "",
        "!!",
        "not a cursor",
        encoded({ updatedAt: 1, sessionId: "s1" }),
        encoded([1, "s1", 2]),
        encoded([1.5, "s1"]),
        encoded([2 ** 60, "s1"]),
        encoded(["1", "s1"]),
        encoded([1, ""]),
        encoded([1, "a\u0000b"])
      ]
    ) expect(SessionStore.decodeCursor(text)).toEqual(Option.none())
  })
})
