/**
 * Serves workflows over HTTP: {@link layer} mounts the `WorkflowApi`
 * endpoints, `/openapi.json`, the API docs at `/docs` and the session browser
 * at `/` on an `HttpLayerRouter` (next to the routes of your own `HttpApi`);
 * {@link serve} runs them as a stand-alone Node server.
 *
 * ```ts
 * const Workflows = WorkflowServer.layer({
 *   workflows: [orders, WorkflowServer.withLayer(shopping, ShoppingToolsLive)],
 *   tokens: { "secret-token-of-alice": "alice" }
 * })
 * HttpLayerRouter.serve(Layer.mergeAll(MyApiRoutes, Workflows)).pipe(
 *   Layer.provide([
 *     NodeHttpServer.layer(createServer, { port: 3000 }),
 *     SqliteSessionStore.layer({ filename: "app.db" })
 *   ]),
 *   Layer.launch,
 *   NodeRuntime.runMain
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type * as Etag from "@effect/platform/Etag"
import type * as FileSystem from "@effect/platform/FileSystem"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import type * as HttpPlatform from "@effect/platform/HttpPlatform"
import * as HttpServer from "@effect/platform/HttpServer"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as Path from "@effect/platform/Path"
import type { SessionStore, Workflow } from "@sessionflow/core"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as LogLevel from "effect/LogLevel"
import * as Schema from "effect/Schema"
import { createServer } from "node:http"
import * as internalJwt from "./internal/jwt.js"
import * as internal from "./internal/server.js"
import type * as WorkflowApi from "./WorkflowApi.js"

/**
 * A workflow served with a layer of its own (its model, its tools' handlers,
 * or even its own `SessionStore`), built once when the server starts.
 *
 * @since 0.1.0
 * @category models
 */
export interface Mounted<out R, out E> extends internal.Mounted<R, E> {}

/**
 * What `workflows` takes: a workflow (its requirements come from the server's
 * context) or a {@link Mounted} one.
 *
 * @since 0.1.0
 * @category models
 */
export type Entry = internal.Entry

/**
 * The requirements an entry leaves to the server's context.
 *
 * @since 0.1.0
 * @category type-level
 */
export type EntryContext<X> = internal.EntryContext<X>

/**
 * The errors building an entry's layer may fail with.
 *
 * @since 0.1.0
 * @category type-level
 */
export type EntryError<X> = internal.EntryError<X>

/**
 * Serves `workflow` with `layer` provided to its runs and session endpoints;
 * the layer is built once, when the server starts, over the server's context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const withLayer: <W extends Workflow.Any, ROut, E, RIn>(
  workflow: W,
  layer: Layer.Layer<ROut, E, RIn>,
  options?: {
    /** its URL-safe id (`[a-z0-9-]`, at most 64); default: made from its name (`Shopping List` → `shopping-list`) */
    readonly id?: string | undefined
  }
) => Mounted<Exclude<Workflow.Context<W>, ROut> | RIn, E> = internal.withLayer

/**
 * Serves `workflow` under a URL-safe id of your choice (`/workflows/:id/…`);
 * its display name stays its name. Without it a workflow's id is made from
 * its name (`Shopping List Workflow` → `shopping-list-workflow`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const withId = <W extends Workflow.Any>(workflow: W, id: string): Mounted<Workflow.Context<W>, never> =>
  internal.withLayer(workflow, Layer.empty, { id }) as Mounted<Workflow.Context<W>, never>

/**
 * Turns a request into the caller's user id (`undefined`: anonymous), or
 * refuses it with `Unauthorized` (401).
 *
 * @since 0.1.0
 * @category authentication
 */
