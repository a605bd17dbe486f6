/**
 * A local, scripted, OpenAI-compatible HTTP server for tests and benchmarks.
 *
 * It listens on 127.0.0.1 on a random port, serves `POST /v1/chat/completions`
 * (Chat Completions) and `POST /v1/responses` (Responses API) from a script,
 * and records every request (body, headers, whether the client went away
 * before the reply was complete). Nothing touches the internet.
 *
 * Replies are API-neutral: the same `TestServer.text("hi")` is rendered as a
 * Chat Completions or a Responses payload depending on the route, and as SSE
 * when the request asked for `stream: true`.
 *
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { OpenAIChat } from "@sessionflow/openai"
 * import { Effect } from "effect"
 * import * as TestServer from "../openai/TestServer.js"
 *
 * it.scoped("answers", () =>
 *   Effect.gen(function*() {
 *     const server = yield* TestServer.make({
 *       replies: [
 *         TestServer.toolCalls([{ name: "GetWeather", arguments: { city: "Paris" } }]),
 *         TestServer.text("It is sunny in Paris.")
 *       ]
 *     })
 *     const response = yield* LanguageModel.generateText({ prompt: "Weather?" }).pipe(
 *       Effect.provide(OpenAIChat.model("gpt-4o-mini")),
 *       Effect.withConfigProvider(server.config()) // OPENAI_API_KEY + OPENAI_BASE_URL
 *     )
 *     const [request] = yield* server.requests
 *     // request.body, request.headers, request.stream, request.aborted
 *   }))
 * ```
 *
 * Script:
 * - `replies` (or `server.enqueue(...)`) is a FIFO queue, one reply per request;
 * - when the queue is empty, `handler` (or `server.setHandler(f)`) is asked:
 *   `(request) => Reply | undefined`;
 * - otherwise the server answers 400 "TestServer: no scripted reply ..." (a
 *   non-retryable status, so a missing script fails fast).
 *
 * Reply constructors:
 * - `text(text | deltas[], options?)`: an assistant message; a string streams
 *   word by word, an array streams exactly those deltas;
 * - `toolCalls(calls, options?)`: one or several function calls (arguments as
 *   an object or a JSON string; streamed in pieces of `argumentChunkSize`
 *   characters, optionally interleaved across calls). Like some third-party
 *   servers: `arguments: null`, arguments left out, or `argumentsAsObject`
 *   (a JSON object instead of JSON text);
 * - `json(value, options?)`: a message whose text is `JSON.stringify(value)`
 *   (structured output);
 * - `message(options)`: text and/or tool calls, finish reason, usage;
 * - `error(status, message, { retryAfter?, headers?, type?, code? })`: an
 *   OpenAI-style error body, optionally with `Retry-After`;
 * - `raw(body, { status?, headers? })`, `sse(events, options?)`: anything else;
 * - `hang()`: never answer (for timeouts and interruption).
 *
 * Streaming options on message replies: `eventDelayMs` (real-time delay
 * between SSE events) and `holdOpen` (send every content event, then keep the
 * connection open without finishing: the client must go away, which is
 * recorded as `aborted`), `streamToolCalls: false` (leave the tool calls out
 * of streamed replies, like servers that cannot stream them).
 *
 * Malformed replies: `rewrite` on a message reply maps every JSON payload
 * before it is sent (the body, or each SSE event's data), e.g. to send a
 * choice without `message`.
 *
 * Waiting: `awaitRequests(n)` and `awaitAborted(index)` resolve on server
 * activity (no polling, no clock), so they work under `TestClock`.
 *
 * `driveTestClock(effect)` runs an effect that sleeps on the `TestClock`
 * (e.g. retry backoff) while real I/O happens: it advances the clock to each
 * pending sleep and returns the exit and the list of delays it advanced by.
 */
import { OpenAIClient } from "@sessionflow/openai"
import {
  Chunk,
  Clock,
  ConfigProvider,
  Duration,
  Effect,
  type Exit,
  Fiber,
  type Layer,
  Option,
  type Scope,
  TestClock
} from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

// =============================================================================
// Replies
// =============================================================================

/** A scripted function call. */
export interface ToolCallScript {
  /** Defaults to `call_<request index>_<position>`. */
  readonly id?: string
  readonly name: string
  /**
   * An object (sent as JSON text) or the raw arguments text. Malformed, as
   * some OpenAI-compatible servers send them: `null` is sent as `null`, and
   * leaving it out leaves the field out.
   */
  readonly arguments?: string | object | null
  /** Send an object `arguments` as a JSON object instead of JSON text. */
  readonly argumentsAsObject?: boolean
}

