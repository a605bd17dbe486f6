/**
 * The store a fixture process opens, named on its command line: `pg:<schema>`
 * for the local PostgreSQL (in that schema), anything else a SQLite file.
 */
import { PgSessionStore } from "@sessionflow/store-pg"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { testUrl } from "./store-pg/pg.js"

export const storeLayer = (spec: string) =>
  spec.startsWith("pg:")
    ? PgSessionStore.layer({ url: testUrl, schema: spec.slice("pg:".length) })
    : SqliteSessionStore.layer({ filename: spec })
