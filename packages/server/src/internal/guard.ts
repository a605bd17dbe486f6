/**
 * The server's edge, in front of every route under its prefix: requests from
 * another site and bodies that are not JSON are refused before anything
 * reads them, unknown methods and paths get a JSON answer, and every answer
 * carries the security headers.
 *
 * @internal
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import { createHash } from "node:crypto"

/** @internal */
export interface GuardOptions {
  readonly prefix: "" | `/${string}`
  /** origins (`https://app.example.com`) whose pages may send state-changing requests besides the server's own */
  readonly allowedOrigins: ReadonlyArray<string>
  /** the level of the one line logged per request (`None`: none) */
  readonly requestLogLevel: LogLevel.Literal
}

/** The methods the API answers; any other is a 405. */
const knownMethods = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"])

/** The methods that may change something: they must come from the server's own pages (or no page), with JSON. */
const unsafeMethods = new Set(["POST", "PUT", "DELETE", "PATCH"])

const jsonError = (status: number, tag: string, message: string, extra: Record<string, unknown> = {}) =>
  HttpServerResponse.unsafeJson({ _tag: tag, ...extra, message }, { status })

/** The media type of a Content-Type header, lower-cased, without its parameters. */
const mediaType = (contentType: string): string => contentType.split(";")[0]!.trim().toLowerCase()

const hasBody = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const length = request.headers["content-length"]
  return request.headers["transfer-encoding"] !== undefined || (length !== undefined && length.trim() !== "0")
}

/**
 * Why a state-changing request is refused as cross-site, if it is: a
 * browser's `Sec-Fetch-Site` other than `same-origin` or `none`, else an
 * `Origin` that is neither the request's own host nor an allowed origin.
 */
const crossSite = (request: HttpServerRequest.HttpServerRequest, allowed: ReadonlySet<string>): string | undefined => {
  const origin = request.headers["origin"]
  if (origin !== undefined && allowed.has(origin)) return undefined
  const site = request.headers["sec-fetch-site"]
  if (site !== undefined) {
    return site === "same-origin" || site === "none" ? undefined : `a ${site} request`
  }
  if (origin === undefined) return undefined
  let host: string
  try {
    host = new URL(origin).host
  } catch {
    return `a request from origin ${JSON.stringify(origin)}`
  }
  return host === request.headers["host"] ? undefined : `a request from origin ${origin}`
}

/**
 * What the edge refuses, before any route reads the request: an unknown
 * method (405), a state-changing request from another site (403), a body that
 * is not `application/json` (415).
 *
 * @internal
 */
const refusal = (
  request: HttpServerRequest.HttpServerRequest,
  allowed: ReadonlySet<string>
): HttpServerResponse.HttpServerResponse | undefined => {
  const method = request.method.toUpperCase()
  if (!knownMethods.has(method)) {
    return jsonError(405, "MethodNotAllowed", `Method ${method} is not allowed`, { method })
  }
  if (!unsafeMethods.has(method)) return undefined
  const cross = crossSite(request, allowed)
  if (cross !== undefined) {
    return jsonError(403, "Forbidden", `Refused ${cross}: state-changing requests must come from this server's origin`)
  }
  const contentType = request.headers["content-type"]
  if ((contentType !== undefined || hasBody(request)) && mediaType(contentType ?? "") !== "application/json") {
    return jsonError(
      415,
      "UnsupportedMediaType",
      `A request body must be application/json${contentType === undefined ? "" : `, not ${mediaType(contentType)}`}`,
      { contentType: contentType ?? "" }
    )
  }
  return undefined
}

