/**
 * What a step receives.
 *
 * @since 0.1.0
 */
import type { StepOutput } from "./StepOutput.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface StepInput {
  /** the run's input, as given to `Workflow.run` */
  readonly input: unknown
  /** the content of the step before this one; `undefined` for the first step */
  readonly previousStepContent: unknown
  /** the outputs of every step completed earlier in this run, by step name */
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
 * The message for this step: the previous step's content when there is one,
 * else the run input.
 *
 * @since 0.1.0
 * @category getters
 */
export const message = (input: StepInput): unknown =>
  input.previousStepContent === undefined ? input.input : input.previousStepContent
