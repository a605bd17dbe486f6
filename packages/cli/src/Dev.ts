/**
 * `sessionflow dev <module>`: serves the workflows of your own module (the
 * HTTP API and the session page, `@sessionflow/server`) on a local port, and
 * serves them again whenever a file under the module's folder changes.
 *
 * The module (TypeScript or JavaScript, loaded with `tsx`) gives its
 * workflows in one of two ways:
 *
 * - `export default [greet, WorkflowServer.withLayer(shop, ShopToolsLive)]`:
 *   a default export that is an array of workflows (or of workflows mounted
 *   with `WorkflowServer.withLayer` / `withId`, for those that need a layer);
 * - otherwise, every named export that is a workflow or a mounted workflow.
 *
 * The server runs in a child Node process; a change stops it and starts a new
 * one on the same port (one line per reload). A module that fails to load
 * prints its error and the command keeps watching: the next change tries
 * again.
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { type ChildProcess, fork } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as net from "node:net"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

// -----------------------------------------------------------------------------
// the module's workflows
// -----------------------------------------------------------------------------

const workflowTypeId = Symbol.for("@sessionflow/core/Workflow")
const mountedTypeId = Symbol.for("@sessionflow/server/Mounted")

/**
 * Whether a value is a workflow (`Workflow.make`) or a mounted one
 * (`WorkflowServer.withLayer`, `withId`).
 *
 * @since 0.1.0
 * @category modules
 */
export const isEntry = (value: unknown): boolean =>
  typeof value === "object" && value !== null && (workflowTypeId in value || mountedTypeId in value)

/**
 * The workflows a module gives: its default export when it is an array (each
 * item a workflow or a mounted one), else its named exports that are
 * workflows. Fails with a message saying what the module should export.
 *
 * @since 0.1.0
 * @category modules
 */
export const workflowsOf = (exports: Readonly<Record<string, unknown>>): ReadonlyArray<unknown> | string => {
  const fallback = exports["default"]
  if (Array.isArray(fallback)) {
    const wrong = fallback.findIndex((item) => !isEntry(item))
    return wrong < 0
      ? fallback
      : `the default export's item ${wrong} is not a workflow ` +
        `(Workflow.make) or a mounted one (WorkflowServer.withLayer)`
  }
  const named = Object.entries(exports).filter(([name, value]) => name !== "default" && isEntry(value))
  return named.length > 0
    ? named.map(([, value]) => value)
    : "it exports no workflow: export each workflow (export const " +
      "greet = Workflow.make(…)), or export default an array of them"
}

// -----------------------------------------------------------------------------
// the child process
// -----------------------------------------------------------------------------

/**
 * What the server process tells the command, over the IPC channel.
 *
 * @since 0.1.0
 * @category models
 */
export type Message =
  | { readonly _tag: "Ready"; readonly workflows: ReadonlyArray<string> }
  | { readonly _tag: "Failed"; readonly message: string }

/**
 * Where the server listens and what it serves from.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** the module, as given on the command line */
  readonly module: string
  readonly host: string
  /** 0 picks a free port once: every reload listens on it */
  readonly port: number
  readonly db?: string | undefined
  readonly url?: string | undefined
  readonly schema?: string | undefined
  readonly table?: string | undefined
  /** how the PostgreSQL database is shown (its URL without the password) */
  readonly label?: string | undefined
}

/**
 * The SQLite file `dev` keeps its sessions in without `--db` or `--url`
 * (relative to the working directory).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultDb: string = path.join(".sessionflow", "dev.db")

/** The server's script beside this module: `.ts` when this one runs from its source. */
const serverScript = (): string => {
  const here = fileURLToPath(import.meta.url)
  return path.join(path.dirname(here), "internal", `devServer${path.extname(here)}`)
}

/** tsx's loader, by absolute URL (it resolves from this package, whatever the working directory). */
const tsxLoader = (): string => pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href

/** A free port on `host`, found once so that every server of the session listens on the same one. */
const freePort = (host: string): Effect.Effect<number, Error> =>
  Effect.async<number, Error>((resume) => {
    const probe = net.createServer()
    probe.once("error", (error) => resume(Effect.fail(error)))
    probe.listen(0, host, () => {
      const address = probe.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      probe.close(() => resume(Effect.succeed(port)))
    })
  })

/**
 * A change to ignore: dependencies, dot-files and folders (the default database,
 * editors' swap files), SQLite files and their journals, backups (`~`).
 */
const ignored = (file: string): boolean =>
  file.split(/[\\/]/).some((part) => part === "node_modules" || part.startsWith(".")) ||
  /\.(db|sqlite|sqlite3)(-wal|-shm|-journal)?$|~$/.test(file)

/**
 * Watches `root` and its folders (not `node_modules` nor dot-folders: a
 * recursive `fs.watch` would watch every folder of `node_modules` too),
 * calling `onChange` with the changed file's path relative to `root`; a new
 * folder is watched as it appears.
 */