/** Options shared by the message-like replies. */
export interface MessageOptions {
  /** A string streams word by word; an array streams exactly these deltas. */
  readonly text?: string | ReadonlyArray<string>
  readonly refusal?: string
  readonly toolCalls?: ReadonlyArray<ToolCallScript>
  /** Chat Completions wording; mapped to `status`/`incomplete_details` for the Responses API. */
  readonly finishReason?: "stop" | "length" | "tool_calls" | "content_filter"
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
  /** Defaults to the request's `model`. */
  readonly model?: string
  /** Size of the streamed argument pieces, default 5 characters. */
  readonly argumentChunkSize?: number
  /** Stream the argument pieces of several tool calls round-robin. */
  readonly interleaveToolCalls?: boolean
  /** Real-time delay between SSE events, default 0. */
  readonly eventDelayMs?: number
  /** Stream every content event, then keep the connection open without finishing. */
  readonly holdOpen?: boolean
  readonly headers?: Readonly<Record<string, string>>
  /**
   * `false` leaves the tool calls out of streamed replies (and finishes with
   * `stop` unless `finishReason` says otherwise), like servers that cannot
   * stream tool calls; non-streamed replies keep them. Default `true`.
   */
  readonly streamToolCalls?: boolean
  /**
   * Rewrites every JSON payload before it is sent: the body of a
   * non-streamed reply, the data of each server-sent event (not `[DONE]`).
   * For replies no real server should send (a choice without `message`, …).
   */
  readonly rewrite?: (payload: Record<string, unknown>) => unknown
}

/** A reply to one request. */
export type Reply =
  | { readonly _tag: "Message"; readonly options: MessageOptions }
  | {
    readonly _tag: "Error"
    readonly status: number
    readonly message: string
    readonly type: string
    readonly code: string | null
    readonly headers: Readonly<Record<string, string>>
  }
  | {
    readonly _tag: "Raw"
    readonly status: number
    readonly headers: Readonly<Record<string, string>>
    readonly body: string
  }
  | {
    readonly _tag: "Sse"
    readonly events: ReadonlyArray<SseEvent>
    readonly eventDelayMs: number
    readonly holdOpen: boolean
  }
  | { readonly _tag: "Hang" }

/** One raw server-sent event; `data` that is not a string is sent as JSON. */
export interface SseEvent {
  readonly event?: string
  readonly data: unknown
}

/** An assistant message. */
export const message = (options: MessageOptions): Reply => ({ _tag: "Message", options })

/** A text answer. */
export const text = (text: string | ReadonlyArray<string>, options?: Omit<MessageOptions, "text">): Reply =>
  message({ ...options, text })

/** One or several function calls in one turn. */
export const toolCalls = (
  calls: ReadonlyArray<ToolCallScript>,
  options?: Omit<MessageOptions, "toolCalls">
): Reply => message({ ...options, toolCalls: calls })

/** Structured output: the message text is `JSON.stringify(value)`. */
export const json = (value: unknown, options?: Omit<MessageOptions, "text">): Reply =>
  message({ ...options, text: JSON.stringify(value) })