export type Authenticate = (
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<string | undefined, WorkflowApi.Unauthorized>

/**
 * The default authentication: `Authorization: Bearer <token>` with a token of
 * `tokens` (token → user id) is that user; a request without the header is
 * anonymous; any other token or header is refused (401).
 *
 * @since 0.1.0
 * @category authentication
 */
export const bearerTokens: (tokens: Readonly<Record<string, string>>) => Authenticate = internal.bearerTokens

/**
 * What {@link jwt} verifies: the key (one of `secret`, `publicKey`,
 * `jwksUrl`), and the claims.
 *
 * @since 0.1.0
 * @category authentication
 */
export interface JwtOptions {
  /** a shared secret (HS256, HS384, HS512) */
  readonly secret?: string | Uint8Array | undefined
  /** a public key, PEM (SPKI), for the first of `algorithms` (default RS256) */
  readonly publicKey?: string | undefined
  /** a JSON Web Key Set endpoint (fetched and cached by `jose`) */
  readonly jwksUrl?: string | undefined
  /** the accepted algorithms (default: those of the key) */
  readonly algorithms?: ReadonlyArray<string> | undefined
  /** the required `iss` */
  readonly issuer?: string | ReadonlyArray<string> | undefined
  /** the required `aud` */
  readonly audience?: string | ReadonlyArray<string> | undefined
  /** the claim that is the user id (default `sub`) */
  readonly userClaim?: string | undefined
  /** seconds of leeway for `exp` and `nbf` (default 0) */
  readonly clockTolerance?: number | undefined
}

/**
 * Bearer JWT authentication, verified with `jose`: `Authorization: Bearer
 * <jwt>` whose signature, expiry (and issuer, audience when given) verify is
 * the user of its `userClaim` (default `sub`); a request without the header
 * is anonymous (refused too with `requireAuth`); any other token is a 401.
 *
 * ```ts
 * WorkflowServer.layer({
 *   workflows,
 *   requireAuth: true,
 *   authenticate: WorkflowServer.jwt({
 *     jwksUrl: "https://id.example.com/.well-known/jwks.json",
 *     issuer: "https://id.example.com/"
 *   })
 * })
 * ```
 *
 * @since 0.1.0
 * @category authentication
 */
export const jwt: (options: JwtOptions) => Authenticate = internalJwt.jwt

/**
 * @since 0.1.0
 * @category options
 */
export interface Options<Entries extends ReadonlyArray<Entry>> {
  /** the served workflows, by name (two with one name are a defect) */
  readonly workflows: Entries
  /** who is calling; default: {@link bearerTokens} of `tokens` */
  readonly authenticate?: Authenticate | undefined
  /** bearer token → user id, for the default authentication (default: none, every caller is anonymous) */
  readonly tokens?: Readonly<Record<string, string>> | undefined
  /** refuse anonymous callers (401): every request must authenticate (default false) */
  readonly requireAuth?: boolean | undefined
  /**
   * origins (`https://app.example.com`) whose pages may send state-changing
   * requests besides the server's own (default none: requests with another
   * `Origin` or a cross-site `Sec-Fetch-Site` are a 403)
   */
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  /** the largest request body, in bytes (413 above it); default 1 MiB */
  readonly maxBodySize?: number | undefined
  /**
   * a run taking longer is interrupted (recorded as cancelled, nothing
   * committed): 504, or `RunCancelled` when streamed; default 10 minutes. A
   * run started in the background (`Prefer: respond-async`) is not bound by it
   */
  readonly runTimeout?: Duration.DurationInput | undefined
  /** a comment line on a quiet event stream, so that proxies keep it open; default 15 seconds */
  readonly heartbeat?: Duration.DurationInput | undefined
  /**
   * the most bytes of a run's event stream kept for a client that has not
   * read them yet; a client further behind is cut off (its response ends) and
   * its run goes on without it; default 1 MiB
   */
  readonly maxStreamBuffer?: number | undefined
  /**
   * Which runs' events are stored in the store's event log, for
   * `GET /workflows/:name/runs/:runId/events` (replayed and followed with
   * `Last-Event-ID`, on this server or another over the same store):
   * `"streamed"` (default) the runs started or continued with
   * `Accept: text/event-stream` and those started in the background
   * (`Prefer: respond-async`); `"all"` every run, JSON ones too; `"none"`
   * none (that route then finds no events)
   */
  readonly events?: "streamed" | "all" | "none" | undefined
  /** mount everything under this path (e.g. `/sessionflow`); default: at the root */
  readonly prefix?: `/${string}` | undefined
  /** serve the session browser at `${prefix}/` (default true) */
  readonly page?: boolean | undefined
  /** serve the API docs (Swagger UI) at `${prefix}/docs` (default true) */
  readonly docs?: boolean | undefined
  /**
   * the level of the line logged per request (`GET /workflows 200 3 ms`) with
   * the Effect logger; default `Debug`; `None` logs none
   */
  readonly requestLogLevel?: LogLevel.Literal | undefined
  /**
   * resume the served workflows' abandoned runs (their process died, their
   * lease expired) in the background, with `DurableRuns.supervise` (default
   * true, except for the workflows served on a remote placement such as a
   * cluster's, whose runners resume their runs); `false` leaves them to
   * `Workflow.recover` or another process; `true` or an object (the
   * supervisor's options) supervises every served workflow, remote ones too
   */
  readonly supervise?: boolean | SuperviseOptions | undefined
}

/**
 * The supervisor's settings (see `DurableRuns.Options`).
 *
 * @since 0.1.0
 * @category options
 */
export interface SuperviseOptions {
  readonly pollInterval?: Duration.DurationInput | undefined
  readonly maxAttempts?: number | undefined
  readonly concurrency?: number | undefined
  readonly leaseDuration?: Duration.DurationInput | undefined
}

/**
 * What the routes need besides the workflows' own requirements: an
 * `HttpLayerRouter` and the platform services a Node server provides
 * (`NodeHttpServer.layer`).
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements =
  | HttpLayerRouter.HttpRouter
  | Etag.Generator
  | FileSystem.FileSystem
  | HttpPlatform.HttpPlatform
  | Path.Path
  | SessionStore.SessionStore

/**
 * The server's routes, mounted on the `HttpLayerRouter` of your app: the
 * `WorkflowApi` endpoints (with authentication, body limit and run timeout),
 * `/openapi.json`, `/docs` and the session browser at `/` (all under
 * `prefix`). The workflows' requirements and a `SessionStore` come from the
 * layer's context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: <const Entries extends ReadonlyArray<Entry>>(
  options: Options<Entries>
) => Layer.Layer<never, EntryError<Entries[number]>, Requirements | EntryContext<Entries[number]>> = internal
  .layer as any

/**
 * @since 0.1.0
 * @category options
 */
export interface ServeOptions<Entries extends ReadonlyArray<Entry>> extends Options<Entries> {
  /** default 3000; 0 picks a free port (read it from `HttpServer.HttpServer`) */
  readonly port?: number | undefined
  /** default `127.0.0.1` */
  readonly host?: string | undefined
  /**
   * listen on a `host` other than a loopback address without `requireAuth`
   * (default false: such a server refuses to start with {@link OpenServerRefused})
   */
  readonly allowOpen?: boolean | undefined
}

/**
 * {@link serve} was asked to listen on an address other machines can reach
 * while anonymous callers may use it (no `requireAuth`), without `allowOpen`.
 *
 * @since 0.1.0
 * @category errors
 */
export class OpenServerRefused extends Schema.TaggedError<OpenServerRefused>("@sessionflow/server/OpenServerRefused")(
  "OpenServerRefused",
  { host: Schema.String }
) {
  /** @since 0.1.0 */
  override get message(): string {
    return `Refusing to listen on ${this.host} without authentication: set requireAuth (and tokens or authenticate), ` +
      `or allowOpen to serve anonymous callers on purpose`
  }
}

/**
 * Whether a host is a loopback address (`localhost`, `127.0.0.0/8`, `::1`).
 *
 * @since 0.1.0
 * @category utils
 */
export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host)

