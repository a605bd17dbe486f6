import { describe, expect, it } from "@effect/vitest"
import * as Scenario from "../../packages/examples/src/Scenario.js"

describe("the commands the examples print", () => {
  it("name a PostgreSQL database by its URL without the password, and its schema when one was used", () => {
    const database = { _tag: "Postgres", url: "postgres://app:secret@db.internal:5432/app" } as const
    expect(Scenario.databaseOption(database, "team_a")).toBe(
      "--url postgres://app@db.internal:5432/app --schema team_a"
    )
    expect(Scenario.databaseOption(database, undefined)).toBe("--url postgres://app@db.internal:5432/app")
    expect(Scenario.databaseOption({ _tag: "Sqlite", filename: "tmp/a.db" }, "team_a")).toBe("--db tmp/a.db")
  })

  it("continue a paused run on the same database and schema", () => {
    expect(
      Scenario.continueHint(
        "r1",
        "0:approve",
        Scenario.databaseOption({ _tag: "Postgres", url: "postgres://db/app" }, "s")
      )
    ).toBe(
      "npm start -- runs continue r1 --pause '0:approve' --approve --url postgres://db/app --schema s" +
        "   (or --reject [--reason <text>])"
    )
  })
})
