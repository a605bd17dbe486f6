import type * as WorkflowEvent from "../WorkflowEvent.js"

/**
 * How deep a value the JSON functions walk: a value nested deeper is not
 * stored (`jsonProblem` names it), so that no walk overflows the stack.
 *
 * @internal
 */
const maxJsonDepth = 1000

/** @internal */
export const isPlainObject = (u: unknown): u is Record<string, unknown> => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) return false
  const proto = Object.getPrototypeOf(u)
  return proto === Object.prototype || proto === null
}

/**
 * Sets `object[key]` as an own property, also for the key `"__proto__"`
 * (which an assignment would take as the object's prototype).
 *
 * @internal
 */
const setOwn = (object: Record<string | number, unknown>, key: string | number, value: unknown): void => {
  if (key === "__proto__") {
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true })
  } else {
    object[key] = value
  }
}

/**
 * Deep-merges `patch` over `base`: plain objects merge key by key, arrays and
 * scalars in `patch` replace. Neither argument is mutated.
 *
 * @internal
 */
export const deepMerge = (base: unknown, patch: unknown, depth = 0): unknown => {
  // deeper than a stored value may be, the patch replaces (and is refused when stored)
  if (!isPlainObject(base) || !isPlainObject(patch) || depth >= maxJsonDepth) return patch
  const out: Record<string, unknown> = { ...base }
  for (const key of Object.keys(patch)) {
    const value = patch[key]
    if (value === undefined) continue
    setOwn(out, key, Object.hasOwn(base, key) ? deepMerge(base[key], value, depth + 1) : value)
  }
  return out
}

/**
 * A deep copy: of JSON as {@link copyIfJson} makes it (a walk in JavaScript,
 * many times cheaper than `structuredClone`, which serializes the value and
 * reads it back), of anything else with `structuredClone`; a value too deep
 * for it to copy is given back as it is (a run refuses to store it: see
 * {@link jsonProblem}).
 *
 * @internal
 */
export const deepCopy = <A>(a: A): A => {
  const json = copyIfJson(a)
  if (json !== undefined) return json.copy as A
  try {
    return structuredClone(a)
  } catch (error) {
    if (error instanceof RangeError) return a
    throw error
  }
}

/**
 * A deep copy of a JSON value (one `jsonProblem` finds nothing in), as a JSON
 * round trip would make it, without the text: `undefined` object properties
 * are left out, shared subtrees are copied apart, strings are shared.
 *
 * @internal
 */
export const copyJson = <A>(value: A): A => copy(value) as A

/**
 * A copy of `value` as {@link copyJson} makes it, if `value` is JSON that reads
 * back as the same value (what {@link jsonProblem} checks), else `undefined`:
 * one walk for the check and the copy.
 *
 * @internal
 */
export const copyIfJson = (value: unknown): { readonly copy: unknown } | undefined => {
  const ancestors = new Set<object>()
  const go = (u: unknown, inArray: boolean): unknown => {
    if (ancestors.size >= maxJsonDepth) return notJson
    switch (typeof u) {
      case "string":
      case "boolean":
        return u
      case "number":
        return Number.isFinite(u) && !Object.is(u, -0) ? u : notJson
      case "undefined":
        return inArray ? notJson : u
      case "object":
        break
      default:
        return notJson
    }
    if (u === null) return null
    if (ancestors.has(u)) return notJson
    if (Array.isArray(u)) {
      ancestors.add(u)
      const out: Array<unknown> = u.slice()
      for (let i = 0; i < out.length; i++) {
        const item = out[i]
        if (typeof item === "string") continue
        const copied = go(item, true)
        if (copied === notJson) return notJson
        out[i] = copied
      }
      ancestors.delete(u)
      return out
    }
    if (!isPlainObject(u)) return notJson
    ancestors.add(u)
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(u)) {
      const copied = go(u[key], false)
      if (copied === notJson) return notJson
      if (copied === undefined) continue
      setOwn(out, key, copied)
    }
    ancestors.delete(u)
    return out
  }
  const copied = go(value, false)
  return copied === notJson ? undefined : { copy: copied }
}

