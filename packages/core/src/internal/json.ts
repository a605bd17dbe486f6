import type * as WorkflowEvent from "../WorkflowEvent.js"

/** @internal */
export const isPlainObject = (u: unknown): u is Record<string, unknown> => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) return false
  const proto = Object.getPrototypeOf(u)
  return proto === Object.prototype || proto === null
}

/**
 * Deep-merges `patch` over `base`: plain objects merge key by key, arrays and
 * scalars in `patch` replace. Neither argument is mutated.
 *
 * @internal
 */
export const deepMerge = (base: unknown, patch: unknown): unknown => {
  if (!isPlainObject(base) || !isPlainObject(patch)) return patch
  const out: Record<string, unknown> = { ...base }
  for (const key of Object.keys(patch)) {
    const value = patch[key]
    if (value === undefined) continue
    out[key] = key in base ? deepMerge(base[key], value) : value
  }
  return out
}

/** @internal */
export const deepCopy = <A>(a: A): A => structuredClone(a)

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
    switch (typeof u) {
      case "string":
      case "boolean":
        return u
      case "number":
        return Number.isFinite(u) ? u : notJson
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
      if (key === "__proto__") {
        Object.defineProperty(out, key, { value: copied, enumerable: true, writable: true, configurable: true })
      } else {
        out[key] = copied
      }
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
    if (key === "__proto__") {
      Object.defineProperty(out, key, { value: copy(value), enumerable: true, writable: true, configurable: true })
    } else {
      out[key] = copy(value)
    }
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
  if (isPlainObject(prev) && isPlainObject(next)) {
    for (const key of Object.keys(next)) {
      if (!(key in prev)) {
        out.push({ op: "set", path: [...path, key], value: next[key] })
      } else {
        walk(prev[key], next[key], [...path, key], out)
      }
    }
    for (const key of Object.keys(prev)) {
      if (!(key in next)) out.push({ op: "delete", path: [...path, key], previous: prev[key] })
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
export const sameJson = (a: unknown, b: unknown): boolean => {
  if (Object.is(a, b)) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false
    return true
  }
  if (Array.isArray(b) || !isPlainObject(a) || !isPlainObject(b)) return false
  const ka = Object.keys(a)
  if (ka.length !== Object.keys(b).length) return false
  for (const k of ka) if (!(k in b) || !sameJson(a[k], b[k])) return false
  return true
}

/**
 * Where a value stops being JSON that reads back as the same value, and why:
 * a function, symbol or bigint, a non-finite number, `undefined` in an array,
 * an object that is not a plain object or an array (a `Date`, a `Map`, a
 * class instance), or a circular reference. `undefined` object properties are
 * fine (JSON leaves them out, which reads back the same). `undefined` on its
 * own is fine too (stored as `null`).
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
        return Number.isFinite(u) ? undefined : found(`the number ${u} (JSON has no ${u})`)
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
      return found(`a ${typeof name === "string" && name.length > 0 ? name : "non-plain object"}, not a plain JSON value`)
    }
    ancestors.add(object)
    for (const key of Object.keys(object)) {
      keys.push(key)
      const problem = check((object as Record<string, unknown>)[key], false)
      if (problem !== undefined) return problem
      keys.pop()
    }
    ancestors.delete(object)
    return undefined
  }
  return check(value, false)
}

const pathSegment = (key: string | number): string =>
  typeof key === "number" ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
