/**
 * `GET /health` for load balancers: 200 while the store answers, 503 when it
 * does not (within 5 seconds). No authentication; it tells nothing of any
 * session.
 *
 * @internal
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { SessionStore } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** @internal */
export const layer = (
  prefix: "" | `/${string}`
): Layer.Layer<never, never, HttpLayerRouter.HttpRouter | SessionStore.SessionStore> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const router = yield* HttpLayerRouter.HttpRouter
    const store = yield* SessionStore.SessionStore
    const check = store.info("health-check").pipe(
      Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the store did not answer within 5 s") }),
      Effect.as(HttpServerResponse.unsafeJson({ status: "ok" })),
      Effect.catchAll((error) =>
        Effect.succeed(
          HttpServerResponse.unsafeJson({ status: "unavailable", message: error.message }, { status: 503 })
        )
      )
    )
    yield* router.add("GET", `${prefix}/health`, check)
  }))