const notJson: unique symbol = Symbol("notJson")

const copy = (u: unknown): unknown => {
  if (typeof u !== "object" || u === null) return u
  if (Array.isArray(u)) {
    // scalars are copied in bulk, objects one by one
    const out: Array<unknown> = u.slice()
    for (let i = 0; i < out.length; i++) {
      const item = out[i]
      if (typeof item === "object" && item !== null) out[i] = copy(item)
    }
    return out
  }
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(u)) {
    const value = (u as Record<string, unknown>)[key]
    if (value === undefined) continue
    setOwn(out, key, copy(value))
  }
  return out
}

/**
 * The changes from `prev` to `next`, found by walking both values and
 * skipping every subtree they share by reference (updates are immutable, so
 * unchanged parts are the same objects). Arrays that only grew at the end are
 * reported as one `append`.
 *
 * @internal
 */
export type Change = WorkflowEvent.StateChange

/** @internal */
export const diff = (prev: unknown, next: unknown): Array<Change> => {
  const out: Array<Change> = []
  walk(prev, next, [], out)
  return out
}

const walk = (prev: unknown, next: unknown, path: Array<string | number>, out: Array<Change>): void => {
  if (Object.is(prev, next)) return
  if (path.length >= maxJsonDepth) {
    // too deep to walk: one change that sets it (which `changesProblem` refuses)
    out.push({ op: "set", path, value: next, previous: prev })
    return
  }
  if (isPlainObject(prev) && isPlainObject(next)) {
    for (const key of Object.keys(next)) {
      if (!Object.hasOwn(prev, key)) {
        out.push({ op: "set", path: [...path, key], value: next[key] })
      } else {
        walk(prev[key], next[key], [...path, key], out)
      }
    }
    for (const key of Object.keys(prev)) {
      if (!Object.hasOwn(next, key)) out.push({ op: "delete", path: [...path, key], previous: prev[key] })
    }
    return
  }
  if (Array.isArray(prev) && Array.isArray(next)) {
    if (next.length > prev.length && prev.every((item, i) => sameJson(item, next[i]))) {
      out.push({ op: "append", path, items: next.slice(prev.length) })
      return
    }
    if (next.length === prev.length) {
      const changed: Array<number> = []
      for (let i = 0; i < next.length; i++) if (!sameJson(prev[i], next[i])) changed.push(i)
      if (changed.length === 0) return
      if (changed.length <= 3) {
        for (const i of changed) walk(prev[i], next[i], [...path, i], out)
        return
      }
    }
    out.push({ op: "set", path, value: next, previous: prev })
    return
  }
  if (sameJson(prev, next)) return
  out.push(prev === undefined ? { op: "set", path, value: next } : { op: "set", path, value: next, previous: prev })
}

/** Structural equality on JSON-like values, with a reference shortcut. @internal */
export const sameJson = (a: unknown, b: unknown, depth = 0): boolean => {
  if (Object.is(a, b)) return true
  // values deeper than a stored value may be are taken as different
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null || depth >= maxJsonDepth) return false
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i], depth + 1)) return false
    return true
  }
  if (Array.isArray(b) || !isPlainObject(a) || !isPlainObject(b)) return false
  const ka = Object.keys(a)
  if (ka.length !== Object.keys(b).length) return false
  for (const k of ka) if (!Object.hasOwn(b, k) || !sameJson(a[k], b[k], depth + 1)) return false
  return true
}

/**
 * Where a value stops being JSON that reads back as the same value, and why:
 * a function, symbol or bigint, a non-finite number or -0, `undefined` in an array,
 * an object that is not a plain object or an array (a `Date`, a `Map`, a
 * class instance), a circular reference, nesting deeper than
 * {@link maxJsonDepth}, or a `"__proto__"` key (which JSON text keeps but
 * an object keeps only as long as no code assigns or spreads it: a run
 * refuses it, so that no copy of a stored value differs from another).
 * `undefined` object properties are fine (JSON leaves them out, which reads
 * back the same). `undefined` on its own is fine too (stored as `null`).
 *
 * @internal
 */
