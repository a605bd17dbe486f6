/**
 * Pages of a listing, by keyset: the store orders items by a number,
 * largest first (`updatedAt`, `startedAt`), then by id; a cursor names the
 * last item of the page before, so pages hold still while items are added,
 * and a page reads only its own rows.
 *
 * @internal
 */
import { SessionStore } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Api from "../WorkflowApi.js"

/** @internal */
export const defaultLimit = 100

/** @internal */
export type Key = readonly [number, string]

/** The cursor that names `key` (opaque to clients). @internal */
export const encode = (key: Key): string => Buffer.from(JSON.stringify(key)).toString("base64url")

const isId = Schema.is(SessionStore.Id)

const read = (cursor: string): Key | undefined => {
  try {
    const key = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown
    return Array.isArray(key) && key.length === 2 && Number.isSafeInteger(key[0]) && typeof key[1] === "string" &&
        isId(key[1])
      ? [key[0] as number, key[1]]
      : undefined
  } catch {
    return undefined
  }
}

/**
 * The key a request's cursor names (none without one); a cursor this server
 * did not give is a 400.
 *
 * @internal
 */
export const decode = (cursor: string | undefined): Effect.Effect<Key | undefined, Api.BadRequest> => {
  if (cursor === undefined) return Effect.succeed(undefined)
  const key = read(cursor)
  return key === undefined
    ? Effect.fail(new Api.BadRequest({ reason: "cursor", message: "The cursor is not one this server gave" }))
    : Effect.succeed(key)
}
