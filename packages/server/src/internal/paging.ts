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
import * as Option from "effect/Option"
import * as Api from "../WorkflowApi.js"

/** @internal */
export const defaultLimit = 100

/** @internal */
export type Key = SessionStore.CursorKey

/**
 * The key a request's cursor names (none without one); a cursor this server
 * did not give is a 400.
 *
 * @internal
 */
export const decode = (cursor: string | undefined): Effect.Effect<Key | undefined, Api.BadRequest> => {
  if (cursor === undefined) return Effect.succeed(undefined)
  return Option.match(SessionStore.decodeCursor(cursor), {
    onNone: () =>
      Effect.fail(new Api.BadRequest({ reason: "cursor", message: "The cursor is not one this server gave" })),
    onSome: Effect.succeed
  })
}