const watchTree = (root: string, onChange: (file: string) => void): { readonly close: () => void } => {
  const watchers = new Map<string, fs.FSWatcher>()
  const watch = (dir: string) => {
    if (watchers.has(dir)) return
    try {
      const watcher = fs.watch(dir, (_event, name) => {
        const file = name === null ? dir : path.join(dir, String(name))
        const relative = path.relative(root, file)
        if (ignored(relative)) return
        if (fs.existsSync(file) && fs.statSync(file).isDirectory()) scan(file)
        onChange(relative)
      })
      watcher.on("error", () => {
        watcher.close()
        watchers.delete(dir)
      })
      watchers.set(dir, watcher)
    } catch {
      // a folder removed meanwhile, or not readable: not watched
    }
  }
  const scan = (dir: string): void => {
    watch(dir)
    const entries = fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []
    for (const entry of entries) {
      if (entry.isDirectory() && !ignored(entry.name)) scan(path.join(dir, entry.name))
    }
  }
  scan(root)
  return { close: () => watchers.forEach((watcher) => watcher.close()) }
}

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, " ").trim()

/**
 * Whether `dev` may listen on a host: a loopback address (`localhost`,
 * `127.0.0.0/8`, `::1`), as the server without authentication requires.
 *
 * @since 0.1.0
 * @category models
 */
export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host)

/**
 * The URL a browser opens for `host` and `port`.
 *
 * @since 0.1.0
 * @category models
 */
export const urlOf = (host: string, port: number): string =>
  `http://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}`

/**
 * Serves the module's workflows until interrupted, serving them again after
 * every change under the module's folder. Prints the URL once, then one line
 * per reload (or the module's error, on stderr); interrupting stops the
 * server.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (options: Options): Effect.Effect<never, Error> =>
  Effect.gen(function*() {
    if (!isLoopback(options.host)) {
      return yield* Effect.fail(
        new Error(
          `dev listens on a loopback address only (its server has no ` +
            `authentication): --host 127.0.0.1, ::1 or localhost, not ${options.host}`
        )
      )
    }
    const module = path.resolve(options.module)
    if (!fs.existsSync(module)) return yield* Effect.fail(new Error(`no module '${options.module}'`))
    const port = options.port === 0 ? yield* freePort(options.host) : options.port
    const url = urlOf(options.host, port)
    const folder = path.dirname(module)
    const shown = path.relative(process.cwd(), module) || module
    const db = options.url === undefined ? path.resolve(options.db ?? defaultDb) : undefined
    if (db !== undefined) fs.mkdirSync(path.dirname(db), { recursive: true })
    const args = [
      module,
      options.host,
      String(port),
      JSON.stringify({ db, url: options.url, schema: options.schema, table: options.table })
    ]
    const where = db === undefined ? options.label ?? "PostgreSQL" : path.relative(process.cwd(), db) || db
    return yield* Console.consoleWith((console) =>
      Effect.async<never, Error>(() => {
        let child: ChildProcess | undefined
        // the URL is printed by the first server that listens (the module may not load at first)
        let announced = false
        let timer: ReturnType<typeof setTimeout> | undefined
        let changed: string | undefined
        let stopping = false
        const start = () => {
          if (stopping) return
          const current = fork(serverScript(), args, {
            execArgv: [...process.execArgv.filter((a) => a.startsWith("--conditions")), "--import", tsxLoader()],
            stdio: ["ignore", "inherit", "inherit", "ipc"]
          })
          child = current
          let failed = false
          current.on("message", (message: Message) => {
            if (message._tag === "Failed") {
              failed = true
              console.unsafe.error(`error: ${shown} failed to load: ${oneLine(message.message)} (waiting for a change)`)
            } else if (!announced) {
              announced = true
              console.unsafe.log(`sessionflow dev: ${url}  (session page at /, API docs at /docs)`)
              console.unsafe.log(
                `serving ${message.workflows.join(", ")} from ${shown}, sessions in ${where}; watching ${
                  path.relative(process.cwd(), folder) || "."
                }/ for changes. Ctrl-C stops it.`
              )
            } else {
              console.unsafe.log(
                `reloaded ${shown} (${changed ?? "a change"}): serving ${message.workflows.join(", ")}`
              )
            }
          })
          current.on("exit", (code, signal) => {
            if (child === current) child = undefined
            // a server stopped by a change or Ctrl-C exits with 0; one that failed to load said why
            if (!stopping && !failed && code !== 0) {
              console.unsafe.error(`error: the server stopped (${signal ?? `exit code ${code}`}); waiting for a change`)
            }
          })
        }
        // a change while the server stops starts one server once it has stopped
        let restarting = false
        const restart = () => {
          if (restarting) return
          const previous = child
          if (previous === undefined || previous.exitCode !== null || previous.signalCode !== null) return start()
          restarting = true
          previous.once("exit", () => {
            restarting = false
            start()
          })
          previous.kill("SIGTERM")
        }
        const watcher = watchTree(folder, (file) => {
          changed = file === "" ? undefined : file
          if (timer !== undefined) clearTimeout(timer)
          timer = setTimeout(restart, 150)
        })
        start()
        // stopping waits for the server to exit
        return Effect.async<void>((stopped) => {
          stopping = true
          watcher.close()
          if (timer !== undefined) clearTimeout(timer)
          const last = child
          if (last === undefined || last.exitCode !== null || last.signalCode !== null) return stopped(Effect.void)
          last.once("exit", () => stopped(Effect.void))
          last.kill("SIGTERM")
        })
      })
    )
  })
