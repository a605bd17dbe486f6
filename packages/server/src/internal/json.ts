/**
 * What a request's JSON may hold: nesting up to a depth, and no `__proto__`
 * key (an object cannot keep one faithfully through every copy and store, so
 * it is refused rather than dropped).
 *
 * @internal
 */

/** @internal */
const maxDepth = 64

/**
 * The problem with a parsed JSON value, if it has one: nested deeper than
 * `limit` (arrays and objects), or an object with a `__proto__` key. Walks the
 * value without recursion, so a deep value cannot overflow the stack here.
 *
 * @internal
 */
export const problem = (value: unknown, limit: number = maxDepth): string | undefined => {
  const stack: Array<readonly [unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!
    if (item === null || typeof item !== "object") continue
    if (depth + 1 > limit) return `The request body is nested deeper than ${limit} levels`
    if (Array.isArray(item)) {
      for (const child of item) stack.push([child, depth + 1])
      continue
    }
    if (Object.prototype.hasOwnProperty.call(item, "__proto__")) {
      return `The request body has a "__proto__" key, which cannot be stored faithfully`
    }
    for (const child of Object.values(item)) stack.push([child, depth + 1])
  }
  return undefined
}
