/**
 * The run input form, built from the workflow's input JSON Schema: an object
 * of simple fields (text, numbers, booleans, a choice of literals) becomes one
 * labelled field each; any other Schema keeps the text area (text for a
 * string input, JSON otherwise).
 */
type JsonSchema = {
  readonly type?: string | ReadonlyArray<string>
  readonly $ref?: string
  readonly $defs?: Record<string, JsonSchema>
  readonly properties?: Record<string, JsonSchema>
  readonly required?: ReadonlyArray<string>
  readonly enum?: ReadonlyArray<unknown>
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly description?: string
  readonly title?: string
}

interface Field {
  readonly name: string
  readonly kind: "string" | "number" | "integer" | "boolean" | "choice"
  readonly required: boolean
  readonly choices?: ReadonlyArray<string>
  readonly description?: string
}

/** `schema` with a `$ref` into the root's `$defs` followed. */
const resolve = (root: JsonSchema, schema: JsonSchema): JsonSchema => {
  let current = schema
  for (let hops = 0; current.$ref !== undefined && hops < 8; hops++) {
    const match = /^#\/\$defs\/(.+)$/.exec(current.$ref)
    const next = match === null
      ? undefined
      : root.$defs?.[decodeURIComponent(match[1]!).replace(/~1/g, "/").replace(/~0/g, "~")]
    if (next === undefined) return current
    current = next
  }
  return current
}

const fieldOf = (name: string, schema: JsonSchema, required: boolean): Field | undefined => {
  const description = schema.description ?? schema.title
  const common = { name, required, ...(description === undefined ? {} : { description }) }
  if (schema.enum !== undefined && schema.enum.every((v) => typeof v === "string")) {
    return { ...common, kind: "choice", choices: schema.enum as ReadonlyArray<string> }
  }
  if (
    schema.anyOf !== undefined &&
    schema.anyOf.every((s) => s.enum !== undefined && s.enum.every((v) => typeof v === "string"))
  ) {
    return { ...common, kind: "choice", choices: schema.anyOf.flatMap((s) => s.enum as ReadonlyArray<string>) }
  }
  switch (schema.type) {
    case "string":
    case "number":
    case "integer":
    case "boolean":
      return { ...common, kind: schema.type }
    default:
      return undefined
  }
}

/** The fields of an object Schema of simple properties; undefined for any other Schema. */
export const fieldsOf = (input: unknown): ReadonlyArray<Field> | undefined => {
  if (input === null || typeof input !== "object") return undefined
  const root = input as JsonSchema
  const schema = resolve(root, root)
  if (schema.type !== "object" || schema.properties === undefined) return undefined
  const required = new Set(schema.required ?? [])
  const fields: Array<Field> = []
  for (const [name, property] of Object.entries(schema.properties)) {
    const field = fieldOf(name, resolve(root, property), required.has(name))
    if (field === undefined) return undefined
    fields.push(field)
  }
  return fields.length === 0 ? undefined : fields
}

const control = (field: Field): HTMLInputElement | HTMLSelectElement => {
  if (field.kind === "choice") {
    const select = document.createElement("select")
    if (!field.required) select.append(new Option("", ""))
    select.append(...(field.choices ?? []).map((choice) => new Option(choice, choice)))
    return select
  }
  const input = document.createElement("input")
  input.type = field.kind === "boolean" ? "checkbox" : field.kind === "string" ? "text" : "number"
  if (field.kind === "integer") input.step = "1"
  if (field.kind === "number") input.step = "any"
  input.required = field.required && field.kind !== "boolean"
  return input
}

/** Draws the fields into `container`; returns how to read the input they make. */
export const renderFields = (container: HTMLElement, fields: ReadonlyArray<Field>): () => Record<string, unknown> => {
  const controls = fields.map((field) => {
    const id = `input-field-${field.name.replace(/[^\w-]/g, "_")}`
    const label = Object.assign(document.createElement("label"), { htmlFor: id, textContent: field.name })
    if (field.description !== undefined) label.title = field.description
    if (field.required) {
      label.append(Object.assign(document.createElement("span"), { className: "muted", textContent: " *" }))
    }
    const input = control(field)
    input.id = id
    input.name = field.name
    input.dataset["kind"] = field.kind
    const row = document.createElement("div")
    row.className = "field"
    row.append(label, input)
    container.append(row)
    return [field, input] as const
  })
  return () => {
    const value: Record<string, unknown> = {}
    for (const [field, input] of controls) {
      if (field.kind === "boolean") {
        value[field.name] = (input as HTMLInputElement).checked
      } else if (input.value !== "" || field.required) {
        value[field.name] = field.kind === "number" || field.kind === "integer" ? Number(input.value) : input.value
      }
    }
    return value
  }
}