export const jsonProblem = (value: unknown): { readonly path: string; readonly description: string } | undefined => {
  const ancestors = new Set<object>()
  // the keys from the root to the value being checked; a path is only written out for a problem
  const keys: Array<string | number> = []
  const found = (description: string) => ({ path: keys.map(pathSegment).join(""), description })
  const check = (u: unknown, inArray: boolean): { readonly path: string; readonly description: string } | undefined => {
    switch (typeof u) {
      case "string":
      case "boolean":
        return undefined
      case "number":
        return !Number.isFinite(u)
          ? found(`the number ${u} (JSON has no ${u})`)
          : Object.is(u, -0)
          ? found("the number -0 (JSON turns it into 0)")
          : undefined
      case "undefined":
        return inArray ? found("undefined in an array (JSON turns it into null)") : undefined
      case "function":
        return found("a function")
      case "symbol":
        return found("a symbol")
      case "bigint":
        return found("a bigint")
    }
    if (u === null) return undefined
    const object = u as object
    if (ancestors.has(object)) return found("a circular reference")
    if (keys.length >= maxJsonDepth) return found(`a value nested deeper than ${maxJsonDepth} levels`)
    if (Array.isArray(object)) {
      ancestors.add(object)
      for (let i = 0; i < object.length; i++) {
        const item = object[i]
        // strings, the common case, need no call
        if (typeof item === "string") continue
        keys.push(i)
        const problem = check(item, true)
        if (problem !== undefined) return problem
        keys.pop()
      }
      ancestors.delete(object)
      return undefined
    }
    if (!isPlainObject(object)) {
      const name = (object as { readonly constructor?: { readonly name?: unknown } }).constructor?.name
      return found(
        `a ${typeof name === "string" && name.length > 0 ? name : "non-plain object"}, not a plain JSON value`
      )
    }
    ancestors.add(object)
    for (const key of Object.keys(object)) {
      keys.push(key)
      if (key === "__proto__") return found(protoKey)
      const problem = check((object as Record<string, unknown>)[key], false)
      if (problem !== undefined) return problem
      keys.pop()
    }
    ancestors.delete(object)
    return undefined
  }
  return check(value, false)
}

const protoKey = "a \"__proto__\" key (an object does not keep it through every copy)"

