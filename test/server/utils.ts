/**
 * What the server tests share: a server on a free 127.0.0.1 port for the
 * test's scope, requests with fetch, and a reader of server-sent events.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import { SessionStore } from "@sessionflow/core"
import { WorkflowServer } from "@sessionflow/server"
import { Context, Effect, Layer } from "effect"

/** Starts `WorkflowServer.serve` on a free port (over `store`) for the scope; its base URL. */
export const start = <const Entries extends ReadonlyArray<WorkflowServer.Entry>>(
  options: WorkflowServer.Options<Entries>,
  store: Layer.Layer<SessionStore.SessionStore> = SessionStore.layerMemory
) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      WorkflowServer.serve({ ...options, port: 0 }).pipe(Layer.provide(store)) as Layer.Layer<HttpServer.HttpServer>
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("not a TCP server")
    return `http://127.0.0.1:${address.port}`
  })

export interface Reply {
  readonly status: number
  readonly contentType: string
  readonly body: any
  readonly text: string
  /** the response's headers, by lower-case name */
  readonly headers: Readonly<Record<string, string>>
}

/** One request; the body parsed as JSON when it is. */
export const request = (url: string, init: RequestInit & { readonly json?: unknown } = {}) =>
  Effect.promise(async (): Promise<Reply> => {
    const { json, ...rest } = init
    const response = await fetch(url, {
      ...rest,
      ...(json === undefined ? {} : { body: JSON.stringify(json) }),
      headers: {
        ...(json === undefined ? {} : { "content-type": "application/json" }),
        ...(rest.headers as Record<string, string> | undefined)
      }
    })
    const text = await response.text()
    let body: unknown = undefined
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      body = undefined
    }
    return {
      status: response.status,
      contentType: response.headers.get("content-type") ?? "",
      body,
      text,
      headers: Object.fromEntries(response.headers)
    }
  })

export interface Frame {
  readonly id: string | undefined
  readonly event: string | undefined
  readonly data: string | undefined
  readonly comment: string | undefined
}

/** Splits an event stream into its frames (events and comments). */
export const parseFrames = (text: string): ReadonlyArray<Frame> =>
  text.split("\n\n").filter((block) => block.length > 0).map((block) => {
    const fields: Record<string, string> = {}
    let comment: string | undefined
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) comment = line.slice(1).trim()
      else {
        const at = line.indexOf(":")
        fields[line.slice(0, at)] = line.slice(at + 1).replace(/^ /, "")
      }
    }
    return { id: fields["id"], event: fields["event"], data: fields["data"], comment }
  })

/** The events (`data` parsed) of an event stream's text. */
export const parseEvents = (text: string): ReadonlyArray<any> =>
  parseFrames(text).filter((f) => f.data !== undefined).map((f) => JSON.parse(f.data!))

/** A streamed run: the whole event stream once the server closes it. */
export const streamRun = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  request(url, { method: "POST", json: body, headers: { accept: "text/event-stream", ...headers } })
