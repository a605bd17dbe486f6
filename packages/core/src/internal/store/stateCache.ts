/**
 * The decoded-state cache of a store: per session, the state its last run in
 * this process committed, with the version that commit made, so that the next
 * run of the session skips reading, parsing and decoding the stored state
 * while the stored version is unchanged (the store checks the version at every
 * load, so a commit by another process or store is always seen).
 *
 * Only states whose decoded form is their JSON form are cached: the untyped
 * state and typed states whose Schema has no transformation (structs, tuples,
 * arrays, records, unions, literals, strings, numbers, booleans and their
 * refinements). An entry is a private copy: it is handed to one run and taken
 * out of the cache while that run runs, so a step that mutates the state in
 * place and then fails leaves nothing behind, and the state a run returns is
 * never the cached one.
 *
 * @internal
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"
import type * as SessionStore from "../../SessionStore.js"
import { copyJson, freezeJson, isPlainObject, sameJson } from "../json.js"

/** How many sessions a store keeps a state for (least recently run dropped first). @internal */
const capacity = 256

interface Entry {
  readonly version: number
  readonly createdAt: number
  /** the Schema the state was validated with (`undefined`: the untyped state) */
  readonly schema: unknown
  /**
   * whether `state` is frozen (a workflow with `persist: "changes"`): it is
   * then not a copy, but the committed state itself, which nobody can change
   */
  readonly frozen: boolean
  readonly state: unknown
}

const caches = new WeakMap<SessionStore.Service, Map<string, Entry>>()

const cacheOf = (store: SessionStore.Service): Map<string, Entry> => {
  let cache = caches.get(store)
  if (cache === undefined) {
    cache = new Map()
    caches.set(store, cache)
  }
  return cache
}

const plainCache = new WeakMap<AST.AST, boolean>()

/** Whether values of `ast` decode to themselves: JSON data with checks, no transformation. */
const isPlain = (ast: AST.AST): boolean => {
  const known = plainCache.get(ast)
  if (known !== undefined) return known
  const plain = computePlain(ast)
  plainCache.set(ast, plain)
  return plain
}

const computePlain = (ast: AST.AST): boolean => {
  switch (ast._tag) {
    case "StringKeyword":
    case "NumberKeyword":
    case "BooleanKeyword":
    case "TemplateLiteral":
    case "NeverKeyword":
    case "UndefinedKeyword":
      return true
    case "Literal":
      return ast.literal === null || ["string", "number", "boolean"].includes(typeof ast.literal)
    case "Enums":
      return ast.enums.every(([, value]) => typeof value === "string" || typeof value === "number")
    case "Refinement":
      return isPlain(ast.from)
    case "Union":
      return ast.types.every(isPlain)
    case "TupleType":
      return ast.elements.every((element) => isPlain(element.type)) && ast.rest.every((rest) => isPlain(rest.type))
    case "TypeLiteral":
      return ast.propertySignatures.every((ps) => typeof ps.name === "string" && isPlain(ps.type)) &&
        ast.indexSignatures.every((is) => is.parameter._tag === "StringKeyword" && isPlain(is.type))
    default:
      return false
  }
}

/**
 * Whether a workflow's states decode to their JSON form: the untyped state
 * (`undefined`), or a Schema without transformations.
 *
 * @internal
 */
export const isJsonState = (schema: { readonly ast: AST.AST } | undefined): boolean =>
  schema === undefined || isPlain(schema.ast)

/**
 * The cache key of a workflow's state: its Schema, `undefined` for the untyped
 * state; none when its states are not cached.
 *
 * @internal
 */
export const keyOf = (
  schema: { readonly ast: AST.AST } | undefined,
  frozen: boolean
): Key | undefined => (isJsonState(schema) ? { schema, frozen } : undefined)

/**
 * What a cached state must have been committed with to be used: the state's
 * Schema, and whether states are frozen.
 *
 * @internal
 */
export interface Key {
  readonly schema: unknown
  readonly frozen: boolean
}

/**
 * Takes a session's entry out of the cache (a run that fails leaves none).
 *
 * @internal
 */
export const take = (
  store: SessionStore.Service,
  sessionId: string,
  key: Key
): Entry | undefined => {
  const cache = cacheOf(store)
  const entry = cache.get(sessionId)
  if (entry === undefined) return undefined
  cache.delete(sessionId)
  return entry.schema === key.schema && entry.frozen === key.frozen ? entry : undefined
}

