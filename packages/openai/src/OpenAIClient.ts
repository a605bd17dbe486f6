/**
 * The `OpenAIClient` service: one configured instance of the official `openai`
 * SDK plus the Effect plumbing every request goes through (retries with
 * backoff, `Retry-After`, mapping of failures to `@effect/ai` `AiError`, and
 * aborting the HTTP request when the calling fiber is interrupted).
 *
 * The SDK client is always built with `maxRetries: 0`; retries happen here,
 * in Effect, so that they are visible to the fiber (interruptible, traced,
 * testable with `TestClock`). The backoff is jittered with the Effect
 * `Random` service (see `retryDelay`), so that clients that failed together
 * do not all retry at the same moment.
 *
 * Configuration (through Effect `Config`, i.e. the current `ConfigProvider`,
 * which reads environment variables by default):
 *
 * | variable                   | default                      |
 * |----------------------------|------------------------------|
 * | `OPENAI_API_KEY`           | required                     |
 * | `OPENAI_BASE_URL`          | `https://api.openai.com/v1`  |
 * | `OPENAI_ORG_ID`            | none                         |
 * | `OPENAI_PROJECT_ID`        | none                         |
 * | `OPENAI_TIMEOUT`           | `10 minutes` (per attempt)   |
 * | `OPENAI_MAX_RETRIES`       | `2`                          |
 * | `OPENAI_RETRY_BASE_DELAY`  | `500 millis`                 |
 * | `OPENAI_RETRY_MAX_DELAY`   | `60 seconds`                 |
 *
 * @since 0.1.0
 */
import type * as AiError from "@effect/ai/AiError"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type { OpenAI } from "openai"
import * as InternalErrors from "./internal/errors.js"

/**
 * @since 0.1.0
 * @category Context
 */
export class OpenAIClient extends Context.Tag("@sessionflow/openai/OpenAIClient")<
  OpenAIClient,
  OpenAIClient.Service
>() {}

/**
 * @since 0.1.0
 */
export declare namespace OpenAIClient {
  /**
   * @since 0.1.0
   * @category Models
   */
  export interface Service {
    /** The underlying SDK client (built with `maxRetries: 0`). */
    readonly sdk: OpenAI
    /** The resolved settings. */
    readonly settings: Settings
    /**
     * Runs one API call with retries and error mapping. `f` receives an
     * `AbortSignal` that fires when the calling fiber is interrupted: pass it
     * to the SDK call (`{ signal }`).
     */
    readonly request: <A>(
      site: RequestSite,
      f: (sdk: OpenAI, signal: AbortSignal) => PromiseLike<A>
    ) => Effect.Effect<A, AiError.AiError>
    /**
     * Runs a streaming API call: the initial request is retried like
     * `request`; once the stream has started, failures end the stream with
     * an `AiError` (no retry). Closing the stream (completion, failure,
     * interruption) aborts the HTTP request.
     */
    readonly stream: <A>(
      site: RequestSite,
      f: (sdk: OpenAI, signal: AbortSignal) => PromiseLike<AsyncIterable<A>>
    ) => Stream.Stream<A, AiError.AiError>
  }
}

/**
 * Identifies a call for error messages and tracing.
 *
 * @since 0.1.0
 * @category Models
 */