/** An OpenAI-style error (`{ error: { message, type, param, code } }`). */
export const error = (
  status: number,
  message: string,
  options?: {
    /** Sent as `Retry-After` (seconds, or an HTTP date string). */
    readonly retryAfter?: number | string
    readonly headers?: Readonly<Record<string, string>>
    readonly type?: string
    readonly code?: string
  }
): Reply => ({
  _tag: "Error",
  status,
  message,
  type: options?.type ??
    (status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error"),
  code: options?.code ?? null,
  headers: {
    ...options?.headers,
    ...(options?.retryAfter !== undefined ? { "retry-after": String(options.retryAfter) } : {})
  }
})

/** Any body and status. */
export const raw = (
  body: string,
  options?: { readonly status?: number; readonly headers?: Readonly<Record<string, string>> }
): Reply => ({ _tag: "Raw", status: options?.status ?? 200, headers: options?.headers ?? {}, body })

/** Raw server-sent events (no `[DONE]` is added). */
export const sse = (
  events: ReadonlyArray<SseEvent>,
  options?: { readonly eventDelayMs?: number; readonly holdOpen?: boolean }
): Reply => ({ _tag: "Sse", events, eventDelayMs: options?.eventDelayMs ?? 0, holdOpen: options?.holdOpen ?? false })

/** Never answer. */
export const hang = (): Reply => ({ _tag: "Hang" })

// =============================================================================
// Server
// =============================================================================

/** Which API a request was sent to. */
export type Api = "chat" | "responses" | "other"

/** A request as the server received it (a snapshot). */
export interface RecordedRequest {
  /** 0-based, in arrival order. */
  readonly index: number
  readonly method: string
  /** e.g. `/v1/chat/completions` */
  readonly path: string
  readonly api: Api
  /** Lower-cased header names. */
  readonly headers: Readonly<Record<string, string>>
  /** The parsed JSON body (`{}` when it was not a JSON object). */
  readonly body: Readonly<Record<string, unknown>>
  readonly rawBody: string
  /** The body asked for `stream: true`. */
  readonly stream: boolean
  /** The client closed the connection before the reply was complete. */
  readonly aborted: boolean
}

/** Computes a reply from a request; `undefined` falls through to "no scripted reply". */
type Handler = (request: RecordedRequest) => Reply | undefined

/** @category Options */
export interface Options {
  /** The initial reply queue. */
  readonly replies?: ReadonlyArray<Reply>
  /** Asked when the queue is empty. */
  readonly handler?: Handler
  /** The API key the server accepts, default `"sk-test"`. */
  readonly apiKey?: string
  /** Answer 401 when `Authorization` is not `Bearer <apiKey>`, default `true`. */
  readonly checkApiKey?: boolean
}

/** The running server. */
export interface Service {
  /** The base URL including `/v1`, e.g. `http://127.0.0.1:41234/v1` (for `OPENAI_BASE_URL`). */
  readonly url: string
  readonly apiKey: string
  /** Snapshots of every request received so far. */
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Appends replies to the queue. */
  readonly enqueue: (...replies: ReadonlyArray<Reply>) => Effect.Effect<void>
  /** Sets (or clears) the fallback handler. */
  readonly setHandler: (handler: Handler | undefined) => Effect.Effect<void>
  /** Replies still queued. */
  readonly pending: Effect.Effect<number>
  /** Clears the queue, the handler and the recorded requests. */
  readonly reset: Effect.Effect<void>
  /** Waits until at least `n` requests have arrived. */
  readonly awaitRequests: (n: number) => Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Waits until the client of request `index` has gone away before the reply was complete. */
  readonly awaitAborted: (index: number) => Effect.Effect<RecordedRequest>
  /**
   * A `ConfigProvider` with `OPENAI_API_KEY` and `OPENAI_BASE_URL` pointing at
   * this server, plus `extra` (e.g. `{ OPENAI_MAX_RETRIES: "0" }`).
   */
  readonly config: (extra?: Readonly<Record<string, string>>) => ConfigProvider.ConfigProvider
  /**
   * An `OpenAIClient` layer for this server (fast retries by default: 10 ms
   * base delay). Retry delays sleep on the Effect `Clock`: under `TestClock`
   * (`it.effect` / `it.scoped`) run retrying calls through `driveTestClock`,
   * or pass `maxRetries: 0`.
   */
  readonly clientLayer: (
    options?: Omit<OpenAIClient.Options, "apiKey" | "baseURL">
  ) => Layer.Layer<OpenAIClient.OpenAIClient>
}

interface Entry {
  readonly index: number
  readonly method: string
  readonly path: string
  readonly api: Api
  readonly headers: Readonly<Record<string, string>>
  readonly body: Readonly<Record<string, unknown>>
  readonly rawBody: string
  readonly stream: boolean
  aborted: boolean
}

const snapshot = (entry: Entry): RecordedRequest => ({ ...entry })

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Starts a server; it is closed (and open connections destroyed) when the scope closes. */
export const make = (options: Options = {}): Effect.Effect<Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    const apiKey = options.apiKey ?? "sk-test"
    const checkApiKey = options.checkApiKey ?? true
    const queue: Array<Reply> = [...(options.replies ?? [])]
    let handler: Handler | undefined = options.handler
    const entries: Array<Entry> = []
    const listeners = new Set<() => void>()
    const open = new Set<Http.ServerResponse>()
    const notify = () => {
      for (const listener of [...listeners]) listener()
    }

    const onRequest = (req: Http.IncomingMessage, res: Http.ServerResponse) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const rawBody = Buffer.concat(chunks).toString("utf8")
        let body: Record<string, unknown> = {}
        try {
          const parsed: unknown = JSON.parse(rawBody)
          if (isRecord(parsed)) body = parsed
        } catch {
          // not JSON
        }
        const path = (req.url ?? "/").split("?")[0]!
        const api: Api = req.method === "POST" && path === "/v1/chat/completions"
          ? "chat"
          : req.method === "POST" && path === "/v1/responses"
          ? "responses"
          : "other"
        const headers: Record<string, string> = {}
        for (const [key, value] of Object.entries(req.headers)) {
          if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(", ") : value
        }
        const entry: Entry = {
          index: entries.length,
          method: req.method ?? "GET",
          path,
          api,
          headers,
          body,
          rawBody,
          stream: body.stream === true,
          aborted: false
        }
        entries.push(entry)
        open.add(res)
        res.on("close", () => {
          open.delete(res)
          if (!res.writableFinished) {
            entry.aborted = true
            notify()
          }
        })
        notify()
        void respond(entry, res).catch(() => res.destroy())
      })
    }

    const respond = async (entry: Entry, res: Http.ServerResponse): Promise<void> => {
      if (entry.api === "other") {
        return sendError(res, errorReply(404, `TestServer: unknown route ${entry.method} ${entry.path}`))
      }
      if (checkApiKey && entry.headers["authorization"] !== `Bearer ${apiKey}`) {
        return sendError(
          res,
          errorReply(401, "Incorrect API key provided", { code: "invalid_api_key" })
        )
      }
      const reply = queue.shift() ?? handler?.(snapshot(entry)) ??
        errorReply(400, `TestServer: no scripted reply for request #${entry.index} (${entry.path})`)
      switch (reply._tag) {
        case "Hang":
          return
        case "Error":
          return sendError(res, reply)
        case "Raw": {
          res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
          res.end(reply.body)
          return
        }
        case "Sse":
          return sendSse(res, reply.events, reply.eventDelayMs, reply.holdOpen, {})
        case "Message": {
          const rewrite = reply.options.rewrite ?? ((payload: Record<string, unknown>) => payload)
          if (entry.stream) {
            const o = reply.options.streamToolCalls === false
              ? { ...reply.options, toolCalls: [], finishReason: reply.options.finishReason ?? "stop" }
              : reply.options
            const { events, terminal } = entry.api === "chat"
              ? chatEvents(entry, o)
              : responsesEvents(entry, o)
            const rewritten = (o.holdOpen === true ? events : [...events, ...terminal]).map((event) =>
              isRecord(event.data) ? { ...event, data: rewrite(event.data) } : event
            )
            return sendSse(res, rewritten, o.eventDelayMs ?? 0, o.holdOpen === true, o.headers ?? {})
          }
          const o = reply.options
          if (o.holdOpen === true) return
          const payload = entry.api === "chat" ? chatCompletion(entry, o) : responsesResponse(entry, o)
          res.writeHead(200, { "content-type": "application/json", ...o.headers })
          res.end(JSON.stringify(rewrite(payload)))
          return
        }
      }
    }

    const server = Http.createServer(onRequest)
    const port = yield* Effect.async<number>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
    })
    yield* Effect.addFinalizer(() =>
      Effect.async<void>((resume) => {
        for (const res of open) res.destroy()
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
    )
    const url = `http://127.0.0.1:${port}/v1`

    const waitFor = <A>(check: () => A | undefined): Effect.Effect<A> =>
      Effect.async<A>((resume) => {
        const run = () => {
          const value = check()
          if (value !== undefined) {
            listeners.delete(run)
            resume(Effect.succeed(value))
          }
        }
        listeners.add(run)
        run()
        return Effect.sync(() => listeners.delete(run))
      })

    const service: Service = {
      url,
      apiKey,
      requests: Effect.sync(() => entries.map(snapshot)),
      enqueue: (...replies) => Effect.sync(() => void queue.push(...replies)),
      setHandler: (next) => Effect.sync(() => void (handler = next)),
      pending: Effect.sync(() => queue.length),
      reset: Effect.sync(() => {
        queue.length = 0
        handler = undefined
        entries.length = 0
      }),
      awaitRequests: (n) => waitFor(() => (entries.length >= n ? entries.map(snapshot) : undefined)),
      awaitAborted: (index) => waitFor(() => (entries[index]?.aborted === true ? snapshot(entries[index]) : undefined)),
      config: (extra = {}) =>
        ConfigProvider.fromMap(
          new Map([["OPENAI_API_KEY", apiKey], ["OPENAI_BASE_URL", url], ...Object.entries(extra)])
        ),
      clientLayer: (clientOptions = {}) =>
        OpenAIClient.layer({ retryBaseDelay: "10 millis", ...clientOptions, apiKey, baseURL: url })
    }
    return service
  })

