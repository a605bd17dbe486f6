import { describe, expect, it } from "@effect/vitest"
import { Workflow } from "@sessionflow/core"
import { SessionNaming } from "@sessionflow/examples"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, Option } from "effect"
import { cli, tempDb } from "./utils.js"

const { articleWorkflow } = SessionNaming

describe("SessionNaming (rename_session) across processes", () => {
  it.scoped("a new process reads back the name the CLI run stored", () =>
    Effect.gen(function*() {
      const db = yield* tempDb()
      const result = yield* cli(["run", "session-naming", "--db", db])
      expect(result.code, result.stderr).toBe(0)
      const printed = /New session name: (.+)/.exec(result.stdout)?.[1]
      expect(printed).toBe("The Benefits of Renewable Energy")
      const sessionId = /stored with session (\S+);/.exec(result.stdout)?.[1]
      expect(sessionId).toBeDefined()
      // this test process is another process than the one that wrote it
      const name = yield* Workflow.getSessionName(articleWorkflow, sessionId!).pipe(
        Effect.provide(SqliteSessionStore.layer({ filename: db }))
      )
      expect(name).toEqual(Option.some("The Benefits of Renewable Energy"))
    }))
})
