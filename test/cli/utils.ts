/**
 * A sample SQLite database for the CLI's tests.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { Cli } from "@sessionflow/cli"
import { SessionStore } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, TestClock } from "effect"
import * as path from "node:path"
const tempDir = Effect.flatMap(
  FileSystem.FileSystem,
  (fs) => fs.makeTempDirectoryScoped({ prefix: "sessionflow-cli-" })
).pipe(
  Effect.provide(NodeFileSystem.layer)
)

const run = (sessionId: string, n: number, status: "completed" | "error" = "completed"): SessionStore.RunRecord => ({
  runId: `${sessionId}-run-${n}`,
  sessionId,
  workflowName: "shopping",
  status,
  input: `add item ${n}`,
  ...(status === "completed" ? { content: `added item ${n}` } : { error: "the model gave up" }),
  startedAt: Date.UTC(2025, 0, 1, 12, 0, n),
  completedAt: Date.UTC(2025, 0, 1, 12, 0, n) + 1500
})

/** A database with two sessions (one owned by a user, one with a large state), written and closed. */
export const sampleDb = (table?: string) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const filename = path.join(dir, "app.db")
    yield* Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      yield* TestClock.setTime(Date.UTC(2025, 0, 1, 12, 0, 0))
      const alice = [{ items: ["milk", "eggs"] }, { items: ["milk", "eggs", "bread"] }, undefined]
      for (const [i, state] of alice.entries()) {
        if (i > 0) yield* TestClock.adjust("1 minute")
        yield* store.commit({
          sessionId: "alice-1",
          workflowName: "shopping",
          userId: "alice",
          expectedVersion: i,
          ...(state === undefined ? {} : { state }),
          run: run("alice-1", i + 1, state === undefined ? "error" : "completed")
        })
      }
      yield* TestClock.adjust("1 minute")
      // a state far larger than a pipe's buffer
      const big = Array.from({ length: 4000 }, (_, i) => `item number ${i} with a long enough description`)
      yield* store.commit({
        sessionId: "big",
        workflowName: "shopping",
        expectedVersion: 0,
        state: { items: big },
        run: run("big", 1)
      })
    }).pipe(Effect.provide(SqliteSessionStore.layer({ filename, table })))
    return { dir, filename }
  })

/** Runs the command in this process; its exit code and output. */

/** Runs the sessionflow command in this process, with what it prints and its exit code. */
export const inProcess = (argv: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    let stdout = ""
    let stderr = ""
    return Cli.main(argv).pipe(
      Cli.withWriters({ stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) }),
      Effect.map((code) => ({ code, stdout, stderr }))
    )
  })