// =============================================================================
// Rendering
// =============================================================================

const errorReply = (
  status: number,
  message: string,
  options?: { readonly code?: string }
): Extract<Reply, { _tag: "Error" }> => error(status, message, options) as Extract<Reply, { _tag: "Error" }>

const sendError = (res: Http.ServerResponse, reply: Extract<Reply, { _tag: "Error" }>): void => {
  res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
  res.end(JSON.stringify({ error: { message: reply.message, type: reply.type, param: null, code: reply.code } }))
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const sendSse = async (
  res: Http.ServerResponse,
  events: ReadonlyArray<SseEvent>,
  delayMs: number,
  holdOpen: boolean,
  headers: Readonly<Record<string, string>>
): Promise<void> => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers })
  res.flushHeaders()
  for (const event of events) {
    if (res.destroyed) return
    if (delayMs > 0) await sleep(delayMs)
    if (res.destroyed) return
    const data = typeof event.data === "string" ? event.data : JSON.stringify(event.data)
    res.write(`${event.event !== undefined ? `event: ${event.event}\n` : ""}data: ${data}\n\n`)
  }
  if (!holdOpen) res.end()
}

const CREATED = 1_700_000_000

const splitText = (text: string | ReadonlyArray<string> | undefined): ReadonlyArray<string> =>
  text === undefined ? [] : typeof text === "string" ? (text.match(/\S+\s*|\s+/g) ?? []) : text

