/**
 * The kept versions of sessions (see `SessionStore.HistoryOptions`): one row
 * per version in the versions table, holding either the whole state
 * (`state`) or the changes from the version before (`changes`), the run that
 * made it, when, and the top-level keys it changed (`changed`, JSON). A
 * version's state is its last whole state before it with the changes after
 * it applied. Rows older than the versions a session keeps stay only while a
 * kept version is built on them, unlisted (`listed = 0`); so dropping
 * versions by count is one `DELETE` and one `UPDATE`, and never rewrites a row.
 *
 * Every statement here runs inside the caller's transaction.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { SessionStore, WorkflowError, type WorkflowEvent } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ParseError } from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as rows from "./rows.js"

const ChainRow = Schema.Struct({
  version: rows.Integer,
  state: Schema.NullOr(Schema.String),
  changes: Schema.NullOr(Schema.String),
  listed: rows.Integer
})
const decodeChain = Schema.decodeUnknown(Schema.Array(ChainRow))

/** A row since the session's last whole state, with what dropping the versions past `keep` will have to do. */
const SinceRow = Schema.Struct({
  ...ChainRow.fields,
  /** the session's oldest row */
  first: rows.Integer,
  /** its last whole state at or before the oldest version kept after this commit, if any */
  retain_base: Schema.NullOr(rows.Integer),
  /** whether a row before the oldest version kept after this commit is still listed */
  unlist: rows.Integer
})
const decodeSince = Schema.decodeUnknown(Schema.Array(SinceRow))

/** The text of a row: its whole state, or its changes. */
const textOf = (row: typeof ChainRow.Type): string => row.state ?? row.changes ?? ""

/** The top-level keys a session's first version sets: all of its state's. */
const firstChanged = (state: unknown) => SessionStore.changedKeys(SessionStore.diffStates({}, state))

/**
 * The `changed` column of a version: its top-level keys as JSON, when known.
 *
 * @internal
 */
export const changedText = (changed: ReadonlyArray<string> | undefined) =>
  changed === undefined ? null : JSON.stringify(changed)

/**
 * The state of a session's latest kept version, as a commit of this store
 * built it (a private value: parsed from the stored text, with the
 * changes applied as parsed from theirs), and the texts of the rows it is
 * built from (its last whole state, then the changes after it). The next
 * commit reads those rows anyway (for their sizes); when they are still the
 * same texts, it builds on this state instead of parsing and folding them.
 */
interface Latest {
  readonly version: number
  readonly texts: ReadonlyArray<string>
  /** the characters of those texts (what the entry weighs, roughly) */
  readonly weight: number
  readonly state: unknown
}

/** How many sessions' latest states a store keeps at most, and their weight in characters. */
const latestCapacity = 256
const latestMaxWeight = 32 * 1024 * 1024

const InfoRow = Schema.Struct({
  version: rows.Integer,
  run_id: Schema.NullOr(Schema.String),
  committed_at: rows.Integer,
  changed: Schema.NullOr(Schema.String)
})
const decodeInfos = Schema.decodeUnknown(Schema.Array(InfoRow))

const corrupt = (sessionId: string, description: string, cause?: unknown) =>
  new WorkflowError.StateDecodeError({
    sessionId,
    reason: "corrupt",
    description,
    ...(cause === undefined ? {} : { cause })
  })

const parseJson = <A>(sessionId: string, what: string, text: string) =>
  Effect.try({
    try: () => JSON.parse(text) as A,
    catch: (cause) => corrupt(sessionId, `the kept ${what} is not valid JSON`, cause)
  })

/** The state a chain of rows (a whole state, then changes, version after version) ends at. */
const fold = (sessionId: string, chain: ReadonlyArray<typeof ChainRow.Type>) =>
  Effect.gen(function*() {
    const [base, ...rest] = chain
    if (base === undefined || base.state === null) {
      return yield* corrupt(sessionId, "a kept version has no whole state before it")
    }
    let state = yield* parseJson<unknown>(sessionId, "state", base.state)
    for (const row of rest) {
      if (row.state !== null) {
        state = yield* parseJson<unknown>(sessionId, "state", row.state)
      } else if (row.changes !== null) {
        const changes = yield* parseJson<ReadonlyArray<WorkflowEvent.StateChange>>(sessionId, "changes", row.changes)
        state = yield* SessionStore.applyChanges(sessionId, state, changes)
      }
    }
    return state
  })

