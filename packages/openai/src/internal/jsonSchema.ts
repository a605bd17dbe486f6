/**
 * JSON Schema helpers for OpenAI's strict structured outputs.
 *
 * OpenAI's `strict: true` mode (for `json_schema` response formats and for
 * function tools) only accepts a subset of JSON Schema:
 *
 * - every object must set `additionalProperties: false`;
 * - every property of an object must be listed in `required`;
 * - optional values are expressed as "required but nullable".
 *
 * `toStrict` rewrites a JSON Schema generated from an Effect Schema into that
 * form: each property that was optional becomes required and, unless it
 * already accepted `null`, is widened to `anyOf: [<schema>, { type: "null" }]`.
 * When the schema uses something strict mode cannot express (records / open
 * objects, tuples, `oneOf` / `allOf`, schemas without a type such as
 * `Schema.Unknown`) it reports `strict: false` and the original schema is
 * sent unchanged in non-strict mode.
 *
 * `denull` undoes the widening on the model's output: a `null` for a property
 * that was optional (and did not accept `null` originally) is removed, so the
 * value decodes with the original Effect Schema (`Schema.optional(X)` rejects
 * `null` but accepts a missing key).
 *
 * @internal
 */

/** @internal */
export type JsonSchema = { readonly [key: string]: unknown }

type MutableJsonSchema = { [key: string]: unknown }

const isRecord = (u: unknown): u is JsonSchema => typeof u === "object" && u !== null && !Array.isArray(u)

/** @internal */
export interface StrictResult {
  /** The schema to send. */
  readonly schema: JsonSchema
  /** Whether `schema` satisfies strict mode (send `strict: true`). */
  readonly strict: boolean
}

const UNSUPPORTED_KEYWORDS = [
  "oneOf",
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "patternProperties",
  "propertyNames",
  "dependentSchemas",
  "dependentRequired",
  "unevaluatedProperties",
  "prefixItems"
]

/**
 * Is the JSON Schema node (after `$ref` resolution) able to hold `null`?
 * @internal
 */
const acceptsNull = (node: unknown, defs: JsonSchema, seen: Set<unknown> = new Set()): boolean => {
  if (!isRecord(node) || seen.has(node)) return false
  seen.add(node)
  const resolved = resolveRef(node, defs)
  if (resolved !== node) return acceptsNull(resolved, defs, seen)
  if (node.type === "null") return true
  if (Array.isArray(node.type) && node.type.includes("null")) return true
  if (Array.isArray(node.enum) && node.enum.includes(null)) return true
  if ("const" in node && node.const === null) return true
  if (Array.isArray(node.anyOf)) return node.anyOf.some((branch) => acceptsNull(branch, defs, seen))
  return false
}

const resolveRef = (node: JsonSchema, defs: JsonSchema): JsonSchema => {
  const ref = node.$ref
  if (typeof ref === "string") {
    const match = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(ref)
    if (match) {
      const target = defs[decodeURIComponent(match[1]!.replace(/~1/g, "/").replace(/~0/g, "~"))]
      if (isRecord(target)) return target
    }
  }
  return node
}

const getDefs = (root: JsonSchema): JsonSchema => ({
  ...(isRecord(root.definitions) ? root.definitions : {}),
  ...(isRecord(root.$defs) ? root.$defs : {})
})

/**
 * Rewrites a JSON Schema for OpenAI strict mode (see the module comment).
 * @internal
 */
