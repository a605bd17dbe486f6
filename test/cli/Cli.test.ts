import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { describe, expect, it } from "@effect/vitest"
import { Cli } from "@sessionflow/cli"
import { SessionStore } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, TestClock } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

import { inProcess, sampleDb } from "./utils.js"

/** An unfinished run of alice's, running, started (and updated) `at`, with `fields` changed. */
const activeRun = (at: number, runId: string, fields: Partial<SessionStore.ActiveRun>): SessionStore.ActiveRun => ({
  runId,
  sessionId: "alice-1",
  workflowName: "expenses",
  userId: "alice",
  status: "running",
  input: "record my trip",
  owner: "",
  leaseExpiresAt: 0,
  baseVersion: 2,
  durability: "step",
  startedAt: at,
  updatedAt: at,
  ...fields
})

/** Checks what `runs list` prints: its heading, a blank line, then `lines`. */
const runsListed = (filename: string, heading: string, lines: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const listed = yield* inProcess(["runs", "list", "--db", filename])
    expect(listed.code, listed.stderr).toBe(0)
    expect(listed.stdout).toBe([heading, "", ...lines, ""].join("\n"))
  })

const tables = (filename: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ name: string }>`SELECT name FROM sqlite_master ORDER BY name`)
    .pipe(
      Effect.map((rows) => rows.map((row) => row.name)),
      Effect.provide(SqliteClient.layer({ filename, readonly: true, disableWAL: true }))
    )

