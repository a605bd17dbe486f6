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

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

// C0 controls (NUL included), DEL and the C1 controls
// eslint-disable-next-line no-control-regex
const control = /[\u0000-\u001F\u007F-\u009F]/

/** @internal */
export type Problem = "empty" | "too-long" | "control-character" | "malformed"

/** Why an id cannot be stored as given, if it cannot. @internal */
export const problem = (id: string): Problem | undefined =>
  id.length === 0
    ? "empty"
    : id.length > maxLength
    ? "too-long"
    : control.test(id)
    ? "control-character"
    : loneSurrogate.test(id)
    ? "malformed"
    : undefined

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
      return `${what[0]!.toUpperCase()}${what.slice(1)} id ${JSON.stringify(id)} is not well-formed Unicode (it has a lone surrogate)`
  }
}
