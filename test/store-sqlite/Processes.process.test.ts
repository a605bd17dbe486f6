import { assert, describe, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect } from "effect"
import { processExists, spawnFixture, tempFile } from "./processes.js"

describe("fixture processes", () => {
  it.scopedLive("a SIGKILLed worker is really gone, and so is its lock on the database", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const holder = yield* spawnFixture("lockHolder.ts", [filename, "30000"])
      yield* holder.ready
      const printed = JSON.parse((yield* holder.stdout).split("\n")[0]!) as { pid: number }
      // the spawned process is the script itself, not a wrapper around it
      assert.strictEqual(printed.pid, holder.pid)
      assert.isTrue(processExists(holder.pid))

      yield* holder.kill
      assert.isFalse(yield* holder.running)
      assert.isFalse(processExists(printed.pid))
      // the killed process's write lock went with it: this process writes at once
      const version = yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        return yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { a: 1 } })
      }).pipe(Effect.provide(SqliteSessionStore.layer({ filename })), Effect.timeout("10 seconds"))
      assert.strictEqual(version, 1)
    }), 60_000)
})