describe("sessionflow (in process)", () => {
  it.scoped("sessions list: one entry per session, newest first; --json is the store's SessionInfo list", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      const human = yield* inProcess(["sessions", "list", "--db", filename])
      expect(human.code, human.stderr).toBe(0)
      expect(human.stdout).toContain(`2 sessions in ${filename}:`)
      expect(human.stdout.indexOf("  big\n")).toBeLessThan(human.stdout.indexOf("  alice-1\n"))
      expect(human.stdout).toContain("3 runs, version 2, updated 2025-01-01 12:02:00, user alice")
      expect(human.stdout).toContain("1 run, version 1, updated 2025-01-01 12:03:00\n")

      const json = yield* inProcess(["sessions", "list", "--db", filename, "--json"])
      const sessions = JSON.parse(json.stdout) as ReadonlyArray<SessionStore.SessionInfo>
      expect(sessions.map((s) => [s.sessionId, s.workflowName, s.version, s.userId])).toEqual([
        ["big", "shopping", 1, undefined],
        ["alice-1", "shopping", 2, "alice"]
      ])
    }))

  it.scoped(
    "sessions list reads the store a page at a time; --limit " +
      "and --after page it by keyset, each session once, in order",
    () =>
      Effect.gen(function*() {
        const { filename } = yield* sampleDb()
        // 205 more sessions (more than two of the store pages the command reads), one a second
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          for (let i = 0; i < 205; i++) {
            yield* TestClock.adjust("1 second")
            yield* store.commit({
              sessionId: `s-${String(i).padStart(3, "0")}`,
              workflowName: "shopping",
              expectedVersion: 0,
              state: { items: [] }
            })
          }
        }).pipe(Effect.provide(SqliteSessionStore.layer({ filename })))
        const idsOf = (stdout: string) => [...stdout.matchAll(/^ {2}(\S+)$/gm)].map((m) => m[1])
        const newest = [
          ...Array.from({ length: 205 }, (_, i) => `s-${String(204 - i).padStart(3, "0")}`),
          "big",
          "alice-1"
        ]

        const all = yield* inProcess(["sessions", "list", "--db", filename])
        expect(all.code, all.stderr).toBe(0)
        expect(idsOf(all.stdout)).toEqual(newest)
        expect(all.stdout.startsWith(`207 sessions in ${filename}:\n`)).toBe(true)
        expect(all.stdout).not.toContain("--after")
        const allJson = JSON.parse(
          (yield* inProcess(["sessions", "list", "--db", filename, "--json"])).stdout
        ) as ReadonlyArray<SessionStore.SessionInfo>
        expect(allJson.map((s) => s.sessionId)).toEqual(newest)

        // --limit: the first n, and where the rest starts
        const first = yield* inProcess(["sessions", "list", "--db", filename, "--limit", "150"])
        expect(idsOf(first.stdout)).toEqual(newest.slice(0, 150))
        expect(first.stdout.startsWith(`150 sessions in ${filename}:\n`)).toBe(true)
        const after = /\n\nmore after them: --after (\S+)\n$/.exec(first.stdout)?.[1]
        expect(after).toBeDefined()
        // sessions made meanwhile are newer than where it left off: the rest comes once, in order
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          yield* TestClock.adjust("1 second")
          yield* store.commit({
            sessionId: "made-meanwhile",
            workflowName: "shopping",
            expectedVersion: 0,
            state: { items: [] }
          })
        }).pipe(Effect.provide(SqliteSessionStore.layer({ filename })))
        const rest = yield* inProcess(["sessions", "list", "--db", filename, "--limit", "150", "--after", after!])
        expect(idsOf(rest.stdout)).toEqual(newest.slice(150))
        expect(rest.stdout.startsWith(`57 sessions in ${filename}:\n`)).toBe(true)
        expect(rest.stdout).not.toContain("--after")
        // --json: the array, and where the rest starts on stderr
        const page = yield* inProcess(["sessions", "list", "--db", filename, "--json", "--limit", "2"])
        expect((JSON.parse(page.stdout) as ReadonlyArray<SessionStore.SessionInfo>).map((s) => s.sessionId)).toEqual([
          "made-meanwhile",
          newest[0]
        ])
        expect(page.stderr).toMatch(/^more after them: --after \S+\n$/)

        // a cursor it did not print, a limit below 1: usage errors, nothing listed
        for (const argv of [["--after", "not-a-cursor"], ["--limit", "0"]]) {
          const bad = yield* inProcess(["sessions", "list", "--db", filename, ...argv])
          expect(bad.code).toBe(2)
          expect(bad.stdout).toBe("")
          expect(bad.stderr).toContain(
            argv[0] === "--after"
              ? "--after is not where a sessions list left off"
              : "--limit is a number of sessions: 1 or more"
          )
        }
      })
  )

  it.scoped("sessions show: metadata, state and every run; --json has the same", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      const human = yield* inProcess(["sessions", "show", "--db", filename, "alice-1"])
      expect(human.code, human.stderr).toBe(0)
      expect(human.stdout).toContain("Session alice-1\n  workflow: shopping\n  name:     (none)\n  user:     alice")
      expect(human.stdout).toContain(`"bread"`)
      expect(human.stdout).toContain("Runs (3):")
      expect(human.stdout).toContain("1. ✓ completed 2025-01-01 12:00:01  1.5s  run alice-1-run-1")
      expect(human.stdout).toContain("» add item 2")
      expect(human.stdout).toContain("↳ added item 2")
      expect(human.stdout).toContain("3. ✗ error")
      expect(human.stdout).toContain("✗ the model gave up")

      const json = JSON.parse((yield* inProcess(["sessions", "show", "--db", filename, "--json", "alice-1"])).stdout)
      expect(json.state).toEqual({ items: ["milk", "eggs", "bread"] })
      expect(json.runs.map((r: SessionStore.RunRecord) => r.status)).toEqual(["completed", "completed", "error"])
      expect(json.userId).toBe("alice")
    }))

  it.scoped("state prints the session's state: indented, or one JSON line with --json", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      const human = yield* inProcess(["state", "--db", filename, "alice-1"])
      expect(human.stdout).toBe(`${JSON.stringify({ items: ["milk", "eggs", "bread"] }, null, 2)}\n`)
      const json = yield* inProcess(["state", "alice-1", "--db", filename, "--json"])
      expect(json.stdout).toBe(`{"items":["milk","eggs","bread"]}\n`)
    }))

  it.scoped("versions lists a session's kept versions; state --at prints one; fork writes a new session from one", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      const versions = yield* inProcess(["versions", "--db", filename, "alice-1"])
      expect(versions.code, versions.stderr).toBe(0)
      expect(versions.stdout).toContain("Session alice-1: 2 kept versions (current: 2)")
      expect(versions.stdout).toContain("  v1  2025-01-01 12:00:00  run alice-1-run-1  changed: items")
      expect(versions.stdout).toContain("  v2  2025-01-01 12:01:00  run alice-1-run-2  changed: items")
      const listed = JSON.parse((yield* inProcess(["versions", "--db", filename, "--json", "alice-1"])).stdout)
      expect(listed.map((v: SessionStore.VersionInfo) => v.version)).toEqual([1, 2])

      const first = yield* inProcess(["state", "--db", filename, "--json", "--at", "1", "alice-1"])
      expect(first.stdout).toBe(`{"items":["milk","eggs"]}\n`)
      const never = yield* inProcess(["state", "--db", filename, "--at", "5", "alice-1"])
      expect(never.code).toBe(1)
      expect(never.stderr).toBe(
        `error: Session 'alice-1' has no version 5 (its versions are ` +
          `1 to 2) (see: sessionflow versions --db ${filename} alice-1)\n`
      )

      const forked = yield* inProcess(["fork", "--db", filename, "--at", "1", "--to", "alice-2", "alice-1"])
      expect(forked.code, forked.stderr).toBe(0)
      expect(forked.stdout).toBe("Forked session alice-1 at version 1 into alice-2.\n")
      const copy = JSON.parse((yield* inProcess(["sessions", "show", "--db", filename, "--json", "alice-2"])).stdout)
      expect([copy.state, copy.version, copy.userId, copy.runs]).toEqual([{ items: ["milk", "eggs"] }, 1, "alice", []])
      // the original is as it was
      expect((yield* inProcess(["state", "--db", filename, "--json", "alice-1"])).stdout).toBe(
        `{"items":["milk","eggs","bread"]}\n`
      )
      const taken = yield* inProcess(["fork", "--db", filename, "--to", "alice-2", "alice-1"])
      expect(taken).toEqual({
        code: 1,
        stdout: "",
        stderr: "error: Session 'alice-2' exists already: give another id with --to\n"
      })
      expect((yield* inProcess(["fork", "--db", filename, "--at", "0", "alice-1"])).code).toBe(2)
    }))

  it.scoped("a custom --table, rename and delete (with --json)", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb("app_sessions")
      const renamed = yield* inProcess([
        "sessions",
        "rename",
        "--db",
        filename,
        "--table",
        "app_sessions",
        "--json",
        "alice-1",
        "Weekly",
        "shop"
      ])
      expect(JSON.parse(renamed.stdout)).toEqual({ sessionId: "alice-1", name: "Weekly shop" })
      const list = yield* inProcess(["sessions", "list", "--db", filename, "--table", "app_sessions"])
      expect(list.stdout).toContain("name: Weekly shop")
      expect(list.stdout).toContain(`2 sessions in ${filename} (table app_sessions):`)
      const deleted = yield* inProcess([
        "sessions",
        "delete",
        "--db",
        filename,
        "--table",
        "app_sessions",
        "--json",
        "big"
      ])
      expect(JSON.parse(deleted.stdout)).toEqual({ sessionId: "big", deleted: true })
      const again = yield* inProcess(["sessions", "delete", "--db", filename, "--table", "app_sessions", "big"])
      expect(again).toEqual({
        code: 1,
        stdout: "",
        stderr: `error: no session 'big' in ${filename} (table app_sessions) ` +
          `(see: sessionflow sessions list --db ${filename})\n`
      })
    }))

  it.scoped("a session whose stored state is corrupt: show still lists its runs, and exits 1", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      yield* Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`UPDATE sessionflow_sessions SET state = ${"{broken"} WHERE session_id = 'alice-1'`
      ).pipe(
        Effect.provide(SqliteClient.layer({ filename }))
      )
      const shown = yield* inProcess(["sessions", "show", "--db", filename, "alice-1"])
      expect(shown.code).toBe(1)
      expect(shown.stdout).toContain("(cannot be read: ")
      expect(shown.stdout).toContain("Runs (3):")
      expect(shown.stderr.trim().split("\n")).toHaveLength(1)
      expect(shown.stderr).toContain("'alice-1'")
      const state = yield* inProcess(["state", "--db", filename, "alice-1"])
      expect(state.code).toBe(1)
      expect(state.stdout).toBe("")
    }))

  it.scoped("runs list: paused runs with their question, running and abandoned ones; --json; read-only", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      const at = Date.UTC(2025, 0, 2, 9, 0, 0)
      const active = (runId: string, fields: Partial<SessionStore.ActiveRun>) => activeRun(at, runId, fields)
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        yield* store.startRun(active("r-paused", {
          status: "paused",
          journal: { next: 1, previous: "x", completed: [], outputs: {}, state: { items: [] }, answers: {} },
          pause: {
            path: ["record"],
            key: "1:Expense Assistant#1",
            payload: { tool: "record_expense", arguments: { amount: 240 } },
            checkpoint: { big: "private" },
            pausedAt: at
          }
        }))
        yield* store.startRun(
          active("r-abandoned", { sessionId: "big", userId: undefined, owner: "1234-dead", leaseExpiresAt: at - 1000 })
        )
        yield* store.startRun(
          active("r-running", { sessionId: "big", userId: undefined, owner: "5678-alive", leaseExpiresAt: at + 60_000 })
        )
      }).pipe(Effect.provide(SqliteSessionStore.layer({ filename })))
      const bytes = fs.readFileSync(filename)
      yield* TestClock.setTime(at)

      const listed = yield* inProcess(["runs", "list", "--db", filename])
      expect(listed.code, listed.stderr).toBe(0)
      expect(listed.stdout).toBe([
        `3 unfinished runs in ${filename}:`,
        "",
        "  ✗ abandoned run r-abandoned",
        "     workflow: expenses   session: big",
        "     started 2025-01-02 09:00:00, updated 2025-01-02 09:00:00",
        "     » record my trip",
        "     owner 1234-dead, lease expired 2025-01-02 08:59:59",
        "  ⏸ paused    run r-paused",
        "     workflow: expenses   session: alice-1   user: alice",
        "     started 2025-01-02 09:00:00, updated 2025-01-02 09:00:00, next step 2",
        "     » record my trip",
        "     ? {\"tool\":\"record_expense\",\"arguments\":{\"amount\":240}}",
        "       asked by record (1:Expense Assistant#1) at 2025-01-02 09:00:00",
        "  ▶ running   run r-running",
        "     workflow: expenses   session: big",
        "     started 2025-01-02 09:00:00, updated 2025-01-02 09:00:00",
        "     » record my trip",
        "     owner 5678-alive, lease until 2025-01-02 09:01:00",
        ""
      ].join("\n"))

      const json = yield* inProcess(["runs", "list", "--json", "--db", filename])
      const runs = JSON.parse(json.stdout) as ReadonlyArray<Cli.UnfinishedRun>
      // oldest first (then by id)
      expect(runs.map((r) => [r.runId, r.state])).toEqual([["r-abandoned", "abandoned"], ["r-paused", "paused"], [
        "r-running",
        "running"
      ]])
      expect(runs[1]).toEqual({
        runId: "r-paused",
        sessionId: "alice-1",
        workflowName: "expenses",
        userId: "alice",
        state: "paused",
        input: "record my trip",
        nextStep: 1,
        question: {
          path: ["record"],
          key: "1:Expense Assistant#1",
          payload: { tool: "record_expense", arguments: { amount: 240 } },
          pausedAt: at
        },
        startedAt: at,
        updatedAt: at
      })
      // the checkpoint (the data a run continues from) is not shown
      expect(json.stdout).not.toContain("private")
      expect(fs.readFileSync(filename).equals(bytes)).toBe(true)
      // runs continue needs the workflow's code
      const cont = yield* inProcess(["runs", "continue", "r-paused", "--db", filename])
      expect(cont).toMatchObject({ code: 1, stdout: "" })
      expect(cont.stderr).toContain("Workflow.continue")
    }))

  it.scoped(
    "runs list: a state column with a sleeping run's wake time and a waiting run's signal and timeout; --json",
    () =>
      Effect.gen(function*() {
        const { filename } = yield* sampleDb()
        const at = Date.UTC(2025, 0, 2, 9, 0, 0)
        const suspended = (runId: string, pause: SessionStore.Pause) =>
          activeRun(at, runId, {
            sessionId: runId,
            workflowName: "shipping",
            userId: undefined,
            status: "paused",
            input: "order",
            pause
          })
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          yield* store.startRun(
            suspended("r-sleep", {
              path: ["nap"],
              key: "0:nap",
              payload: null,
              pausedAt: at,
              kind: "sleep",
              wakeAt: at + 3_600_000
            })
          )
          yield* store.startRun(suspended("r-wait", {
            path: ["paid"],
            key: "0:paid",
            payload: null,
            pausedAt: at,
            kind: "signal",
            signal: "paid",
            wakeAt: at + 86_400_000,
            timeoutAt: at + 86_400_000
          }))
        }).pipe(Effect.provide(SqliteSessionStore.layer({ filename })))
        yield* TestClock.setTime(at)

        yield* runsListed(filename, `2 unfinished runs in ${filename}:`, [
          "  ☾ sleeping  run r-sleep  until 2025-01-02 10:00:00",
          "     workflow: shipping   session: r-sleep",
          "     started 2025-01-02 09:00:00, updated 2025-01-02 09:00:00",
          "     » order",
          "  ⧗ waiting   run r-wait  for signal paid, times out 2025-01-03 09:00:00",
          "     workflow: shipping   session: r-wait",
          "     started 2025-01-02 09:00:00, updated 2025-01-02 09:00:00",
          "     » order"
        ])

        const json = yield* inProcess(["runs", "list", "--json", "--db", filename])
        const runs = JSON.parse(json.stdout) as ReadonlyArray<Cli.UnfinishedRun>
        expect(runs.map((r) => [r.runId, r.state, r.wakeAt, r.signal, r.timeoutAt])).toEqual([
          ["r-sleep", "sleeping", at + 3_600_000, undefined, undefined],
          ["r-wait", "waiting", at + 86_400_000, "paid", at + 86_400_000]
        ])
      })
  )

  it.scoped(
    "runs list: queued runs after the started ones, in arrival " +
      "order, with their place in their session's queue; --json",
    () =>
      Effect.gen(function*() {
        const { filename } = yield* sampleDb()
        const at = Date.UTC(2025, 0, 2, 9, 0, 0)
        const queue = (store: SessionStore.Service, runId: string, sessionId: string, input: string) =>
          store.enqueueRun({
            runId,
            sessionId,
            workflowName: "expenses",
            input,
            owner: "1234-alive",
            leaseExpiresAt: at + 60_000,
            enqueuedAt: at
          })
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          // a tracked run holds the session's queue and runs: listed once, as running
          yield* queue(store, "r-running", "big", "record my trip")
          yield* store.takeQueueTurn("big", "r-running", { owner: "1234-alive", now: at, leaseExpiresAt: at + 60_000 })
          yield* store.startRun(
            activeRun(at, "r-running", {
              sessionId: "big",
              userId: undefined,
              owner: "1234-alive",
              leaseExpiresAt: at + 60_000
            })
          )
          yield* queue(store, "q-1", "big", "second")
          yield* queue(store, "q-solo", "solo", "alone")
          yield* queue(store, "q-2", "big", "third")
        }).pipe(Effect.provide(SqliteSessionStore.layer({ filename })))
        yield* TestClock.setTime(at)

        yield* runsListed(filename, `4 unfinished runs in ${filename}:`, [
          "  ▶ running   run r-running",
          "     workflow: expenses   session: big",
          "     started 2025-01-02 09:00:00, updated 2025-01-02 09:00:00",
          "     » record my trip",
          "     owner 1234-alive, lease until 2025-01-02 09:01:00",
          "  … queued    run q-1  behind 1 run in its session's queue",
          "     workflow: expenses   session: big",
          "     queued 2025-01-02 09:00:00",
          "     » second",
          "  … queued    run q-solo  first in its session's queue",
          "     workflow: expenses   session: solo",
          "     queued 2025-01-02 09:00:00",
          "     » alone",
          "  … queued    run q-2  behind 2 runs in its session's queue",
          "     workflow: expenses   session: big",
          "     queued 2025-01-02 09:00:00",
          "     » third"
        ])

        const json = yield* inProcess(["runs", "list", "--json", "--db", filename])
        const runs = JSON.parse(json.stdout) as ReadonlyArray<Cli.UnfinishedRun>
        expect(runs.map((r) => [r.runId, r.state, r.position])).toEqual([
          ["r-running", "running", undefined],
          ["q-1", "queued", 1],
          ["q-solo", "queued", 0],
          ["q-2", "queued", 2]
        ])
        expect(runs[1]).toEqual({
          runId: "q-1",
          sessionId: "big",
          workflowName: "expenses",
          state: "queued",
          input: "second",
          queuedAt: at,
          position: 1
        })
      })
  )

  it.scoped("schedules --workflow: each schedule's name, cron and next tick; --json the stored schedules", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      yield* Effect.flatMap(SessionStore.SessionStore, (store) =>
        Effect.all([
          store.putSchedule({
            workflowName: "shopping",
            name: "nightly",
            cron: "0 2 * * *",
            nextTick: Date.UTC(2025, 0, 2, 2),
            now: 0
          }),
          store.putSchedule({ workflowName: "other", name: "hourly", cron: "0 * * * *", nextTick: 0, now: 0 })
        ])).pipe(Effect.provide(SqliteSessionStore.layer({ filename })))
      const human = yield* inProcess(["schedules", "--workflow", "shopping", "--db", filename])
      expect(human, human.stderr).toEqual({
        code: 0,
        stdout: `1 schedule of 'shopping' in ${filename}:\n\n  nightly ` +
          `  cron: 0 2 * * *   next tick: 2025-01-02 02:00:00 UTC\n`,
        stderr: ""
      })
      const json = JSON.parse(
        (yield* inProcess(["schedules", "--workflow", "shopping", "--db", filename, "--json"])).stdout
      )
      expect(json).toEqual([{
        workflowName: "shopping",
        name: "nightly",
        cron: "0 2 * * *",
        nextTick: Date.UTC(2025, 0, 2, 2),
        updatedAt: 0
      }])
      expect((yield* inProcess(["schedules", "--workflow", "none", "--db", filename])).stdout).toBe(
        `No schedules of 'none' in ${filename}.\n`
      )
    }))

  it.scoped("runs list on a database without unfinished runs", () =>
    Effect.gen(function*() {
      const { filename } = yield* sampleDb()
      expect(yield* inProcess(["runs", "list", "--db", filename])).toEqual({
        code: 0,
        stdout: `No paused, sleeping, waiting, running, abandoned or queued runs in ${filename}.\n`,
        stderr: ""
      })
      expect(yield* inProcess(["runs", "list", "--db", filename, "--json"])).toMatchObject({ code: 0, stdout: "[]\n" })
    }))

  it.scoped("read-only commands never create or migrate anything: an unknown table is a clear error", () =>
    Effect.gen(function*() {
      const { dir, filename } = yield* sampleDb()
      const before = yield* tables(filename)
      const bytes = fs.readFileSync(filename)
      for (
        const argv of [["sessions", "list"], ["sessions", "show", "alice-1"], ["state", "alice-1"], ["runs", "list"], [
          "sessions",
          "rename",
          "alice-1",
          "x"
        ], ["sessions", "delete", "alice-1"]]
      ) {
        const result = yield* inProcess([...argv, "--db", filename, "--table", "typo"])
        expect(result).toEqual({
          code: 1,
          stdout: "",
          stderr:
            `error: there is no session table 'typo' in '${filename}' (its session tables: sessionflow_sessions)\n`
        })
      }
      expect(yield* tables(filename)).toEqual(before)
      expect(fs.readFileSync(filename).equals(bytes)).toBe(true)

      // a SQLite file of another application
      const other = path.join(dir, "other.db")
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE notes (body TEXT)`).pipe(
        Effect.provide(SqliteClient.layer({ filename: other }))
      )
      const listed = yield* inProcess(["sessions", "list", "--db", other])
      expect(listed.stderr).toBe(
        `error: there is no session table 'sessionflow_sessions' in '${other}' (it has no session tables)\n`
      )
      expect(yield* tables(other)).toEqual(["notes"])
    }))
})

describe("sessionflow: user errors", () => {
  it.scoped("every user error is one line on stderr and a non-zero exit (2 for usage); nothing on stdout", () =>
    Effect.gen(function*() {
      const { dir, filename } = yield* sampleDb()
      const text = path.join(dir, "notes.txt")
      fs.writeFileSync(text, "not a database\n")
      const missing = path.join(dir, "missing.db")
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, number, string]> = [
        [["sessions", "list"], 2, "error: sessions list: --db <file> or --url <url> is required"],
        [["sessions", "list", "--db"], 2, "error: --db needs a value"],
        [["sessions", "list", "--db", filename, "--verbose"], 2, "error: unknown option '--verbose'"],
        [["sessions", "frobnicate", "--db", filename], 2, "error: unknown sessions command 'frobnicate'"],
        [["export", "--db", filename], 2, "error: unknown command 'export'"],
        [[], 2, "error: which command?"],
        [["sessions", "show", "--db", filename], 2, "error: sessions show: missing argument <sessionId>"],
        [["sessions", "rename", "--db", filename, "big"], 2, "error: sessions rename: missing argument <name>"],
        [["sessions", "rename", "--db", filename, "big", " "], 2, "error: sessions rename: give the new name"],
        [["sessions", "list", "--db", "--json"], 2, "error: --db needs a value"],
        [["state", "s", "--db", filename, "--db", filename], 2, "error: --db is given twice"],
        [["sessions", "list", "--db", filename, "--jsno"], 2, "error: unknown option '--jsno' (did you mean --json?)"],
        [["sesions", "list", "--db", filename], 2, "error: unknown command 'sesions' (did you mean 'sessions'?)"],
        [["runs", "lst", "--db", filename], 2, "error: unknown runs command 'lst' (did you mean 'runs list'?)"],
        [
          ["sessions"],
          2,
          "error: sessions: which command? (list, show, rename or delete) (see: sessionflow sessions --help)"
        ],
        [["state", "--db", filename, "a", "b"], 2, "error: unexpected argument 'b' (see: sessionflow state --help)"],
        [["sessions", "show", "--db", filename, "nobody"], 1, "error: no session 'nobody' in"],
        [["sessions", "rename", "--db", filename, "nobody", "x"], 1, "error: no session 'nobody' in"],
        [["sessions", "list", "--db", missing], 1, `error: no database file '${missing}'`],
        [
          ["state", "--db", text, "x"],
          1,
          `error: cannot open the SQLite database '${text}' read-only: it is not a SQLite database`
        ],
        [
          ["sessions", "delete", "--db", dir, "x"],
          1,
          `error: cannot open the SQLite database '${dir}': it is a directory`
        ]
      ]
      for (const [argv, code, line] of cases) {
        const result = yield* inProcess(argv)
        expect({ argv, code: result.code, stdout: result.stdout }).toEqual({ argv, code, stdout: "" })
        const lines = result.stderr.split("\n")
        expect(lines, result.stderr).toHaveLength(2) // one line and its newline
        expect(lines[0]).toContain(line)
      }
      expect(fs.existsSync(missing)).toBe(false)
      expect(fs.readFileSync(text, "utf8")).toBe("not a database\n")
    }))

  it.effect("--help, -h and help print the declared commands; a command's --help its options", () =>
    Effect.gen(function*() {
      const [help, short, word] = yield* Effect.all([inProcess(["--help"]), inProcess(["-h"]), inProcess(["help"])])
      expect(help.code, help.stderr).toBe(0)
      expect(short).toEqual(help)
      expect(word).toEqual(help)
      for (
        const line of ["sessions list", "sessions show", "sessions rename", "sessions delete", "versions", "runs list"]
      ) {
        expect(help.stdout).toContain(`  - ${line} [--db file] [--url url] [--schema name] [--table name] [--json]`)
      }
      // captured output has no colours
      expect(help.stdout).not.toContain("\u001b[")
      const show = yield* inProcess(["sessions", "show", "--help"])
      expect(show.code).toBe(0)
      expect(show.stdout).toContain("<sessionId>")
      expect(show.stdout).toContain(Cli.databaseUrlVariable)
    }))
})