export interface RequestSite {
  /** e.g. `"OpenAIChat"` */
  readonly module: string
  /** e.g. `"generateText"` */
  readonly method: string
  /** API path below the base URL, e.g. `"/chat/completions"`. */
  readonly path: string
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  readonly apiKey: Redacted.Redacted<string> | string
  /** Any OpenAI-compatible server, e.g. `http://localhost:11434/v1`. */
  readonly baseURL?: string | undefined
  readonly organization?: string | undefined
  readonly project?: string | undefined
  /** Timeout of one attempt (until the response headers arrive). Default 10 minutes. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Retries after the first attempt for 408/409/429/5xx and transport failures. Default 2. */
  readonly maxRetries?: number | undefined
  /** First backoff delay; doubles on every retry, less a random 0–25% (jitter). Default 500 ms. */
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  /** Upper bound of any single backoff delay, including one asked for by `Retry-After`. Default 60 s. */
  readonly retryMaxDelay?: Duration.DurationInput | undefined
  /** Extra headers sent with every request. */
  readonly defaultHeaders?: Readonly<Record<string, string>> | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Settings {
  readonly baseURL: string
  readonly timeout: Duration.Duration
  readonly maxRetries: number
  readonly retryBaseDelay: Duration.Duration
  readonly retryMaxDelay: Duration.Duration
}

/**
 * The default base URL.
 *
 * @since 0.1.0
 * @category Constants
 */
export const DEFAULT_BASE_URL = "https://api.openai.com/v1"

/**
 * Resolves the settings (defaults applied) from options.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const settings = (options: Omit<Options, "apiKey">): Settings => ({
  baseURL: (options.baseURL ?? DEFAULT_BASE_URL).replace(/\/+$/, ""),
  timeout: Duration.decode(options.timeout ?? "10 minutes"),
  maxRetries: Math.max(0, Math.floor(options.maxRetries ?? 2)),
  retryBaseDelay: Duration.decode(options.retryBaseDelay ?? "500 millis"),
  retryMaxDelay: Duration.decode(options.retryMaxDelay ?? "60 seconds")
})

/**
 * The largest share of a computed backoff delay that jitter takes off.
 *
 * @since 0.1.0
 * @category Constants
 */
export const RETRY_JITTER = 0.25

/**
 * The delay before retry number `retry` (0-based) after `error`:
 *
 * - the server's `retry-after-ms` / `Retry-After` (seconds or HTTP date) when
 *   present, as it is (the server said when);
 * - otherwise `retryBaseDelay * 2^retry`, less a random share of up to
 *   `RETRY_JITTER` (25%): `random` is a number in `[0, 1)` (the client draws
 *   it from the Effect `Random` service), `0` meaning no jitter.
 *
 * Both are capped at `retryMaxDelay` (jitter applies after the cap, so
 * delays at the cap still spread).
 *
 * @since 0.1.0
 * @category Utilities
 */
export const retryDelay = (
  settings: Settings,
  error: AiError.AiError,
  retry: number,
  nowMillis: number,
  random: number = 0
): Duration.Duration => {
  const cap = Duration.toMillis(settings.retryMaxDelay)
  const requested = InternalErrors.retryAfterMillis(error, nowMillis)
  if (requested !== undefined) return Duration.millis(Math.min(requested, cap))
  const backoff = Math.min(Duration.toMillis(settings.retryBaseDelay) * 2 ** retry, cap)
  const share = Math.min(Math.max(random, 0), 1) * RETRY_JITTER
  return Duration.millis(Math.round(backoff * (1 - share)))
}

/**
 * Whether an error is retried: HTTP 408, 409, 429 and 5xx, and transport
 * failures (connection refused/reset, timeouts).
 *
 * @since 0.1.0
 * @category Utilities
 */
export const isRetryable: (error: AiError.AiError) => boolean = InternalErrors.isRetryable

/**
 * Builds the service.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make: (options: Options) => Effect.Effect<OpenAIClient.Service> = Effect.fn("OpenAIClient.make")(
  function*(options: Options) {
    const resolved = settings(options)
    const sdk = yield* Effect.sync(() =>
      new InternalErrors.OpenAIWithErrorBodies({
        apiKey: Redacted.isRedacted(options.apiKey) ? Redacted.value(options.apiKey) : options.apiKey,
        baseURL: resolved.baseURL,
        // `null` (not `undefined`) so that the SDK does not read process.env:
        // configuration comes from Effect Config only.
        organization: options.organization ?? null,
        project: options.project ?? null,
        adminAPIKey: null,
        webhookSecret: null,
        timeout: Duration.toMillis(resolved.timeout),
        maxRetries: 0,
        ...(options.defaultHeaders !== undefined ? { defaultHeaders: { ...options.defaultHeaders } } : {})
      })
    )
    return makeService(sdk, resolved)
  }
)

const makeService = (sdk: OpenAI, resolved: Settings): OpenAIClient.Service => {
  const request = <A>(
    site: RequestSite,
    f: (sdk: OpenAI, signal: AbortSignal) => PromiseLike<A>
  ): Effect.Effect<A, AiError.AiError> => {
    const callSite: InternalErrors.CallSite = {
      module: site.module,
      method: site.method,
      url: `${resolved.baseURL}${site.path}`
    }
    const attempt = Effect.tryPromise({
      try: (signal) => f(sdk, signal),
      catch: (error) => InternalErrors.toAiError(error, callSite)
    })
    const loop = (retry: number): Effect.Effect<A, AiError.AiError> =>
      Effect.catchAll(attempt, (error) => {
        if (retry >= resolved.maxRetries || !InternalErrors.isRetryable(error)) {
          return Effect.fail(error)
        }
        return Effect.flatMap(Effect.zip(Clock.currentTimeMillis, Random.next), ([now, random]) => {
          const delay = retryDelay(resolved, error, retry, now, random)
          return Effect.logDebug(`${site.module}.${site.method}: retrying after ${Duration.format(delay)}`).pipe(
            Effect.annotateLogs({ retry: retry + 1, error: error.message }),
            Effect.zipRight(Effect.sleep(delay)),
            Effect.zipRight(loop(retry + 1))
          )
        })
      })
    return loop(0).pipe(
      Effect.withSpan("OpenAIClient.request", {
        attributes: { module: site.module, method: site.method, path: site.path },
        captureStackTrace: false
      })
    )
  }

  const stream = <A>(
    site: RequestSite,
    f: (sdk: OpenAI, signal: AbortSignal) => PromiseLike<AsyncIterable<A>>
  ): Stream.Stream<A, AiError.AiError> =>
    Stream.unwrapScoped(Effect.gen(function*() {
      // Aborted when the stream's scope closes, which also cancels the body
      // download if the consumer stops early or is interrupted.
      const controller = yield* Effect.acquireRelease(
        Effect.sync(() => new AbortController()),
        (controller) => Effect.sync(() => controller.abort())
      )
      const iterable = yield* request(site, (sdk, signal) => f(sdk, AbortSignal.any([signal, controller.signal])))
      const iterator = iterable[Symbol.asyncIterator]()
      const callSite: InternalErrors.CallSite = {
        module: site.module,
        method: site.method,
        url: `${resolved.baseURL}${site.path}`
      }
      return Stream.repeatEffectOption(
        Effect.tryPromise({
          try: () => iterator.next(),
          catch: (error) => Option.some(InternalErrors.toAiError(error, callSite))
        }).pipe(
          Effect.flatMap((result) => result.done === true ? Effect.fail(Option.none()) : Effect.succeed(result.value))
        )
      )
    }))

  return { sdk, settings: resolved, request, stream }
}

/**
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<OpenAIClient> => Layer.effect(OpenAIClient, make(options))

/**
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig = (
  options: Config.Config.Wrap<Options>
): Layer.Layer<OpenAIClient, ConfigError.ConfigError> =>
  Layer.effect(OpenAIClient, Effect.flatMap(Config.unwrap(options), make))

const optionalString = (name: string): Config.Config<string | undefined> =>
  Config.string(name).pipe(Config.option, Config.map(Option.getOrUndefined))

const optionalDuration = (name: string): Config.Config<Duration.Duration | undefined> =>
  Config.duration(name).pipe(Config.option, Config.map(Option.getOrUndefined))

/**
 * The client options read from the `OPENAI_*` configuration variables (see the
 * module documentation). A missing or empty `OPENAI_API_KEY` is a
 * `ConfigError` naming the variable.
 *
 * @since 0.1.0
 * @category Config
 */
export const config: Config.Config<Options> = Config.all({
  apiKey: Config.redacted("OPENAI_API_KEY").pipe(
    Config.validate({
      message: "OPENAI_API_KEY must not be empty",
      validation: (key) => Redacted.value(key).trim().length > 0
    })
  ),
  baseURL: optionalString("OPENAI_BASE_URL"),
  organization: optionalString("OPENAI_ORG_ID"),
  project: optionalString("OPENAI_PROJECT_ID"),
  timeout: optionalDuration("OPENAI_TIMEOUT"),
  maxRetries: Config.integer("OPENAI_MAX_RETRIES").pipe(
    Config.validate({ message: "OPENAI_MAX_RETRIES must be >= 0", validation: (n) => n >= 0 }),
    Config.option,
    Config.map(Option.getOrUndefined)
  ),
  retryBaseDelay: optionalDuration("OPENAI_RETRY_BASE_DELAY"),
  retryMaxDelay: optionalDuration("OPENAI_RETRY_MAX_DELAY")
})

/**
 * The client built from `OPENAI_*` configuration (`config`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerFromConfig: Layer.Layer<OpenAIClient, ConfigError.ConfigError> = Layer.effect(
  OpenAIClient,
  Effect.flatMap(config, make)
)
