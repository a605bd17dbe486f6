/**
 * What a step receives.
 *
 * @since 0.1.0
 */
import type { StepOutput } from "./StepOutput.js"

/**
 * The input of a step that receives the previous content `P` in a run whose
 * input is `I`.
 *
 * @since 0.1.0
 * @category models
 */
export interface StepInput<out P = unknown, out I = unknown> {
  /** the run's input (decoded with the workflow's `input` Schema, when it has one) */
  readonly input: I
  /**
   * the content of the step before this one; the first step of a workflow
   * receives the run's input
   */
  readonly previousStepContent: P
  /** the outputs of the steps of this workflow completed earlier in the run, by step name */
  readonly previousStepOutputs: Readonly<Record<string, StepOutput>>
  /** the run's `additionalData` option */
  readonly additionalData: Readonly<Record<string, unknown>>
}

/**
 * The content of an earlier step of the run, by name.
 *
 * @since 0.1.0
 * @category getters
 */
export const getStepContent = (input: StepInput, stepName: string): unknown =>
  input.previousStepOutputs[stepName]?.content

/**
 * The message for this step: the previous step's content (the run input, for
 * the first step), or the run input when the previous content is `undefined`.
 *
 * @since 0.1.0
 * @category getters
 */
export const message = <P, I>(input: StepInput<P, I>): P | I =>
  input.previousStepContent === undefined ? input.input : input.previousStepContent
