/**
 * Pages of a listing, by keyset: items sorted by a number, largest first
 * (`updatedAt`, `startedAt`), then by id; a cursor names the last item of the
 * page before, so pages hold still while items are added.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Api from "../WorkflowApi.js"

/** @internal */
export const defaultLimit = 100

type Key = readonly [number, string]

const encode = (key: Key): string => Buffer.from(JSON.stringify(key)).toString("base64url")

const decode = (cursor: string): Key | undefined => {
  try {
    const key = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown
    return Array.isArray(key) && key.length === 2 && typeof key[0] === "number" && typeof key[1] === "string"
      ? [key[0], key[1]]
      : undefined
  } catch {
    return undefined
  }
}

const compare = (a: Key, b: Key) => a[0] !== b[0] ? b[0] - a[0] : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0

/**
 * The page of `items` after `cursor` (from the start without one), at most
 * `limit` (default 100) long, and the cursor of the next page when there is
 * one. An unreadable cursor is a 400.
 *
 * @internal
 */
export const page = <A>(
  items: ReadonlyArray<A>,
  key: (a: A) => Key,
  options: { readonly cursor?: string | undefined; readonly limit?: number | undefined }
): Effect.Effect<{ readonly items: ReadonlyArray<A>; readonly next: string | undefined }, Api.BadRequest> => {
  const after = options.cursor === undefined ? undefined : decode(options.cursor)
  if (options.cursor !== undefined && after === undefined) {
    return Effect.fail(new Api.BadRequest({ reason: "cursor", message: "The cursor is not one this server gave" }))
  }
  const limit = options.limit ?? defaultLimit
  const sorted = items.map((item) => [key(item), item] as const).sort((a, b) => compare(a[0], b[0]))
  const rest = after === undefined ? sorted : sorted.filter(([k]) => compare(k, after) > 0)
  const taken = rest.slice(0, limit)
  return Effect.succeed({
    items: taken.map(([, item]) => item),
    next: rest.length > limit ? encode(taken[taken.length - 1]![0]) : undefined
  })
}
