import { AiError } from "@effect/ai"
import { assert, describe, expect, it } from "@effect/vitest"
import { OpenAIClient } from "@sessionflow/openai"
import { ConfigError, ConfigProvider, Duration, Effect, Option, Redacted } from "effect"

const response429 = (headers: Record<string, string>) =>
  new AiError.HttpResponseError({
    module: "Test",
    method: "test",
    reason: "StatusCode",
    request: { method: "POST", url: "http://x/v1/responses", urlParams: [], hash: Option.none(), headers: {} },
    response: { status: 429, headers }
  })

describe("OpenAIClient", () => {
  const settings = OpenAIClient.settings({ retryBaseDelay: "100 millis", retryMaxDelay: "5 seconds" })

  it("retryDelay: exponential backoff capped at retryMaxDelay", () => {
    const delays = [0, 1, 2, 3, 6].map((retry) =>
      Duration.toMillis(OpenAIClient.retryDelay(settings, response429({}), retry, 0))
    )
    expect(delays).toEqual([100, 200, 400, 800, 5000])
  })

  it("retryDelay: the computed backoff loses a random share of up to 25% (jitter), also at the cap", () => {
    const delay = (retry: number, random: number) =>
      Duration.toMillis(OpenAIClient.retryDelay(settings, response429({}), retry, 0, random))
    expect(OpenAIClient.RETRY_JITTER).toBe(0.25)
    expect([delay(0, 0), delay(0, 0.5), delay(0, 1)]).toEqual([100, 88, 75])
    expect([delay(2, 0.2), delay(6, 0), delay(6, 0.5), delay(6, 1)]).toEqual([380, 5000, 4375, 3750])
  })

  it("retryDelay: a delay the server asked for (Retry-After) is not jittered", () => {
    const delay = (headers: Record<string, string>, random: number) =>
      Duration.toMillis(OpenAIClient.retryDelay(settings, response429(headers), 0, 0, random))
    expect([delay({ "retry-after": "1.5" }, 0.9), delay({ "retry-after-ms": "250" }, 1)]).toEqual([1500, 250])
  })

  it("retryDelay: Retry-After in seconds, as an HTTP date, and retry-after-ms; capped", () => {
    const now = Date.parse("2025-01-01T00:00:00Z")
    const delay = (headers: Record<string, string>) =>
      Duration.toMillis(OpenAIClient.retryDelay(settings, response429(headers), 0, now))
    expect(delay({ "retry-after": "1.5" })).toBe(1500)
    expect(delay({ "retry-after": new Date(now + 4000).toUTCString() })).toBe(4000)
    expect(delay({ "retry-after": new Date(now - 4000).toUTCString() })).toBe(0)
    expect(delay({ "retry-after-ms": "250", "retry-after": "3" })).toBe(250)
    expect(delay({ "retry-after": "120" })).toBe(5000)
    expect(delay({ "retry-after": "not a date" })).toBe(100)
  })

  it("isRetryable: 408/409/429/5xx and transport failures only", () => {
    const withStatus = (status: number) =>
      new AiError.HttpResponseError({
        module: "T",
        method: "t",
        reason: "StatusCode",
        request: { method: "POST", url: "u", urlParams: [], hash: Option.none(), headers: {} },
        response: { status, headers: {} }
      })
    expect([400, 401, 403, 404, 408, 409, 422, 429, 500, 503].filter((s) => OpenAIClient.isRetryable(withStatus(s))))
      .toEqual([408, 409, 429, 500, 503])
    expect(OpenAIClient.isRetryable(new AiError.MalformedOutput({ module: "T", method: "t" }))).toBe(false)
  })

  const load = (entries: ReadonlyArray<readonly [string, string]>) =>
    Effect.withConfigProvider(OpenAIClient.config, ConfigProvider.fromMap(new Map(entries)))

  it.effect("config: reads every OPENAI_* variable", () =>
    Effect.gen(function*() {
      const options = yield* load([
        ["OPENAI_API_KEY", "sk-1"],
        ["OPENAI_BASE_URL", "http://localhost:11434/v1"],
        ["OPENAI_ORG_ID", "org"],
        ["OPENAI_PROJECT_ID", "proj"],
        ["OPENAI_TIMEOUT", "30 seconds"],
        ["OPENAI_MAX_RETRIES", "5"],
        ["OPENAI_RETRY_BASE_DELAY", "1 second"],
        ["OPENAI_RETRY_MAX_DELAY", "2 minutes"]
      ])
      assert(Redacted.isRedacted(options.apiKey))
      expect(Redacted.value(options.apiKey)).toBe("sk-1")
      expect(String(options.apiKey)).not.toContain("sk-1")
      const resolved = OpenAIClient.settings(options)
      expect(resolved.baseURL).toBe("http://localhost:11434/v1")
      expect(options.organization).toBe("org")
      expect(options.project).toBe("proj")
      expect(Duration.toMillis(resolved.timeout)).toBe(30_000)
      expect(resolved.maxRetries).toBe(5)
      expect(Duration.toMillis(resolved.retryBaseDelay)).toBe(1000)
      expect(Duration.toMillis(resolved.retryMaxDelay)).toBe(120_000)
    }))

  it.effect("config: defaults", () =>
    Effect.gen(function*() {
      const resolved = OpenAIClient.settings(yield* load([["OPENAI_API_KEY", "sk-1"]]))
      expect(resolved.baseURL).toBe(OpenAIClient.DEFAULT_BASE_URL)
      expect(resolved.maxRetries).toBe(2)
      expect(Duration.toMillis(resolved.timeout)).toBe(600_000)
    }))

  it.effect("config: missing or empty OPENAI_API_KEY, invalid OPENAI_MAX_RETRIES", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(load([]))
      expect(ConfigError.isMissingDataOnly(missing)).toBe(true)
      expect(String(missing)).toContain("OPENAI_API_KEY")

      const empty = yield* Effect.flip(load([["OPENAI_API_KEY", "  "]]))
      expect(String(empty)).toContain("OPENAI_API_KEY must not be empty")

      const retries = yield* Effect.flip(load([["OPENAI_API_KEY", "k"], ["OPENAI_MAX_RETRIES", "-1"]]))
      expect(String(retries)).toContain("OPENAI_MAX_RETRIES")
    }))

  it.effect("the SDK client is built with maxRetries 0 and does not read process.env", () =>
    Effect.gen(function*() {
      const client = yield* OpenAIClient.make({ apiKey: "sk-explicit", baseURL: "http://127.0.0.1:1/v1/" })
      expect(client.sdk.maxRetries).toBe(0)
      expect(client.sdk.apiKey).toBe("sk-explicit")
      expect(client.sdk.baseURL).toBe("http://127.0.0.1:1/v1")
      expect(client.sdk.organization).toBeNull()
    }))

  it.effect("a refused connection is a typed transport error", () =>
    Effect.gen(function*() {
      const client = yield* OpenAIClient.make({ apiKey: "k", baseURL: "http://127.0.0.1:1/v1", maxRetries: 0 })
      const error = yield* client.request(
        { module: "Test", method: "ping", path: "/models" },
        (sdk, signal) => sdk.models.list({ signal })
      ).pipe(Effect.flip)
      assert(error._tag === "HttpRequestError", `got ${error._tag}`)
      expect(error.reason).toBe("Transport")
      expect(error.request.url).toBe("http://127.0.0.1:1/v1/models")
    }))
})