const pathSegment = (key: string | number): string =>
  typeof key === "number" ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`

/**
 * The changes from `prev` to `next` as a store keeps them: {@link diff}'s
 * changes without the `previous` values (which only events need).
 *
 * @internal
 */
export const storedChanges = (prev: unknown, next: unknown): Array<Change> =>
  diff(prev, next).map((change) =>
    change.op === "set"
      ? { op: "set", path: change.path, value: change.value }
      : change.op === "delete"
      ? { op: "delete", path: change.path, previous: null }
      : change
  )

/**
 * Where the values a list of changes brings in stop being JSON (see
 * {@link jsonProblem}), with the change's path in front.
 *
 * @internal
 */
export const changesProblem = (
  changes: ReadonlyArray<Change>,
  /** the state the changes made (to name an appended item by its index in it) */
  state: unknown
): { readonly path: string; readonly description: string } | undefined => {
  for (const change of changes) {
    const at = change.path.map(pathSegment).join("")
    if (change.op === "delete") continue
    const proto = change.path.indexOf("__proto__")
    if (proto >= 0) return { path: change.path.slice(0, proto + 1).map(pathSegment).join(""), description: protoKey }
    if (change.op === "append") {
      const problem = jsonProblem(change.items)
      if (problem === undefined) continue
      const target = change.path.reduce<unknown>(
        (value, key) => (value as Record<string | number, unknown>)[key],
        state
      )
      const offset = Array.isArray(target) ? target.length - change.items.length : 0
      return {
        path: `${at}${problem.path.replace(/^\[(\d+)\]/, (_, index: string) => `[${offset + Number(index)}]`)}`,
        description: problem.description
      }
    }
    if (change.value === undefined && typeof change.path[change.path.length - 1] === "number") {
      return { path: at, description: "undefined in an array (JSON turns it into null)" }
    }
    const problem = jsonProblem(change.value)
    if (problem !== undefined) return { path: `${at}${problem.path}`, description: problem.description }
  }
  return undefined
}

/** `object[key]` when it is the object's own property (never its prototype's). */
const ownValue = (object: Record<string | number, unknown>, key: string | number): unknown =>
  Object.hasOwn(object, key) ? object[key] : undefined

/**
 * Applies changes (as {@link diff} makes them) to a JSON value and returns
 * the result. Paths name own properties only (a `"__proto__"` key is a key
 * like any other, never the object's prototype). With `copy: false` the value is changed in place (it must be
 * the caller's own, e.g. just parsed); with `copy: true` the value is left as
 * it is: every object or array on a changed path is copied (once), the rest
 * is shared. The changes' values are put in as they are. A change whose path
 * does not lead to an object or array fails with an `Error` naming it.
 *
 * @internal
 */
export const applyChanges = (
  value: unknown,
  changes: ReadonlyArray<Change>,
  options: { readonly copy: boolean }
): unknown => {
  const copied = new Set<object>()
  const own = <A extends object>(container: A): A => {
    if (!options.copy || copied.has(container)) return container
    const fresh = (Array.isArray(container) ? container.slice() : { ...container }) as A
    copied.add(fresh)
    return fresh
  }
  let root = value
  for (const change of changes) {
    const path = change.path
    if (path.length === 0) {
      if (change.op === "set") root = change.value
      else if (change.op === "append" && Array.isArray(root)) {
        const mine = own(root)
        for (const item of change.items) mine.push(item)
        root = mine
      } else throw new Error(`cannot apply a '${change.op}' change to the whole state`)
      continue
    }
    if (typeof root !== "object" || root === null) {
      throw new Error(`cannot apply a change at ${path.map(pathSegment).join("")}: the state is not an object`)
    }
    root = own(root)
    let parent = root as Record<string | number, unknown>
    for (let i = 0; i < path.length - 1; i++) {
      const child = ownValue(parent, path[i]!)
      if (typeof child !== "object" || child === null) {
        throw new Error(
          `cannot apply a change at ${path.map(pathSegment).join("")}: ${
            path.slice(0, i + 1).map(pathSegment).join("")
          } is not an object or array`
        )
      }
      const mine = own(child)
      setOwn(parent, path[i]!, mine)
      parent = mine as Record<string | number, unknown>
    }
    const key = path[path.length - 1]!
    switch (change.op) {
      case "set":
        if (change.value === undefined && !Array.isArray(parent)) delete parent[key]
        else setOwn(parent, key, change.value)
        break
      case "delete":
        if (Array.isArray(parent) && typeof key === "number") parent.splice(key, 1)
        else delete parent[key]
        break
      case "append": {
        const target = ownValue(parent, key)
        if (!Array.isArray(target)) throw new Error(`cannot append at ${path.map(pathSegment).join("")}: not an array`)
        const mine = own(target)
        for (const item of change.items) mine.push(item)
        setOwn(parent, key, mine)
        break
      }
    }
  }
  return root
}

/**
 * Freezes a JSON value deeply, stopping at values already frozen (whose
 * parts this function froze before), so freezing a state made from a frozen
 * one only visits what is new.
 *
 * @internal
 */
export const freezeJson = (value: unknown, depth = 0): void => {
  // a committed value is no deeper than maxJsonDepth (see `jsonProblem`)
  if (typeof value !== "object" || value === null || Object.isFrozen(value) || depth > maxJsonDepth) return
  Object.freeze(value)
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item = value[i]
      if (typeof item === "object" && item !== null) freezeJson(item, depth + 1)
    }
    return
  }
  for (const key of Object.keys(value)) freezeJson((value as Record<string, unknown>)[key], depth + 1)
}