const fullText = (text: string | ReadonlyArray<string> | undefined): string | undefined =>
  text === undefined ? undefined : typeof text === "string" ? text : text.join("")

interface ResolvedCall {
  readonly id: string
  readonly name: string
  /** The `arguments` field as sent in complete items (`{}` when it is left out). */
  readonly argumentsField: { readonly arguments?: unknown }
  /** Streamed argument pieces (none when the arguments are not text). */
  readonly pieces: ReadonlyArray<string>
}

const resolveCalls = (entry: Entry, o: MessageOptions): ReadonlyArray<ResolvedCall> =>
  (o.toolCalls ?? []).map((call, i) => {
    const id = call.id ?? `call_${entry.index}_${i}`
    if (!("arguments" in call) || call.arguments === undefined) {
      return { id, name: call.name, argumentsField: {}, pieces: [] }
    }
    if (call.arguments === null || (call.argumentsAsObject === true && typeof call.arguments === "object")) {
      return { id, name: call.name, argumentsField: { arguments: call.arguments }, pieces: [] }
    }
    const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments)
    const size = Math.max(1, o.argumentChunkSize ?? 5)
    const pieces: Array<string> = []
    for (let at = 0; at < args.length; at += size) pieces.push(args.slice(at, at + size))
    return { id, name: call.name, argumentsField: { arguments: args }, pieces }
  })

/** The `arguments` field of a call's first streamed piece: `""` for text, the value itself otherwise. */
const openingArguments = (call: ResolvedCall): { readonly arguments?: unknown } =>
  typeof call.argumentsField.arguments === "string" ? { arguments: "" } : call.argumentsField

/** Argument pieces in emission order: sequential, or round-robin when interleaved. */
const pieceOrder = (calls: ReadonlyArray<ResolvedCall>, interleave: boolean): Array<[number, string]> => {
  const out: Array<[number, string]> = []
  if (!interleave) {
    calls.forEach((call, i) => call.pieces.forEach((piece) => out.push([i, piece])))
    return out
  }
  const longest = Math.max(0, ...calls.map((call) => call.pieces.length))
  for (let p = 0; p < longest; p++) {
    calls.forEach((call, i) => {
      const piece = call.pieces[p]
      if (piece !== undefined) out.push([i, piece])
    })
  }
  return out
}

const modelOf = (entry: Entry, o: MessageOptions): string =>
  o.model ?? (typeof entry.body.model === "string" ? entry.body.model : "test-model")

