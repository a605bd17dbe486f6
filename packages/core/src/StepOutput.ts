/**
 * What a step produced.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/**
 * @since 0.1.0
 * @category type ids
 */
export const TypeId: unique symbol = Symbol.for("@sessionflow/core/StepOutput")

/**
 * The output of a step whose content is `A`.
 *
 * @since 0.1.0
 * @category models
 */
export interface StepOutput<out A = unknown> {
  readonly [TypeId]: typeof TypeId
  readonly stepName: string
  /** the step's value: text, structured output, parallel results by branch name, … */
  readonly content: A
  /** false for a step that reported failure without failing the run */
  readonly success: boolean
  readonly error?: string | undefined
  /** true to end the workflow after this step */
  readonly stop?: boolean | undefined
  /** `Loop` only: true when the loop reached `maxIterations` before its end condition held */
  readonly exhausted?: boolean | undefined
}

/**
 * The content type of what an executor returns: `A` for a `StepOutput<A>`,
 * the value's own type otherwise.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Content<X> = X extends StepOutput<infer A> ? A : X

/**
 * The serialisable form of a step output (without the brand).
 *
 * @since 0.1.0
 * @category schemas
 */
export const StepOutputSchema = Schema.Struct({
  stepName: Schema.String,
  content: Schema.Unknown,
  success: Schema.Boolean,
  error: Schema.optional(Schema.String),
  stop: Schema.optional(Schema.Boolean),
  exhausted: Schema.optional(Schema.Boolean)
})

/**
 * Makes an output. An executor returning a `StepOutput` controls its
 * `success`, `error` and `stop`; any other value becomes the `content` of a
 * successful output. `stepName` is filled in by the engine when left empty.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A>(options: {
  readonly content: A
  readonly stepName?: string | undefined
  readonly success?: boolean | undefined
  readonly error?: string | undefined
  readonly stop?: boolean | undefined
  readonly exhausted?: boolean | undefined
}): StepOutput<A> => ({
  [TypeId]: TypeId,
  stepName: options.stepName ?? "",
  content: options.content,
  success: options.success ?? true,
  ...(options.error === undefined ? {} : { error: options.error }),
  ...(options.stop === undefined ? {} : { stop: options.stop }),
  ...(options.exhausted === undefined ? {} : { exhausted: options.exhausted })
})

/**
 * An unsuccessful output that does not fail the run; its content is the error
 * text unless given.
 *
 * @since 0.1.0
 * @category constructors
 */
export const failure: {
  (error: string): StepOutput<string>
  <A>(error: string, content: A): StepOutput<A>
} = (error: string, content: unknown = error): StepOutput<any> => make({ content, success: false, error })

/**
 * A successful output that ends the workflow after this step.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stop = <A>(content: A): StepOutput<A> => make({ content, stop: true })

/**
 * @since 0.1.0
 * @category refinements
 */
export const isStepOutput = (u: unknown): u is StepOutput => Predicate.hasProperty(u, TypeId)

/**
 * The content as text: strings as they are, anything else as JSON.
 *
 * @since 0.1.0
 * @category getters
 */
export const contentText = (content: unknown): string =>
  typeof content === "string" ? content : content === undefined ? "" : JSON.stringify(content)
