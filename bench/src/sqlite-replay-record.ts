/**
 * One side of `sqlite-replay.ts`: `server-ab-serve.ts` over SQLite, with
 * every statement its connection runs noted (text, method, parameters).
 * The first `SIGUSR2` copies the database as it stands (with its WAL) to
 * `<out>.db` and starts noting; the second writes the statements noted since
 * to `<out>.json` and exits. `sqlite-replay.ts` copies this file into the
 * tree being compared, so it must only use what every compared version has.
 *
 *   node --conditions=@sessionflow/source --import tsx src/sqlite-replay-record.ts <db file> <out>
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const [file, out] = process.argv.slice(2) as [string, string]
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

interface Prepared {
  readonly [method: string]: unknown
}
interface DatabaseClass {
  readonly prototype: { prepare: (this: unknown, text: string) => Prepared }
}

/** better-sqlite3 as this tree's store loads it, its statements noted while `noted` is set. */
const Database = createRequire(path.join(root, "package.json"))("better-sqlite3") as DatabaseClass
let noted: Array<readonly [string, string, ReadonlyArray<unknown>]> | undefined
const prepare = Database.prototype.prepare
Database.prototype.prepare = function(text) {
  const statement = prepare.call(this, text)
  for (const method of ["run", "all", "get", "raw"]) {
    const original = statement[method]
    if (typeof original !== "function") continue
    Object.defineProperty(statement, method, {
      value(this: unknown, ...args: Array<unknown>) {
        noted?.push([text, method, args])
        return (original as (...args: Array<unknown>) => unknown).apply(this, args)
      }
    })
  }
  return statement
}

process.on("SIGUSR2", () => {
  if (noted === undefined) {
    for (const suffix of ["", "-wal", "-shm"]) {
      if (fs.existsSync(file + suffix)) fs.copyFileSync(file + suffix, `${out}.db${suffix}`)
    }
    noted = []
    console.log(JSON.stringify({ recording: true }))
    return
  }
  fs.writeFileSync(
    `${out}.json`,
    JSON.stringify(noted, (_, value) => typeof value === "bigint" ? Number(value) : value)
  )
  process.exit(0)
})

process.argv.splice(2, 2, "sqlite", file)
await import("./server-ab-serve.ts")
