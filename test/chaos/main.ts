/**
 * `npm run chaos -- --store sqlite|pg --seed N (--minutes M | --seconds S) [--processes K] [--supervisors K]`:
 * a seeded chaos run over real processes on one store, then the check of
 * its history (see `README.md` beside this file). `--check-only <dir>`
 * checks a recorded run again (`--all`: every violation's history, not only
 * the first three of each invariant's). Exits non-zero on any violation.
 */
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { type ChaosConfig, defaultClients } from "./config.js"

const args = process.argv.slice(2)
const option = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? undefined : args[i + 1]
}
const usage = "usage: npm run chaos -- --store sqlite|pg --seed N (--minutes M | --seconds S) [--processes K] " +
  "[--supervisors K] [--keep] | --check-only <dir> [--all]"

const main = async (): Promise<number> => {
  const recorded = option("check-only")
  if (recorded !== undefined) {
    const { check, report } = await import("./check.js")
    const { readFolder } = await import("./history.js")
    const config = JSON.parse(fs.readFileSync(path.join(recorded, "meta.json"), "utf8")) as ChaosConfig
    const snapshot = JSON.parse(fs.readFileSync(path.join(recorded, "snapshot.json"), "utf8"))
    const result = check(readFolder(recorded), snapshot, { ...config, dir: recorded })
    console.log(report(result, { ...config, dir: recorded }, args.includes("--all") ? Infinity : undefined))
    return result.violations.length === 0 ? 0 : 1
  }
  const store = option("store") ?? "sqlite"
  const seed = Number(option("seed") ?? "1")
  const seconds = option("seconds") !== undefined ? Number(option("seconds")) : Number(option("minutes") ?? "1") * 60
  if ((store !== "sqlite" && store !== "pg") || !Number.isInteger(seed) || !(seconds > 0)) {
    console.error(usage)
    return 2
  }
  const dir = fs.mkdtempSync(path.join(tmpdir(), `sessionflow-chaos-${store}-${seed}-`))
  let schema: string | undefined
  let stopPostgres: (() => Promise<void>) | undefined
  if (store === "pg") {
    const { findPostgres } = await import("../postgres.js")
    const found = await findPostgres()
    stopPostgres = found.stop
    schema = `chaos_${seed}_${crypto.randomUUID().replaceAll("-", "").slice(0, 8)}`
    const { default: pg } = await import("pg")
    const client = new pg.Client({ connectionString: found.url })
    await client.connect()
    await client.query(`CREATE SCHEMA ${schema}`)
    await client.end()
  }
  const config: ChaosConfig = {
    store,
    spec: store === "pg" ? `pg:${schema}` : path.join(dir, "sessions.db"),
    seed,
    seconds,
    clients: Number(option("processes") ?? defaultClients),
    supervisors: Number(option("supervisors") ?? "2"),
    dir,
    leaseMillis: 1500,
    sessions: ["s0", "s1", "s2"],
    maxConnections: 4,
    lockTimeoutMillis: 2000
  }
  // imported once the PostgreSQL URL is known (the stores read it when loaded)
  const { runChaos } = await import("./controller.js")
  try {
    const { result } = await runChaos(config, schema)
    return result.violations.length === 0 ? 0 : 1
  } finally {
    if (schema !== undefined && args.includes("--keep") === false) {
      const { default: pg } = await import("pg")
      const client = new pg.Client({ connectionString: process.env.SESSIONFLOW_TEST_DATABASE_URL })
      await client.connect()
      await client.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {})
      await client.end()
    }
    await stopPostgres?.()
  }
}

main().then(
  // once what was printed reached the pipe (a long report is cut by an exit before it)
  (code) => process.stdout.write("", () => process.exit(code)),
  (error) => {
    console.error(error)
    process.exit(2)
  }
)
