/**
 * The server's load figure, before vs after: two servers of the W7 workflow
 * (ten steps, a new session per run), each in its own process
 * (`server-ab-serve.ts`: `WorkflowServer.serve` with its defaults), one from
 * this tree ("after") and one from a checkout of an earlier version
 * ("before", `--before DIR`: a checkout with its node_modules, whose server
 * is started from its own code: `server-ab-serve.ts` is copied into it for
 * the run and removed after). One client process (this one) takes turns
 * between them: `--chunk N` requests (default 200) to one, then to the
 * other, `--rounds N` times (default 5; the side that goes first alternates),
 * at 1, 16 and 64 concurrent clients, over SQLite (a temp file per server)
 * and PostgreSQL (a fresh schema per server, dropped after;
 * `SESSIONFLOW_TEST_DATABASE_URL`, else the local test database; skipped
 * when it does not answer). Each server is warmed up first (`--warmup N`,
 * default 300, at 16 clients, not counted). Prints requests/s, p50 and p99 of
 * each side, and the CPU time its server's process used per request during
 * its own turns (Linux: `/proc/<pid>/stat`, in 10 ms ticks, so summed over
 * all turns), and the ratios after/before per row, with the load average,
 * as a table and one JSON line. On a shared machine the ratios are the
 * figure: both sides see the same load, in alternating slices; the CPU per
 * request is the one least moved by the load.
 *
 *   node --import tsx src/server-ab.ts --before DIR [--chunk N] [--rounds N] [--warmup N]
 *     [--clients 1,16,64] [--stores sqlite,postgres] [--cpu-prof DIR]
 *
 * `--cpu-prof DIR` starts both servers with `--cpu-prof` (profiles in
 * DIR/<side>-<store>/, written when they stop).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { postRun, summarize, type Summary, timeCalls, type Timed } from "./load.ts"
import { afterRoot, beforeRootOption, copyScripts, option, spawnSide } from "./sides.ts"

const number = (name: string, fallback: number) => Number(option(name) ?? fallback)
const beforeRoot = beforeRootOption()
const chunk = number("--chunk", 200)
const rounds = number("--rounds", 5)
const warmup = number("--warmup", 300)
const clients = (option("--clients") ?? "1,16,64").split(",").map(Number)
const stores = (option("--stores") ?? "sqlite,postgres").split(",")
const cpuProf = option("--cpu-prof")
const pgUrl = process.env.SESSIONFLOW_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

const entry = path.join("bench", "src", "server-ab-serve.ts")
const removeCopies = copyScripts(beforeRoot, [entry])

// stopped by a signal: exit, so that the servers started below are stopped too
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(1))

const sides = [{ name: "before", root: beforeRoot }, { name: "after", root: afterRoot }] as const

interface Server {
  readonly url: string
  readonly cpuMs: () => number | undefined
  readonly stop: () => Promise<void>
}

/** Starts one side's server from its own tree and waits for its port. */
const start = async (root: string, label: string, args: ReadonlyArray<string>): Promise<Server> => {
  const profile = cpuProf === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", path.resolve(cpuProf, label)]
  const side = spawnSide(root, `${label} server`, entry, args, profile)
  // the server may log before (a newer one says where it listens)
  const { port } = JSON.parse(await side.line(`{"port":`)) as { port: number }
  return { url: `http://127.0.0.1:${port}`, cpuMs: side.cpuMs, stop: side.stop }
}

interface Row {
  readonly store: string
  readonly clients: number
  readonly before: Summary & Cpu
  readonly after: Summary & Cpu
  /** after/before requests/s: above 1, the after side is faster */
  readonly throughputRatio: number
  /** after/before p99: below 1, the after side is faster */
  readonly p99Ratio: number
  /** after/before server CPU per request: below 1, the after side does less work per request */
  readonly cpuRatio: number | undefined
}

/** The CPU time the server's process (all its threads) used per request of its turns, where `/proc` tells it. */
interface Cpu {
  readonly cpuMsPerRequest: number | undefined
}

const ratio = (after: number, before: number) => Math.round((after / before) * 100) / 100

const compare = async (store: string, servers: readonly [Server, Server]): Promise<Array<Row>> => {
  const tag = crypto.randomUUID().slice(0, 8)
  // JIT, lazily loaded modules, the store's first statements: not counted
  for (const [s, server] of servers.entries()) await timeCalls(postRun(server.url, `${tag}-warm-${s}`), 16, warmup)
  const rows: Array<Row> = []
  for (const concurrency of clients) {
    const batches: [Array<Timed>, Array<Timed>] = [[], []]
    // the CPU each server used during its own turns only
    const cpu: [number | undefined, number | undefined] = [0, 0]
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0]
      for (const s of order) {
        const call = postRun(servers[s]!.url, `${tag}-c${concurrency}-r${round}-${s}`)
        const cpuBefore = servers[s]!.cpuMs()
        batches[s]!.push(await timeCalls(call, concurrency, chunk))
        const cpuAfter = servers[s]!.cpuMs()
        const used = cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore
        cpu[s] = used === undefined || cpu[s] === undefined ? undefined : cpu[s] + used
      }
    }
    const perRequest = (s: 0 | 1) => {
      const used = cpu[s]
      return used === undefined ? undefined : Math.round((used / (rounds * chunk)) * 1000) / 1000
    }
    const before = { ...summarize(concurrency, batches[0]), cpuMsPerRequest: perRequest(0) }
    const after = { ...summarize(concurrency, batches[1]), cpuMsPerRequest: perRequest(1) }
    rows.push({
      store,
      clients: concurrency,
      before,
      after,
      throughputRatio: ratio(after.perSecond, before.perSecond),
      p99Ratio: ratio(after.p99Ms, before.p99Ms),
      cpuRatio: before.cpuMsPerRequest === undefined || after.cpuMsPerRequest === undefined
        ? undefined
        : ratio(after.cpuMsPerRequest, before.cpuMsPerRequest)
    })
    console.error(
      `${store} ${concurrency} clients: ${before.perSecond} → ${after.perSecond} req/s, ${
        before.cpuMsPerRequest ?? "?"
      } → ${after.cpuMsPerRequest ?? "?"} ms of server CPU per request`
    )
  }
  return rows
}

/** Both sides' servers over one store, compared, then stopped and their data removed. */
const run = async (store: string): Promise<Array<Row>> => {
  if (store === "sqlite") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-server-ab-"))
    const servers = await Promise.all(
      sides.map((side) => start(side.root, `${side.name}-sqlite`, ["sqlite", path.join(dir, `${side.name}.db`)]))
    )
    try {
      return await compare(store, [servers[0], servers[1]])
    } finally {
      await Promise.all(servers.map((server) => server.stop()))
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  const client = new pg.Client({ connectionString: pgUrl })
  try {
    await client.connect()
  } catch (error) {
    console.error("PostgreSQL skipped: it did not answer", error)
    return []
  }
  const tag = crypto.randomUUID().slice(0, 8)
  const schemas = sides.map((side) => `bench_ab_${side.name}_${tag}`)
  try {
    for (const schema of schemas) await client.query(`CREATE SCHEMA ${schema}`)
    const servers = await Promise.all(
      sides.map((side, s) => start(side.root, `${side.name}-postgres`, ["postgres", pgUrl, schemas[s]!]))
    )
    try {
      return await compare(store, [servers[0], servers[1]])
    } finally {
      await Promise.all(servers.map((server) => server.stop()))
    }
  } finally {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await client.end()
  }
}

const loadAtStart = os.loadavg()
const rows: Array<Row> = []
try {
  for (const store of stores) rows.push(...(await run(store)))
} finally {
  removeCopies()
}
const loadAtEnd = os.loadavg()

const fixed = (load: ReadonlyArray<number>) => load.map((l) => l.toFixed(1)).join(" ")
console.log(
  "| store | clients | before req/s | before p50 ms | before p99 ms | before " +
    "CPU ms/req | after req/s | after p50 ms | after p99 ms | after CPU ms/req " +
    "| req/s after/before | p99 after/before | CPU/req after/before | failures |"
)
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (const r of rows) {
  console.log(
    `| ${r.store} | ${r.clients} | ${r.before.perSecond} | ${r.before.p50Ms} | ${r.before.p99Ms} | ${
      r.before.cpuMsPerRequest ?? "–"
    } | ${r.after.perSecond} | ${r.after.p50Ms} | ${r.after.p99Ms} | ${
      r.after.cpuMsPerRequest ?? "–"
    } | ${r.throughputRatio} | ${r.p99Ratio} | ${r.cpuRatio ?? "–"} | ${r.before.failures + r.after.failures} |`
  )
}
console.log(
  `${chunk} requests per turn, ${rounds} turns per side; load average ${fixed(loadAtStart)} at the start, ${
    fixed(loadAtEnd)
  } at the end (${os.cpus().length} cores)`
)
console.log(
  JSON.stringify({ node: process.version, cpus: os.cpus().length, chunk, rounds, warmup, loadAtStart, loadAtEnd, rows })
)
