/**
 * Mapping of openai SDK failures to `@effect/ai` `AiError`s.
 *
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, OpenAI } from "openai"

/** @internal */
export interface CallSite {
  readonly module: string
  readonly method: string
  /** Full request URL, for error messages. */
  readonly url: string
}

const requestDetails = (site: CallSite): typeof AiError.HttpRequestDetails.Type => ({
  method: "POST",
  url: site.url,
  urlParams: [],
  hash: Option.none(),
  headers: {}
})

const headersToRecord = (headers: Headers | undefined): Record<string, string> => {
  const out: Record<string, string> = {}
  if (headers === undefined) return out
  headers.forEach((value, key) => {
    out[key] = key === "authorization" || key === "api-key" ? "<redacted>" : value
  })
  return out
}

/** The whole error body of each HTTP error (the SDK keeps only its `error` field). */
const errorBodies = new WeakMap<APIError, unknown>()

/**
 * The openai SDK client, keeping the whole body of HTTP error responses: the
 * SDK keeps only the body's `error` field, which loses the message of
 * servers that answer `{ "error": "Not Found", "message": "Cannot POST …" }`.
 *
 * @internal
 */
export class OpenAIWithErrorBodies extends OpenAI {
  protected override makeStatusError(
    status: number,
    body: object,
    message: string | undefined,
    headers: Headers
  ): APIError {
    const error = super.makeStatusError(status, body, message, headers)
    // `body` is the parsed JSON body, or undefined with the raw text in `message`
    const whole: unknown = body ?? message
    if (whole !== undefined) errorBodies.set(error, whole)
    return error
  }
}

const text = (u: unknown): string | undefined => {
  if (typeof u === "string") return u.trim().length > 0 ? u.trim() : undefined
  if (u === undefined || u === null) return undefined
  try {
    return JSON.stringify(u)
  } catch {
    return undefined
  }
}

/**
 * What an error body says:
 *
 * - OpenAI's `{ error: { message } }`: the message;
 * - `{ error: "Not Found", message: "Cannot POST …" }` (and `detail`, as
 *   FastAPI servers send it): both, `"Not Found: Cannot POST …"`;
 * - a plain string `error`, `message` or `detail` alone: that.
 *
 * @internal
 */
const describeErrorBody = (body: unknown): string | undefined => {
  if (!Predicate.isRecord(body)) return undefined
  const inner = body.error
  if (Predicate.isRecord(inner)) {
    const message = text(inner.message)
    if (message !== undefined) return message
  }
  const label = typeof inner === "string" ? text(inner) : undefined
  const message = text(body.message) ?? text(body.detail)
  if (label !== undefined && message !== undefined) return message.includes(label) ? message : `${label}: ${message}`
  return message ?? label
}

/**
 * The API's own message: what the error body says (see
 * `describeErrorBody`), otherwise the SDK's message.
 * @internal
 */
const apiMessage = (error: APIError): string =>
  describeErrorBody(errorBodies.get(error) ?? { error: error.error }) ?? error.message

const bodyText = (error: APIError): string | undefined => {
  const body = errorBodies.get(error) ?? (error.error === undefined ? undefined : { error: error.error })
  return body === undefined ? undefined : typeof body === "string" ? body : text(body)
}

const causeMessage = (error: Error): string => {
  const cause = (error as { readonly cause?: unknown }).cause
  return cause instanceof Error && cause.message !== error.message
    ? `${error.message} (${cause.message})`
    : error.message
}

/**
 * Converts anything thrown by the openai SDK (or while reading its stream)
 * into an `AiError`:
 *
 * - an HTTP error status → `HttpResponseError` (reason `"StatusCode"`) with
 *   `response.status`, the response headers, `description` = the API's error
 *   message and `body` = the JSON error body;
 * - connection failures and timeouts → `HttpRequestError` (reason `"Transport"`);
 * - an error event inside a 200 stream → `UnknownError` with the API message;
 * - invalid JSON from the server → `MalformedOutput`;
 * - anything else → `UnknownError`.
 *
 * @internal
 */
export const toAiError = (error: unknown, site: CallSite): AiError.AiError => {
  if (AiError.isAiError(error)) return error
  const base = { module: site.module, method: site.method }
  if (error instanceof APIConnectionTimeoutError) {
    return new AiError.HttpRequestError({
      ...base,
      reason: "Transport",
      request: requestDetails(site),
      description: "Request timed out",
      cause: error
    })
  }
  if (error instanceof APIUserAbortError) {
    return new AiError.HttpRequestError({
      ...base,
      reason: "Transport",
      request: requestDetails(site),
      description: "Request was aborted",
      cause: error
    })
  }
  if (error instanceof APIConnectionError) {
    return new AiError.HttpRequestError({
      ...base,
      reason: "Transport",
      request: requestDetails(site),
      description: causeMessage(error),
      cause: error
    })
  }
  if (error instanceof APIError) {
    if (typeof error.status === "number") {
      const body = bodyText(error)
      return new AiError.HttpResponseError({
        ...base,
        reason: "StatusCode",
        request: requestDetails(site),
        response: { status: error.status, headers: headersToRecord(error.headers) },
        description: apiMessage(error),
        ...(body !== undefined ? { body } : {})
      })
    }
    return new AiError.UnknownError({
      ...base,
      description: `The API reported an error: ${apiMessage(error)}`,
      cause: error
    })
  }
  if (error instanceof SyntaxError) {
    return new AiError.MalformedOutput({
      ...base,
      description: `The API returned invalid JSON: ${error.message}`,
      cause: error
    })
  }
  return new AiError.UnknownError({
    ...base,
    description: error instanceof Error ? causeMessage(error) : String(error),
    cause: error
  })
}

/**
 * Statuses retried with backoff: 408 (request timeout), 409 (lock timeout),
 * 429 (rate limit) and every 5xx. Transport failures are retried too.
 * @internal
 */
export const isRetryable = (error: AiError.AiError): boolean => {
  switch (error._tag) {
    case "HttpResponseError": {
      const status = error.response.status
      return status === 408 || status === 409 || status === 429 || status >= 500
    }
    case "HttpRequestError":
      return error.reason === "Transport"
    default:
      return false
  }
}

/**
 * The delay requested by the server through `retry-after-ms` (milliseconds)
 * or `Retry-After` (seconds or an HTTP date), in milliseconds.
 * @internal
 */
export const retryAfterMillis = (error: AiError.AiError, nowMillis: number): number | undefined => {
  if (error._tag !== "HttpResponseError") return undefined
  const headers = error.response.headers
  const ms = headers["retry-after-ms"]
  if (ms !== undefined) {
    const value = Number.parseFloat(ms)
    if (Number.isFinite(value) && value >= 0) return value
  }
  const retryAfter = headers["retry-after"]
  if (retryAfter === undefined) return undefined
  const trimmed = retryAfter.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number.parseFloat(trimmed) * 1000
  const date = Date.parse(trimmed)
  if (Number.isNaN(date)) return undefined
  return Math.max(0, date - nowMillis)
}