/**
 * The router settings the routes need: path parameters as long as the longest
 * id percent-encoded (find-my-way's default is 100 characters). Give them to
 * `HttpLayerRouter.serve(…, { routerConfig })` when you mount {@link layer}
 * in your own app; {@link serve} does.
 *
 * @since 0.1.0
 * @category layers
 */
export const routerConfig = { maxParamLength: 4096 } as const

/**
 * A stand-alone Node HTTP server with {@link layer}'s routes. The layer
 * provides the `HttpServer` (its `address` tells the port); it needs a
 * `SessionStore` and the workflows' requirements.
 *
 * ```ts
 * WorkflowServer.serve({ workflows: [orders], port: 3000 }).pipe(
 *   Layer.provide(SqliteSessionStore.layer({ filename: "app.db" })),
 *   Layer.launch,
 *   NodeRuntime.runMain
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const serve = <const Entries extends ReadonlyArray<Entry>>(
  options: ServeOptions<Entries>
): Layer.Layer<
  HttpServer.HttpServer,
  EntryError<Entries[number]> | HttpServerError.ServeError | OpenServerRefused,
  SessionStore.SessionStore | EntryContext<Entries[number]>
> => {
  const host = options.host ?? "127.0.0.1"
  if (!isLoopback(host) && options.requireAuth !== true && options.allowOpen !== true) {
    return Layer.fail(new OpenServerRefused({ host })) as any
  }
  return HttpLayerRouter.serve(layer(options), { disableLogger: true, disableListenLog: true, routerConfig }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: options.port ?? 3000, host })),
    // one line when it listens
    Layer.tap((context) => {
      const address = Context.get(context, HttpServer.HttpServer).address
      return Effect.logInfo(
        `sessionflow server listening on ${
          address._tag === "TcpAddress" ? `http://${address.hostname}:${address.port}` : address.path
        }`
      )
    })
  ) as any
}