export const toStrict = (root: JsonSchema): StrictResult => {
  const defs = getDefs(root)
  let compatible = true

  const visit = (node: unknown): unknown => {
    if (!isRecord(node)) {
      // `true` / `false` schemas cannot be expressed in strict mode
      compatible = false
      return node
    }
    for (const keyword of UNSUPPORTED_KEYWORDS) {
      if (keyword in node) compatible = false
    }
    const out: MutableJsonSchema = { ...node }
    if (typeof node.$ref === "string") {
      return out
    }
    if (Array.isArray(node.anyOf)) {
      out.anyOf = node.anyOf.map(visit)
      return out
    }
    const hasTypeInfo = "type" in node || "enum" in node || "const" in node
    if (!hasTypeInfo) compatible = false
    const types = Array.isArray(node.type) ? node.type : [node.type]
    if (types.includes("object")) {
      const properties = isRecord(node.properties) ? node.properties : {}
      if (node.additionalProperties !== undefined && node.additionalProperties !== false) compatible = false
      if (node.additionalProperties === undefined && Object.keys(properties).length === 0) compatible = false
      const required = new Set(Array.isArray(node.required) ? node.required as ReadonlyArray<string> : [])
      const nextProperties: MutableJsonSchema = {}
      for (const [key, value] of Object.entries(properties)) {
        const strictValue = visit(value)
        nextProperties[key] = required.has(key) || acceptsNull(value, defs)
          ? strictValue
          : { anyOf: [strictValue, { type: "null" }] }
      }
      out.properties = nextProperties
      out.required = Object.keys(properties)
      out.additionalProperties = false
    }
    if (types.includes("array")) {
      if (Array.isArray(node.items)) {
        // tuples
        compatible = false
      } else if (node.items !== undefined) {
        out.items = visit(node.items)
      }
      if ("additionalItems" in node) compatible = false
    }
    return out
  }

  const schema = visit(root) as MutableJsonSchema
  for (const key of ["$defs", "definitions"] as const) {
    const group = root[key]
    if (isRecord(group)) {
      const next: MutableJsonSchema = {}
      for (const [name, value] of Object.entries(group)) next[name] = visit(value)
      schema[key] = next
    }
  }
  delete schema.$schema
  return compatible ? { schema, strict: true } : { schema: root, strict: false }
}

/**
 * Removes `null` values the model produced for properties that were optional
 * in `original` (and did not accept `null`), recursively. Returns a new value.
 * @internal
 */
export const denull = (value: unknown, original: JsonSchema): unknown => {
  const defs = getDefs(original)
  const walk = (value: unknown, node: unknown, depth: number): unknown => {
    if (!isRecord(node) || depth > 64) return value
    const schema = resolveRef(node, defs)
    if (Array.isArray(schema.anyOf)) {
      const branch = pickBranch(value, schema.anyOf, defs)
      return branch === undefined ? value : walk(value, branch, depth + 1)
    }
    if (Array.isArray(value)) {
      return isRecord(schema.items) ? value.map((item) => walk(item, schema.items, depth + 1)) : value
    }
    if (isRecord(value) && isRecord(schema.properties)) {
      const properties = schema.properties
      const required = new Set(Array.isArray(schema.required) ? schema.required as ReadonlyArray<string> : [])
      const out: MutableJsonSchema = {}
      for (const [key, item] of Object.entries(value)) {
        const propertySchema = properties[key]
        if (propertySchema === undefined) {
          out[key] = item
        } else if (item === null && !required.has(key) && !acceptsNull(propertySchema, defs)) {
          continue
        } else {
          out[key] = walk(item, propertySchema, depth + 1)
        }
      }
      return out
    }
    return value
  }
  return walk(value, original, 0)
}

const pickBranch = (value: unknown, branches: ReadonlyArray<unknown>, defs: JsonSchema): unknown => {
  const resolved = branches.filter(isRecord).map((branch) => resolveRef(branch, defs))
  if (Array.isArray(value)) return resolved.find((b) => b.type === "array")
  if (isRecord(value)) {
    const keys = Object.keys(value)
    const objects = resolved.filter((b) => isRecord(b.properties))
    return objects.find((b) => keys.every((key) => key in (b.properties as JsonSchema))) ?? objects[0]
  }
  return undefined
}

/**
 * Whether a JSON Schema describes an object at its root (OpenAI requires an
 * object root for `json_schema` response formats).
 * @internal
 */
export const isObjectRoot = (schema: JsonSchema): boolean => {
  const defs = getDefs(schema)
  const resolved = resolveRef(schema, defs)
  return resolved.type === "object" && !Array.isArray(resolved.anyOf)
}

/**
 * Wraps a non-object root schema as `{ value: <schema> }` (moving `$defs` to
 * the new root so that `$ref`s still resolve).
 * @internal
 */
export const wrapValue = (schema: JsonSchema): JsonSchema => {
  const { $defs, definitions, $schema: _, ...inner } = schema
  const wrapped: MutableJsonSchema = {
    type: "object",
    properties: { value: inner },
    required: ["value"],
    additionalProperties: false
  }
  if ($defs !== undefined) wrapped.$defs = $defs
  if (definitions !== undefined) wrapped.definitions = definitions
  return wrapped
}
