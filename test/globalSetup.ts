/**
 * Finds the PostgreSQL the tests run against, once per `vitest` run (see
 * `postgres.ts`), and puts its URL in `SESSIONFLOW_TEST_DATABASE_URL` for the
 * test workers and the processes they start; an embedded server is stopped
 * and removed at the end.
 */
import type { TestProject } from "vitest/node"
import { findPostgres, variable } from "./postgres.js"

/** What the tests of this run (`vitest --mode`) need, on the first screen of `npm test` and `npm run test:slow`. */
const needs = (mode: string, postgres: string): string => {
  const tier = mode === "slow"
    ? "the tests that start processes, pack the packages and drive a browser: they need Node, npm (npm " +
      "install of the tarballs reads the peers from the registry or npm's cache) and Chromium for the " +
      "browser tests (skipped without it)"
    : mode === "all"
    ? "every test: Node, npm (the packaging test installs from the registry or npm's cache) and Chromium " +
      "for the browser tests (skipped without it)"
    : "the in-process tests: they need Node alone (npm run test:slow runs those that start processes, pack " +
      "the packages or drive a browser)"
  return `sessionflow tests, ${tier}. PostgreSQL: ${postgres}.`
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const found = await findPostgres()
  console.log(needs(
    project.vite.config.mode,
    found.how === "given"
      ? `the server in ${variable}`
      : found.how === "local"
      ? "the local server on 127.0.0.1:5432 (database test, user postgres)"
      : `an embedded server, started in ${found.millis} ms (no ${variable}, no local server on 127.0.0.1:5432)`
  ))
  return found.stop
}
