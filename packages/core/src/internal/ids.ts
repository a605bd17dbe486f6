/**
 * What a session or run id may be, the same for every store: 1 to
 * {@link maxLength} characters of well-formed Unicode without control
 * characters (so NUL, which PostgreSQL cannot store, and ids too long for an
 * index are refused before any store sees them).
 *
 * @internal
 */

/** @internal */
export const maxLength = 256

/** @internal */
export type Problem = "empty" | "too-long" | "control-character" | "malformed"

/**
 * Why an id cannot be stored as given, if it cannot: one pass over its code
 * units (every store call checks its ids), a control character (C0, NUL
 * included, DEL and C1) found first, then a lone surrogate.
 *
 * @internal
 */
export const problem = (id: string): Problem | undefined => {
  if (id.length === 0) return "empty"
  if (id.length > maxLength) return "too-long"
  let malformed = false
  for (let i = 0; i < id.length; i++) {
    const unit = id.charCodeAt(i)
    if (unit < 0x20 || (unit >= 0x7f && unit <= 0x9f)) return "control-character"
    if (unit < 0xd800 || unit > 0xdfff) continue
    // a high surrogate followed by a low one is a character above U+FFFF; anything else is malformed
    if (unit <= 0xdbff && i + 1 < id.length) {
      const next = id.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++
        continue
      }
    }
    malformed = true
  }
  return malformed ? "malformed" : undefined
}

/** The message of a {@link Problem}. @internal */
export const describe = (what: string, id: string, problem: Problem): string => {
  switch (problem) {
    case "empty":
      return `A ${what} id must not be empty`
    case "too-long":
      return `A ${what} id has at most ${maxLength} characters (this one has ${id.length})`
    case "control-character":
      return `A ${what} id must not contain control characters (NUL, newlines, …)`
    case "malformed":
      return `${what[0]!.toUpperCase()}${what.slice(1)} id ${
        JSON.stringify(id)
      } is not well-formed Unicode (it has a lone surrogate)`
  }
}

/**
 * Orders ids by code point (what UTF-8 byte order, SQLite's `BINARY` and
 * PostgreSQL's `"C"` collation give), not by UTF-16 code unit as `<` does:
 * the two differ where a character above U+FFFF meets one in U+E000–U+FFFF.
 *
 * @internal
 */
export const compare = (a: string, b: string): number => {
  if (a === b) return 0
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return byCodePoint(x) - byCodePoint(y)
  }
  return a.length - b.length
}

/** A UTF-16 code unit moved so that surrogates (characters above U+FFFF) sort after U+E000–U+FFFF. */
const byCodePoint = (unit: number): number => unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit
