/**
 * Where the SQLite server's time in statements goes, before vs after: each
 * side's server (`sqlite-replay-record.ts`: `server-ab-serve.ts` with its
 * statements noted, from its own tree; `--before DIR` as in `server-ab.ts`)
 * is warmed up (`--warmup N` runs, default 300), its database copied, and
 * the statements of the next `--requests N` runs (default 500, one client,
 * a new session each) recorded. Then the recordings are replayed, with this
 * bench's better-sqlite3, on copies of the databases (`synchronous=NORMAL`,
 * WAL, as the store opens them), the sides and variants taking turns
 * `--rounds N` times (default 7): each side as recorded, and the after side
 * without the insert into the versions table (the history's row) and
 * without the listing indexes (dropped from its copy). Prints the median
 * and lowest µs per request of each, as a table and one JSON line.
 *
 *   node --import tsx src/sqlite-replay.ts --before DIR [--requests N] [--warmup N] [--rounds N]
 */
import Database from "better-sqlite3"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { postRun, timeCalls } from "./load.ts"
import { afterRoot, beforeRootOption, copyScripts, option, spawnSide } from "./sides.ts"

const beforeRoot = beforeRootOption()
const requests = Number(option("--requests") ?? 500)
const warmup = Number(option("--warmup") ?? 300)
const rounds = Number(option("--rounds") ?? 7)

const recorder = path.join("bench", "src", "sqlite-replay-record.ts")
const removeCopies = copyScripts(beforeRoot, [path.join("bench", "src", "server-ab-serve.ts"), recorder])
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-sqlite-replay-"))
process.once("exit", () => {
  removeCopies()
  fs.rmSync(dir, { recursive: true, force: true })
})
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(1))

type Statement = readonly [text: string, method: string, args: ReadonlyArray<unknown>]

/** Runs one side's server, records `requests` runs after the warm-up; the recording's path (without extension). */
const record = async (side: string, root: string): Promise<string> => {
  const out = path.join(dir, side)
  const server = spawnSide(root, `${side} server`, recorder, [path.join(dir, `${side}-server.db`), out])
  const { port } = JSON.parse(await server.line(`{"port":`)) as { port: number }
  const url = `http://127.0.0.1:${port}`
  await timeCalls(postRun(url, `${side}-warm`), 16, warmup)
  const recording = server.line(`{"recording":`)
  server.signal("SIGUSR2")
  await recording
  await timeCalls(postRun(url, `${side}-rec`), 1, requests)
  server.signal("SIGUSR2")
  await server.exited
  return out
}

const listingIndexes = (db: Database.Database) =>
  (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE '%listing_idx'").all() as Array<
    { name: string }
  >)
    .map((row) => row.name)

/** One replay of a recording on a fresh copy of its database: µs per request. */
const replay = (recording: string, variant: "as recorded" | "no versions row" | "no listing indexes"): number => {
  const copy = path.join(dir, "replay.db")
  for (const suffix of ["", "-wal", "-shm"]) {
    fs.rmSync(copy + suffix, { force: true })
    if (fs.existsSync(`${recording}.db${suffix}`)) fs.copyFileSync(`${recording}.db${suffix}`, copy + suffix)
  }
  const statements = JSON.parse(fs.readFileSync(`${recording}.json`, "utf8")) as ReadonlyArray<Statement>
  const db = new Database(copy)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  if (variant === "no listing indexes") { for (const name of listingIndexes(db)) db.exec(`DROP INDEX "${name}"`) }
  db.pragma("wal_checkpoint(TRUNCATE)")
  const prepared = new Map<string, Database.Statement>()
  const started = process.hrtime.bigint()
  for (const [text, method, args] of statements) {
    if (variant === "no versions row" && /^INSERT INTO "[a-z_]+_versions"/.test(text)) continue
    let statement = prepared.get(text)
    if (statement === undefined) {
      statement = db.prepare(text)
      prepared.set(text, statement)
    }
    ;(statement as unknown as Record<string, (...args: ReadonlyArray<unknown>) => unknown>)[method]!(...args)
  }
  const micros = Number(process.hrtime.bigint() - started) / 1000 / requests
  db.close()
  return micros
}

const before = await record("before", beforeRoot)
const after = await record("after", afterRoot)
const cases = [
  { name: "before", recording: before, variant: "as recorded" },
  { name: "after", recording: after, variant: "as recorded" },
  { name: "after, no versions row", recording: after, variant: "no versions row" },
  { name: "after, no listing indexes", recording: after, variant: "no listing indexes" }
] as const
const times = cases.map(() => [] as Array<number>)
for (let round = 0; round < rounds; round++) {
  for (const [i, c] of cases.entries()) times[i]!.push(replay(c.recording, c.variant))
}
const rows = cases.map((c, i) => {
  const sorted = [...times[i]!].sort((a, b) => a - b)
  return {
    case: c.name,
    medianMicros: Math.round(sorted[Math.floor(sorted.length / 2)]! * 10) / 10,
    lowestMicros: Math.round(sorted[0]! * 10) / 10
  }
})
console.log("| replayed | µs per request (median) | lowest |")
console.log("|---|---|---|")
for (const row of rows) console.log(`| ${row.case} | ${row.medianMicros} | ${row.lowestMicros} |`)
console.log(JSON.stringify({ node: process.version, requests, warmup, rounds, loadAverage: os.loadavg(), rows }))
