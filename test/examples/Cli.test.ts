import { describe, expect, it } from "@effect/vitest"
import { Cli, GreetingCondition } from "@sessionflow/examples"
import { Effect, Option } from "effect"
import { captured, tempDb } from "./utils.js"

describe("sessionflow CLI", () => {
  it.effect("list shows the eight scenarios with a one-line description", () =>
    Effect.gen(function*() {
      const { stdout } = yield* captured(Cli.run(["list"]))
      const rows = stdout.split("\n").filter((l) => /^\s+\d\. /.test(l))
      expect(rows.map((r) => r.trim().split(/\s+/)[1])).toEqual([
        "shopping-list",
        "job-tracker",
        "custom-executors",
        "condition",
        "routers",
        "team",
        "session-naming",
        "approval"
      ])
      for (const row of rows) expect(row.trim().split(/\s{2,}/)[1]!.length).toBeGreaterThan(20)
    }))

  it("finds scenarios by name, alias, agno cookbook name or number", () => {
    const name = (s: string) => Option.map(Cli.findScenario(s), (x) => x.name)
    expect(name("state_in_router")).toEqual(Option.some("routers"))
    expect(name("job_application_tracker.py")).toEqual(Option.some("job-tracker"))
    expect(name("Shopping_List")).toEqual(Option.some("shopping-list"))
    expect(name("3")).toEqual(Option.some("custom-executors"))
    expect(name("greeting")).toEqual(Option.some("condition"))
    expect(name("8")).toEqual(Option.some("approval"))
    expect(name("expenses")).toEqual(Option.some("approval"))
    expect(name("nope")).toEqual(Option.none())
  })

  it.effect(
    "declares its commands with @effect/cli: a mistake is a UsageError of one line, with \"did you mean\"",
    () =>
      Effect.gen(function*() {
        const mistake = (argv: ReadonlyArray<string>) =>
          Effect.map(Effect.flip(captured(Cli.run(argv))), (error) => {
            expect(error).toBeInstanceOf(Cli.UsageError)
            return (error as Cli.UsageError).message
          })
        expect(yield* mistake(["--verbose"])).toBe("unknown option '--verbose'")
        expect(yield* mistake(["run", "team", "--db"])).toBe("--db needs a value")
        expect(yield* mistake(["run", "team", "--jsno"])).toBe("unknown option '--jsno' (did you mean --json?)")
        expect(yield* mistake(["rn", "team"])).toBe("unknown command 'rn' (did you mean 'run'?)")
        expect(yield* mistake(["team"])).toBe("unknown command 'team' (did you mean 'run team'?)")
        expect(yield* mistake(["runs", "contineu", "r1"])).toBe(
          "unknown runs command 'contineu' (did you mean 'runs continue'?)"
        )
        expect(yield* mistake(["run"])).toBe("run: missing argument <scenario>")
        expect(yield* mistake(["serve", "--approve"])).toBe("serve: no option --approve here")
        expect(yield* mistake(["run", "nope"])).toContain("unknown scenario 'nope'")
        expect(yield* mistake(["sessions", "list"])).toContain("--db <file> or --url <url> is required")
        expect(yield* mistake(["run", "team", "--db", "a.db", "--url", "postgres://localhost/app"])).toBe(
          "give --db <file> or --url <url>, not both"
        )
        // the database options are the command's: one that reads no database refuses them, another
        // option after them does not take them away from the command
        expect(yield* mistake(["list", "--db", "x.db"])).toBe("list: no option --db here")
        expect(yield* mistake(["--url", "postgres://localhost/app", "list"])).toBe("list: no option --url here")
        expect(yield* mistake(["help", "--db", "x.db"])).toBe("help: no option --db here")
        expect(yield* mistake(["sessions", "list", "--offline", "--db", "x.db"])).toBe(
          "sessions list: no option --offline here"
        )
        expect(yield* mistake(["--db", "a.db", "runs", "list", "--url", "postgres://localhost/app"])).toBe(
          "give --db <file> or --url <url>, not both"
        )
        // --help prints the declared commands
        const help = yield* captured(Cli.run(["--help"]))
        for (const command of ["list", "run", "serve", "sessions list", "state", "runs list", "runs continue"]) {
          expect(help.stdout).toContain(`  - ${command} `)
        }
      })
  )

  it.scoped("sessions list, show, rename and delete what a scenario stored", () =>
    Effect.gen(function*() {
      const db = yield* tempDb()
      yield* captured(GreetingCondition.main({ db, model: GreetingCondition.offlineModel }))

      const listed = yield* captured(Cli.run(["sessions", "list", "--db", db]))
      expect(listed.stdout).toContain("1 session in")
      expect(listed.stdout).toContain("user-123")
      expect(listed.stdout).toContain("workflow: Conditional Greeting Workflow")

      const shown = yield* captured(Cli.run(["sessions", "show", "--db", db, "user-123"]))
      expect(shown.stdout).toContain("Session user-123")
      expect(shown.stdout).toContain(`"has_been_greeted": true`)
      expect(shown.stdout).toContain(`"greeting_count": 1`)
      expect(shown.stdout).toContain("Runs (2):")
      expect(shown.stdout).toContain("» Hi, can you help me with something?")
      expect(shown.stdout).toContain("» Tell me a joke")

      yield* captured(Cli.run(["sessions", "rename", "--db", db, "user-123", "Greeting", "demo"]))
      const renamed = yield* captured(Cli.run(["sessions", "show", "--db", db, "--json", "user-123"]))
      const session = JSON.parse(renamed.stdout)
      expect(session.name).toBe("Greeting demo")
      expect(session.runs.map((r: { status: string }) => r.status)).toEqual(["completed", "completed"])

      // --db before the command is the command's too
      const before = yield* captured(Cli.run(["--db", db, "sessions", "list"]))
      expect(before.stdout).toContain("1 session in")
      expect(before.stdout).toContain("user-123")
      expect((yield* captured(Cli.run(["--db", db, "state", "user-123"]))).stdout).toContain(`"greeting_count": 1`)

      const deleted = yield* captured(Cli.run(["sessions", "delete", "--db", db, "user-123"]))
      expect(deleted.stdout).toContain("Deleted session user-123")
      const gone = yield* Effect.flip(captured(Cli.run(["sessions", "show", "--db", db, "user-123"])))
      expect(gone).toBeInstanceOf(Cli.CommandError)
      expect((gone as Cli.CommandError).message).toContain("no session 'user-123'")
    }))
})