/**
 * Whether a load made with `entry`'s version found the session as the entry
 * left it (same version, same creation: not removed and made anew).
 *
 * @internal
 */
export const matches = (entry: Entry, stored: SessionStore.StoredSession): boolean =>
  stored.unchanged === true && stored.version === entry.version && stored.createdAt === entry.createdAt

/**
 * Keeps a committed (encoded, JSON) state: a private copy, or, with a frozen
 * key, the state itself, frozen (only its parts not frozen yet are visited).
 *
 * @internal
 */
export const put = (
  store: SessionStore.Service,
  sessionId: string,
  key: Key,
  committed: { readonly version: number; readonly createdAt: number; readonly state: unknown }
): void => {
  const cache = cacheOf(store)
  cache.delete(sessionId)
  if (key.frozen) freezeJson(committed.state)
  cache.set(sessionId, {
    ...committed,
    schema: key.schema,
    frozen: key.frozen,
    state: key.frozen ? committed.state : copyJson(committed.state)
  })
  if (cache.size > capacity) cache.delete(cache.keys().next().value!)
}

const encoders = new WeakMap<AST.AST, (u: unknown) => Either.Either<unknown, ParseResult.ParseIssue>>()

const encoderOf = (ast: AST.AST) => {
  let encode = encoders.get(ast)
  if (encode === undefined) {
    encode = ParseResult.encodeUnknownEither(Schema.make(ast))
    encoders.set(ast, encode)
  }
  return encode
}

/** a part that is not encoded here: the whole state is then encoded as usual */
const fallback: unique symbol = Symbol("fallback")

const encodeChanged = (ast: AST.AST, base: unknown, next: unknown): unknown => {
  // the base is a valid encoded state: an equal part encodes to itself
  if (sameJson(base, next)) return next
  if (ast._tag === "TypeLiteral" && ast.indexSignatures.length === 0 && isPlainObject(base) && isPlainObject(next)) {
    const out: Record<string, unknown> = {}
    let known = 0
    for (const ps of ast.propertySignatures) {
      const name = ps.name as string
      if (!Object.hasOwn(next, name)) {
        if (!ps.isOptional) return fallback
        continue
      }
      known++
      const value = next[name]
      if (value === undefined) return fallback
      const encoded = Object.hasOwn(base, name)
        ? encodeChanged(ps.type, base[name], value)
        : encodeWhole(ps.type, value)
      if (encoded === fallback) return fallback
      out[name] = encoded
    }
    // a key the Schema does not know: the encoding drops it, as usual
    return known === Object.keys(next).length ? out : fallback
  }
  if (
    ast._tag === "TupleType" && ast.elements.length === 0 && ast.rest.length === 1 &&
    Array.isArray(base) && Array.isArray(next)
  ) {
    const item = ast.rest[0]!.type
    // a copy is made only once an item encodes to another value (e.g. an
    // object the encoding rebuilds): an array whose items are their own
    // encoding (strings, numbers, unchanged items) is its own encoding
    let out: Array<unknown> | undefined
    for (let i = 0; i < next.length; i++) {
      const value = next[i]
      // the common case, an item the base has as it is, takes no call
      if (i < base.length && Object.is(value, base[i])) {
        if (out !== undefined) out[i] = value
        continue
      }
      const encoded = i < base.length ? encodeChanged(item, base[i], value) : encodeWhole(item, value)
      if (encoded === fallback) return fallback
      if (out === undefined && !Object.is(encoded, value)) out = next.slice(0, i)
      if (out !== undefined) out[i] = encoded
    }
    return out ?? next
  }
  return encodeWhole(ast, next)
}

const encodeWhole = (ast: AST.AST, value: unknown): unknown => {
  const encoded = encoderOf(ast)(value)
  return Either.isRight(encoded) ? encoded.right : fallback
}

/**
 * Encodes the `next` state of a plain Schema, starting from `base`, a valid
 * encoded state it was made from: the parts equal to the base's are taken as
 * they are, only the others are encoded (so checked); none when the state is
 * to be encoded whole (a part fails, or the Schema drops something).
 *
 * @internal
 */
export const encodeFrom = (
  schema: { readonly ast: AST.AST },
  base: unknown,
  next: unknown
): { readonly encoded: unknown } | undefined => {
  const encoded = encodeChanged(schema.ast, base, next)
  return encoded === fallback ? undefined : { encoded }
}