const usageOf = (o: MessageOptions) => o.usage ?? { inputTokens: 10, outputTokens: 5 }

// ---- Chat Completions ------------------------------------------------------

const chatFinish = (o: MessageOptions): string =>
  o.finishReason ?? ((o.toolCalls?.length ?? 0) > 0 ? "tool_calls" : "stop")

const chatUsage = (o: MessageOptions) => {
  const usage = usageOf(o)
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens
  }
}

const chatCompletion = (entry: Entry, o: MessageOptions) => {
  const calls = resolveCalls(entry, o)
  return {
    id: `chatcmpl-test-${entry.index}`,
    object: "chat.completion",
    created: CREATED,
    model: modelOf(entry, o),
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: fullText(o.text) ?? null,
        refusal: o.refusal ?? null,
        ...(calls.length > 0
          ? {
            tool_calls: calls.map((call) => ({
              id: call.id,
              type: "function",
              function: { name: call.name, ...call.argumentsField }
            }))
          }
          : {})
      },
      logprobs: null,
      finish_reason: chatFinish(o)
    }],
    usage: chatUsage(o)
  }
}

const chatEvents = (entry: Entry, o: MessageOptions): { events: Array<SseEvent>; terminal: Array<SseEvent> } => {
  const id = `chatcmpl-test-${entry.index}`
  const model = modelOf(entry, o)
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): SseEvent => ({
    data: {
      id,
      object: "chat.completion.chunk",
      created: CREATED,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }]
    }
  })
  const events: Array<SseEvent> = [chunk({ role: "assistant", content: "", refusal: null })]
  for (const delta of splitText(o.text)) events.push(chunk({ content: delta }))
  if (o.refusal !== undefined) events.push(chunk({ refusal: o.refusal }))
  const calls = resolveCalls(entry, o)
  calls.forEach((call, i) =>
    events.push(chunk({
      tool_calls: [{
        index: i,
        id: call.id,
        type: "function",
        function: { name: call.name, ...openingArguments(call) }
      }]
    }))
  )
  for (const [i, piece] of pieceOrder(calls, o.interleaveToolCalls === true)) {
    events.push(chunk({ tool_calls: [{ index: i, function: { arguments: piece } }] }))
  }
  const terminal: Array<SseEvent> = [chunk({}, chatFinish(o))]
  const streamOptions = entry.body.stream_options
  if (isRecord(streamOptions) && streamOptions.include_usage === true) {
    terminal.push({
      data: { id, object: "chat.completion.chunk", created: CREATED, model, choices: [], usage: chatUsage(o) }
    })
  }
  terminal.push({ data: "[DONE]" })
  return { events, terminal }
}

// ---- Responses -------------------------------------------------------------

const responsesUsage = (o: MessageOptions) => {
  const usage = usageOf(o)
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.inputTokens + usage.outputTokens
  }
}

const responsesItems = (entry: Entry, o: MessageOptions) => {
  const items: Array<Record<string, unknown>> = []
  const text = fullText(o.text)
  if (text !== undefined || o.refusal !== undefined) {
    items.push({
      id: `msg_test_${entry.index}`,
      type: "message",
      role: "assistant",
      status: "completed",
      content: [
        ...(text !== undefined ? [{ type: "output_text", text, annotations: [] }] : []),
        ...(o.refusal !== undefined ? [{ type: "refusal", refusal: o.refusal }] : [])
      ]
    })
  }
  resolveCalls(entry, o).forEach((call, i) =>
    items.push({
      id: `fc_test_${entry.index}_${i}`,
      type: "function_call",
      status: "completed",
      call_id: call.id,
      name: call.name,
      ...call.argumentsField
    })
  )
  return items
}

const responsesResponse = (entry: Entry, o: MessageOptions, status?: "in_progress") => {
  const finish = o.finishReason
  const incomplete = finish === "length"
    ? "max_output_tokens"
    : finish === "content_filter"
    ? "content_filter"
    : undefined
  const items = status === "in_progress" ? [] : responsesItems(entry, o)
  return {
    id: `resp_test_${entry.index}`,
    object: "response",
    created_at: CREATED,
    model: modelOf(entry, o),
    status: status ?? (incomplete !== undefined ? "incomplete" : "completed"),
    incomplete_details: incomplete !== undefined && status === undefined ? { reason: incomplete } : null,
    error: null,
    instructions: null,
    metadata: null,
    output: items,
    output_text: status === "in_progress" ? "" : (fullText(o.text) ?? ""),
    parallel_tool_calls: true,
    temperature: null,
    top_p: null,
    tool_choice: "auto",
    tools: [],
    usage: status === "in_progress" ? null : responsesUsage(o)
  }
}

