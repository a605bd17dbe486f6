/**
 * The sessionflow command as a separate process: exit codes, the one line on
 * stderr, pipes and JSON for other programs.
 */
import { describe, expect, it } from "@effect/vitest"
import type { SessionStore } from "@sessionflow/core"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { exec, sessionflow } from "../process.js"
import { sampleDb } from "./utils.js"

describe("sessionflow (a separate process)", () => {
  it.scoped("as a process: the exit code and the one line on stderr", () =>
    Effect.gen(function*() {
      const { dir } = yield* sampleDb()
      const text = path.join(dir, "notes.txt")
      fs.writeFileSync(text, "not a database\n")
      const [usage, broken] = yield* Effect.all([
        sessionflow(["sessions", "list", "--db", text, "--verbose"]),
        sessionflow(["sessions", "list", "--db", text])
      ], { concurrency: 2 })
      expect(usage).toEqual({
        code: 2,
        stdout: "",
        stderr: "error: unknown option '--verbose' (see: sessionflow sessions list --help)\n"
      })
      expect(broken).toEqual({
        code: 1,
        stdout: "",
        stderr: `error: cannot open the SQLite database '${text}' read-only: ` +
          `it is not a SQLite database (file is not a database)\n`
      })
    }))

  it.scoped("`sessions show … | head` ends quietly: no EPIPE stack trace, exit 0", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      const cli = path.join("packages", "cli", "src", "bin.ts")
      const result = yield* exec("bash", [
        "-c",
        `set -o pipefail; "${process.execPath}" --conditions=@sessionflow/source ` +
        `--import tsx ${cli} sessions show --db "${filename}" big | head -n 3`
      ])
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("Session big\n  workflow: shopping\n  name:     (none)\n")
    }))

  it.scoped("--json output goes straight into a JSON parser (sessions list)", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      const result = yield* sessionflow(["sessions", "list", "--json", "--db", filename])
      expect(result.code, result.stderr).toBe(0)
      expect((JSON.parse(result.stdout) as ReadonlyArray<SessionStore.SessionInfo>).map((s) => s.sessionId)).toEqual([
        "big",
        "alice-1"
      ])
    }))
})