// -----------------------------------------------------------------------------
// security headers
// -----------------------------------------------------------------------------

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`

const decoder = new TextDecoder()

/** The hashes of an HTML page's inline scripts and styles (JSON data blocks are not scripts). */
const inlineHashes = (html: string) => {
  const scripts: Array<string> = []
  const styles: Array<string> = []
  for (const match of html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/gi)) {
    if (/\bsrc=/i.test(match[1]!) || /type="application\/json"/i.test(match[1]!)) continue
    scripts.push(sha256(match[2]!))
  }
  for (const match of html.matchAll(/<style[^>]*>([\s\S]*?)<\/style>/gi)) styles.push(sha256(match[1]!))
  return { scripts, styles }
}

/** A page's policy: its own scripts and styles, and the hashes of its inline ones, nothing else. */
const pagePolicy = (html: string) => {
  const { scripts, styles } = inlineHashes(html)
  return [
    "default-src 'none'",
    `script-src 'self' ${scripts.join(" ")}`.trim(),
    `style-src 'self' ${styles.join(" ")}`.trim(),
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'"
  ].join("; ")
}

/** The policy of everything that is not a page. */
const defaultPolicy = "default-src 'none'; frame-ancestors 'none'"

/** Policies by page body, computed once per page (the pages are built once). */
const policies = new WeakMap<Uint8Array, string>()

const policyOf = (response: HttpServerResponse.HttpServerResponse): string => {
  const body = response.body
  const contentType = response.headers["content-type"] ?? body.contentType ?? ""
  if (body._tag !== "Uint8Array" || mediaType(contentType) !== "text/html") return defaultPolicy
  let policy = policies.get(body.body)
  if (policy === undefined) {
    policy = pagePolicy(decoder.decode(body.body))
    policies.set(body.body, policy)
  }
  return policy
}

/** The security headers every answer gets as they are. */
const fixedHeaders: ReadonlyArray<readonly [string, string]> = [
  ["x-frame-options", "DENY"],
  ["x-content-type-options", "nosniff"],
  ["referrer-policy", "no-referrer"],
  ["cross-origin-opener-policy", "same-origin"],
  ["cross-origin-resource-policy", "same-origin"]
]

/**
 * The security headers of an answer: a Content-Security-Policy (no inline
 * script but hashed ones), no framing, no sniffing, no referrer, and
 * `Cache-Control: no-store` on JSON.
 *
 * @internal
 */
const secure = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse => {
  const contentType = response.headers["content-type"] ?? response.body.contentType ?? ""
  // one header at a time: `setHeaders` copies the headers with an object spread, which V8 makes
  // slow (about 10 µs) for this many keys
  let secured = HttpServerResponse.setHeader(response, "content-security-policy", policyOf(response))
  for (const [name, value] of fixedHeaders) secured = HttpServerResponse.setHeader(secured, name, value)
  return mediaType(contentType) === "application/json"
    ? HttpServerResponse.setHeader(secured, "cache-control", "no-store")
    : secured
}

const isRouteNotFound = (error: unknown): error is HttpServerError.RouteNotFound =>
  HttpServerError.isServerError(error) && error._tag === "RouteNotFound"

const under = (prefix: string, url: string) => {
  if (prefix === "") return true
  return url === prefix || url.startsWith(`${prefix}/`) || url.startsWith(`${prefix}?`)
}

/**
 * The edge as a global middleware of the router: requests outside `prefix`
 * (your app's own routes) pass untouched.
 *
 * @internal
 */
export const layer = (options: GuardOptions): Layer.Layer<never, never, HttpLayerRouter.HttpRouter> => {
  const allowed = new Set(options.allowedOrigins)
  const level = LogLevel.fromLiteral(options.requestLogLevel)
  const middleware = (
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest>
  ) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      if (!under(options.prefix, request.url)) return app
      const path = request.url.split("?")[0]!
      const refused = refusal(request, allowed)
      const answered = refused !== undefined ? Effect.succeed(secure(refused)) : app.pipe(
        Effect.catchIf(isRouteNotFound, () =>
          Effect.succeed(jsonError(404, "RouteNotFound", `No route for ${request.method} ${path}`))),
        Effect.map(secure)
      )
      if (level === LogLevel.None) {
        return answered
      }
      // a line below the minimum level (Debug, by default) costs nothing: not even its timing
      return Effect.flatMap(FiberRef.get(FiberRef.currentMinimumLogLevel), (minimum) =>
        LogLevel.lessThan(level, minimum) ?
          answered :
          Effect.flatMap(Clock.currentTimeMillis, (started) =>
            answered.pipe(
              Effect.onExit((exit) =>
                Effect.flatMap(Clock.currentTimeMillis, (ended) =>
                  Effect.logWithLevel(
                    level,
                    `${request.method} ${path} ${exit._tag === "Success" ? exit.value.status : "failed"} ${
                      ended - started
                    } ms`
                  ))
              )
            )))
    })
  return Layer.effectDiscard(Effect.flatMap(
    HttpLayerRouter.HttpRouter,
    (router) => router.addGlobalMiddleware(middleware as any) as Effect.Effect<void>
  ))
}