const responsesEvents = (entry: Entry, o: MessageOptions): { events: Array<SseEvent>; terminal: Array<SseEvent> } => {
  let sequence = 0
  const ev = (type: string, fields: Record<string, unknown>): SseEvent => ({
    event: type,
    data: { type, sequence_number: sequence++, ...fields }
  })
  const events: Array<SseEvent> = [
    ev("response.created", { response: responsesResponse(entry, o, "in_progress") }),
    ev("response.in_progress", { response: responsesResponse(entry, o, "in_progress") })
  ]
  const finalItems = responsesItems(entry, o)
  let outputIndex = 0
  const text = fullText(o.text)
  if (text !== undefined || o.refusal !== undefined) {
    const itemId = `msg_test_${entry.index}`
    const index = outputIndex++
    events.push(ev("response.output_item.added", {
      output_index: index,
      item: { id: itemId, type: "message", role: "assistant", status: "in_progress", content: [] }
    }))
    if (text !== undefined) {
      events.push(ev("response.content_part.added", {
        item_id: itemId,
        output_index: index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] }
      }))
      for (const delta of splitText(o.text)) {
        events.push(ev("response.output_text.delta", {
          item_id: itemId,
          output_index: index,
          content_index: 0,
          delta,
          logprobs: []
        }))
      }
      events.push(ev("response.output_text.done", {
        item_id: itemId,
        output_index: index,
        content_index: 0,
        text,
        logprobs: []
      }))
    }
    if (o.refusal !== undefined) {
      events.push(ev("response.refusal.delta", {
        item_id: itemId,
        output_index: index,
        content_index: text !== undefined ? 1 : 0,
        delta: o.refusal
      }))
    }
    events.push(ev("response.output_item.done", { output_index: index, item: finalItems[index] }))
  }
  const calls = resolveCalls(entry, o)
  const callIndex = calls.map(() => outputIndex++)
  calls.forEach((call, i) =>
    events.push(ev("response.output_item.added", {
      output_index: callIndex[i],
      item: {
        id: `fc_test_${entry.index}_${i}`,
        type: "function_call",
        status: "in_progress",
        call_id: call.id,
        name: call.name,
        ...openingArguments(call)
      }
    }))
  )
  for (const [i, piece] of pieceOrder(calls, o.interleaveToolCalls === true)) {
    events.push(ev("response.function_call_arguments.delta", {
      item_id: `fc_test_${entry.index}_${i}`,
      output_index: callIndex[i],
      delta: piece
    }))
  }
  calls.forEach((call, i) => {
    events.push(ev("response.function_call_arguments.done", {
      item_id: `fc_test_${entry.index}_${i}`,
      output_index: callIndex[i],
      ...call.argumentsField
    }))
    events.push(ev("response.output_item.done", { output_index: callIndex[i], item: finalItems[callIndex[i]!] }))
  })
  const final = responsesResponse(entry, o)
  const terminal = [
    ev(final.status === "incomplete" ? "response.incomplete" : "response.completed", { response: final })
  ]
  return { events, terminal }
}

// =============================================================================
// TestClock driver
// =============================================================================

/**
 * Runs `effect` on a fiber while advancing the `TestClock` to each sleep it
 * schedules (real I/O keeps running in between). Returns the exit and the
 * delays the clock was advanced by, in order, in milliseconds.
 */
export const driveTestClock = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<{ readonly exit: Exit.Exit<A, E>; readonly delays: ReadonlyArray<number> }, never, R> =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    const delays: Array<number> = []
    while (true) {
      const done = yield* Fiber.poll(fiber)
      if (Option.isSome(done)) return { exit: done.value, delays }
      const sleeps = yield* TestClock.sleeps()
      if (Chunk.isNonEmpty(sleeps)) {
        const now = yield* Clock.currentTimeMillis
        const delay = Math.max(0, Math.min(...sleeps) - now)
        delays.push(delay)
        yield* TestClock.adjust(Duration.millis(delay))
      } else {
        // let real I/O make progress
        yield* Effect.promise(() => sleep(2))
      }
    }
  })