/** What a commit tells the history of the version it made. */
export interface NewVersion {
  readonly sessionId: string
  readonly version: number
  readonly runId: string | null
  readonly committedAt: number
  /** the versions to keep (0: none, `Infinity`: all) */
  readonly keep: number
  /** the committed state and its JSON text (computed when needed) */
  readonly state: unknown
  readonly stateText: Effect.Effect<string, WorkflowError.SessionStoreError>
  /** the commit's changes and their JSON text, when it sent them */
  readonly changes: ReadonlyArray<WorkflowEvent.StateChange> | undefined
  readonly changesText: string | null
}

/** @internal */
export const make = (sql: SqlClient.SqlClient, table: string) => {
  const versions = sql(table)

  const latest = new Map<string, Latest>()
  let latestWeight = 0
  /** The latest state known of a session, taken out (a commit builds on it in place). */
  const take = (sessionId: string): Latest | undefined => {
    const found = latest.get(sessionId)
    if (found !== undefined) {
      latest.delete(sessionId)
      latestWeight -= found.weight
    }
    return found
  }
  const remember = (sessionId: string, entry: Latest) => {
    take(sessionId)
    if (entry.weight > latestMaxWeight) return
    latest.set(sessionId, entry)
    latestWeight += entry.weight
    // the least recently committed sessions go first
    for (const [id] of latest) {
      if (latest.size <= latestCapacity && latestWeight <= latestMaxWeight) break
      take(id)
    }
  }

  /** The rows a version's state is built from (its last whole state up to it), oldest first. */
  const chainTo = (sessionId: string, version: number) =>
    Effect.flatMap(
      sql`SELECT version, state, changes, listed FROM ${versions}
WHERE session_id = ${sessionId} AND version <= ${version} AND version >= COALESCE(
  (SELECT MAX(version) FROM ${versions}
    WHERE session_id = ${sessionId} AND version <= ${version} AND state IS NOT NULL),
  ${version + 1})
ORDER BY version`,
      decodeChain
    )

  /** Past the versions a session reaches: PostgreSQL's `INTEGER` (the queries read the version after one). */
  const maxVersion = 2_147_483_647

  /** The state at a kept version (listed, and built on contiguous rows), else none. */
  const stateAt = (sessionId: string, version: number) =>
    Effect.gen(function*() {
      // PostgreSQL's version column is a 4-byte integer: a version past it was never kept (and would fail the query)
      if (!Number.isSafeInteger(version) || version < 1 || version >= maxVersion) return Option.none<unknown>()
      const chain = yield* chainTo(sessionId, version)
      const last = chain.at(-1)
      if (last === undefined || last.version !== version || last.listed !== 1) return Option.none<unknown>()
      if (chain.length !== version - chain[0]!.version + 1) return Option.none<unknown>()
      return Option.some(yield* fold(sessionId, chain))
    })

  const list = (sessionId: string) =>
    Effect.flatMap(
      Effect.flatMap(
        sql`SELECT version, run_id, committed_at, changed FROM ${versions}
WHERE session_id = ${sessionId} AND listed = 1 ORDER BY version`,
        decodeInfos
      ),
      (found) =>
        Effect.forEach(found, (row) =>
          Effect.map(
            row.changed === null
              ? Effect.succeed(undefined)
              : Effect.orElseSucceed(parseJson<ReadonlyArray<string>>(sessionId, "summary", row.changed), () =>
                undefined),
            (changed): SessionStore.VersionInfo => ({
              version: row.version,
              ...(row.run_id === null ? {} : { runId: row.run_id }),
              committedAt: row.committed_at,
              ...(changed === undefined ? {} : { changed })
            })
          ))
    )

  const clear = (sessionId: string) =>
    Effect.suspend(() => {
      take(sessionId)
      return sql`DELETE FROM ${versions} WHERE session_id = ${sessionId}`
    })

  /** Drops the versions older than the last `keep` (the rows later ones are built on stay, unlisted). */
  const dropBefore = (sessionId: string, oldest: number) =>
    sql`DELETE FROM ${versions} WHERE session_id = ${sessionId} AND version < COALESCE(
  (SELECT MAX(version) FROM ${versions} WHERE session_id = ${sessionId} AND version <= ${oldest} AND state IS NOT NULL),
  ${oldest})`
  const unlistBefore = (sessionId: string, oldest: number) =>
    sql`UPDATE ${versions} SET listed = 0 WHERE session_id = ${sessionId} AND version < ${oldest} AND listed = 1`
  const retain = (sessionId: string, latest: number, keep: number) =>
    Effect.gen(function*() {
      const oldest = latest - keep + 1
      if (oldest <= 1) return
      yield* dropBefore(sessionId, oldest)
      yield* unlistBefore(sessionId, oldest)
    })

  const insert = (
    entry: NewVersion,
    /** `state` a text, or (`Fragment`) a column of `written` */
    body: { readonly state: string | Fragment | null; readonly changes: string | null },
    changed: ReadonlyArray<string> | undefined
  ) =>
    sql`INSERT INTO ${versions} (session_id, version, run_id, committed_at, changed, state, changes, listed)
VALUES (${entry.sessionId}, ${entry.version}, ${entry.runId}, ${entry.committedAt},
  ${changedText(changed)}, ${body.state}, ${body.changes}, 1)
ON CONFLICT (session_id, version) DO NOTHING`

  /**
   * PostgreSQL's insert of the version a one-statement commit makes, at the
   * version of its `written` CTE (so only with the write).
   */
  const insertFromWritten = (
    entry: { readonly sessionId: string; readonly runId: string | null; readonly committedAt: number },
    /** `state` a text, or (`Fragment`) a column of `written` */
    body: { readonly state: string | Fragment | null; readonly changes: string | null },
    changed: ReadonlyArray<string> | undefined
  ) =>
    sql`INSERT INTO ${versions}
  (session_id, version, run_id, committed_at, changed, state, changes, listed)
SELECT ${entry.sessionId}::text, version, ${entry.runId}::text, ${entry.committedAt}::bigint,
  ${changedText(changed)}::text, ${body.state}::text, ${body.changes}::text, 1 FROM written`

  /**
   * Keeps the version a commit made: as the changes from the version before
   * when that one is kept and the changes stay light (see
   * `SessionStore.versionNeedsWholeState`), else as the whole state; then
   * drops what is past `keep`. A commit that sent its whole state is compared
   * with the version before for its changes: the state this store built for
   * it at its own last commit when that is still the latest row, else the
   * state read back from these rows.
   *
   * Returns what to run once the caller's transaction has committed (it
   * remembers the state of the version made), or undefined.
   */
  const keep = (
    entry: NewVersion
  ): Effect.Effect<(() => void) | undefined, SqlError | ParseError | WorkflowError.SessionStoreError> =>
    Effect.gen(function*() {
      const known = take(entry.sessionId)
      if (entry.keep <= 0) {
        yield* clear(entry.sessionId)
        return undefined
      }
      if (entry.version === 1) {
        yield* insert(entry, { state: yield* entry.stateText, changes: null }, firstChanged(entry.state))
        return undefined
      }
      const oldest = entry.keep === Infinity ? 1 : entry.version - entry.keep + 1
      // the rows since the last whole state, and what dropping the versions past `keep`
      // will have to do
      const since = yield* Effect.flatMap(
        sql`SELECT version, state, changes, listed,
  (SELECT MIN(version) FROM ${versions} WHERE session_id = ${entry.sessionId}) AS first,
  (SELECT MAX(version) FROM ${versions} WHERE session_id = ${entry.sessionId} AND version <= ${oldest}
    AND state IS NOT NULL) AS retain_base,
  CASE WHEN EXISTS (SELECT 1 FROM ${versions} WHERE session_id = ${entry.sessionId} AND version < ${oldest}
    AND listed = 1) THEN 1 ELSE 0 END AS unlist
FROM ${versions}
WHERE session_id = ${entry.sessionId} AND version >= COALESCE(
  (SELECT MAX(version) FROM ${versions} WHERE session_id = ${entry.sessionId} AND state IS NOT NULL), ${entry.version})
ORDER BY version`,
        decodeSince
      )
      const texts = since.map(textOf)
      const last = since.at(-1)
      const previousKept = since.length > 0 && since[0]!.state !== null && last!.version === entry.version - 1 &&
        since.length === entry.version - since[0]!.version
      const named = entry.changes !== undefined && entry.changes.every((change) => change.path.length > 0)
        ? entry.changes
        : undefined
      let changes = named
      let changesText = named === undefined ? null : entry.changesText
      let previous: Option.Option<unknown> = Option.none()
      if (changes === undefined && previousKept) {
        previous = known !== undefined && known.version === last!.version && known.texts.length === texts.length &&
            known.texts.every((text, i) => text === texts[i])
          ? Option.some(known.state)
          // a kept version that does not read back is left behind: this one is whole
          : yield* Effect.option(fold(entry.sessionId, since))
        if (Option.isSome(previous)) {
          changes = SessionStore.diffStates(previous.value, entry.state)
          changesText = JSON.stringify(changes)
        }
      }
      const changed = changes === undefined ? undefined : SessionStore.changedKeys(changes)
      const sizes = texts.map((text) => text.length)
      const pendingSize = sizes.slice(1).reduce((sum, size) => sum + size, 0)
      const whole = !previousKept || changes === undefined || changesText === null ||
        SessionStore.versionNeedsWholeState({
          keep: entry.keep,
          baseSize: sizes[0]!,
          pendingSize,
          pendingCount: sizes.length - 1,
          size: changesText.length,
          changes
        })
      const body = whole ? { state: yield* entry.stateText, changes: null } : { state: null, changes: changesText }
      yield* insert(entry, body, changed)
      if (entry.keep !== Infinity && oldest > 1) {
        if (last === undefined) yield* retain(entry.sessionId, entry.version, entry.keep)
        else {
          // what `retain` would do, done only where there is something to do
          const base = whole && entry.version <= oldest ? entry.version : last.retain_base ?? oldest
          if (last.first < base) yield* dropBefore(entry.sessionId, oldest)
          if (last.unlist === 1) yield* unlistBefore(entry.sessionId, oldest)
        }
      }
      if (Option.isNone(previous) || changesText === null) return undefined
      // the state of the version made, for the next commit: the previous one with
      // the changes applied as they read back (so nothing of the caller's is kept)
      const next = yield* Effect.option(
        SessionStore.applyChanges(
          entry.sessionId,
          previous.value,
          JSON.parse(changesText) as ReadonlyArray<WorkflowEvent.StateChange>
        )
      )
      if (Option.isNone(next)) return undefined
      const madeTexts = body.state === null ? [...texts, changesText] : [body.state]
      const made: Latest = {
        version: entry.version,
        texts: madeTexts,
        weight: madeTexts.reduce((sum, text) => sum + text.length, 0),
        state: next.value
      }
      return () => remember(entry.sessionId, made)
    })

  /** Copies the rows a session's versions up to `version` are built on to another session. */
  const copy = (from: string, to: string, version: number) =>
    Effect.suspend(() => {
      take(to)
      return sql`INSERT INTO ${versions} (session_id, version, run_id, committed_at, changed, state, changes, listed)
SELECT ${to}, version, run_id, committed_at, changed, state, changes, listed FROM ${versions}
WHERE session_id = ${from} AND version <= ${version}`
    })

  /**
   * PostgreSQL's one-statement commit of changes (see the store's
   * `commitInOneStatement`), keeping the version they make: `before`, a CTE
   * reading the rows since the last whole state; `condition`, which the
   * session's write adds to its checks — the version before is kept, on
   * contiguous rows, and these changes stay light (`SessionStore.versionNeedsWholeState`
   * says no); else the statement writes nothing, and the transactional commit
   * keeps the version as a whole state; `after`, the CTEs that insert the row
   * and drop what is past `keep`, run only with the write (`written`). A
   * commit that keeps no versions drops those kept before.
   */
  const inOneStatement = (entry: {
    readonly sessionId: string
    readonly expectedVersion: number
    readonly runId: string | null
    readonly committedAt: number
    readonly keep: number
    readonly changes: ReadonlyArray<WorkflowEvent.StateChange>
    readonly changesText: string
  }) => {
    const id = entry.sessionId
    const done = sql`EXISTS (SELECT 1 FROM written)`
    if (entry.keep <= 0) {
      return {
        before: [],
        condition: sql`TRUE`,
        after: [sql`cleared AS (DELETE FROM ${versions} WHERE session_id = ${id} AND ${done})`]
      }
    }
    const chain = sql`chain AS (
  SELECT b.base AS base, COUNT(v.version) AS n, MAX(v.version) AS last,
    COALESCE(SUM(CASE WHEN v.version = b.base THEN length(v.state) END), 0) AS base_size,
    COALESCE(SUM(CASE WHEN v.version > b.base THEN length(COALESCE(v.state, v.changes, '')) END), 0) AS pending
  FROM (SELECT MAX(version) AS base FROM ${versions} WHERE session_id = ${id} AND state IS NOT NULL) b
  JOIN ${versions} v ON v.session_id = ${id} AND v.version >= b.base
  GROUP BY b.base
)`
    const light = entry.keep === Infinity ? sql`TRUE` : sql`n < ${entry.keep}`
    const condition = sql`EXISTS (SELECT 1 FROM chain WHERE last = ${entry.expectedVersion}
  AND n = ${entry.expectedVersion} - base + 1 AND ${light}
  AND pending + ${entry.changesText.length} <= GREATEST(base_size, 256))`
    const changed = SessionStore.changedKeys(entry.changes)
    const inserted = sql`versioned AS (${
      insertFromWritten(entry, { state: null, changes: entry.changesText }, changed)
    })`
    const oldest = entry.expectedVersion + 2 - entry.keep
    if (entry.keep === Infinity || oldest <= 1) return { before: [chain], condition, after: [inserted] }
    // the rows before the last whole state at or below the oldest kept version go; those
    // from it to the oldest kept one stay, unlisted (two CTEs never touch the same row)
    const base = sql`(SELECT COALESCE(MAX(version), ${oldest}) FROM ${versions}
  WHERE session_id = ${id} AND version <= ${oldest} AND state IS NOT NULL)`
    return {
      before: [chain],
      condition,
      after: [
        inserted,
        sql`pruned AS (DELETE FROM ${versions} WHERE session_id = ${id} AND version < ${base} AND ${done})`,
        sql`unlisted AS (UPDATE ${versions} SET listed = 0
  WHERE session_id = ${id} AND version < ${oldest} AND listed = 1 AND version >= ${base} AND ${done})`
      ]
    }
  }

  /**
   * A new session's first commit in one statement (the store's
   * `commitInOneStatement` on PostgreSQL, `firstCommitInOneStatement` on
   * SQLite), keeping version 1 as a whole state (as {@link keep} does): the
   * top-level keys that version changed, or undefined for a commit that keeps
   * no versions (a new session has none to drop).
   */
  const firstVersion = (entry: { readonly sessionId: string; readonly keep: number; readonly state: unknown }) => {
    take(entry.sessionId)
    return entry.keep <= 0 ? undefined : { changed: firstChanged(entry.state) }
  }

  /**
   * PostgreSQL's one-statement commit of a new session's whole state (see
   * {@link firstVersion}), in the shape of {@link inOneStatement}'s: no CTE
   * before, no condition, and after the write the CTE inserting its row, if
   * it keeps one.
   */
  const firstInOneStatement = (entry: {
    readonly sessionId: string
    readonly runId: string | null
    readonly committedAt: number
    readonly keep: number
    readonly state: unknown
  }) => {
    const first = firstVersion(entry)
    const after = first === undefined ? [] : [
      sql`versioned AS (${
        // the state as the session's row took it, so that its text is sent once
        insertFromWritten(
          entry,
          { state: sql.literal("state"), changes: null },
          first.changed
        )} ON CONFLICT (session_id, version) DO NOTHING)`
    ]
    return { before: [], condition: sql`TRUE`, after }
  }

  return { stateAt, list, keep, clear, copy, inOneStatement, firstInOneStatement, firstVersion }
}

/** The `history` of a store's option, checked. */
export const checkHistory = (history: SessionStore.HistoryOptions | undefined) =>
  history === undefined || history.keep === "none" || history.keep === "all" ||
    (typeof history.keep === "number" && !Number.isNaN(history.keep))
    ? Effect.void
    : Effect.fail(
      new WorkflowError.SessionStoreError({
        method: "make",
        description: "history.keep is \"none\", \"all\" or a number"
      })
    )
