/**
 * Agent and team steps.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Agent from "../../Agent.js"
import { message as stepMessage, type StepInput } from "../../StepInput.js"
import * as StepOutput from "../../StepOutput.js"
import type * as Team from "../../Team.js"
import type * as WorkflowEvent from "../../WorkflowEvent.js"
import { makeStep, type NodeOptions, type Step } from "../step/node.js"

/** @internal */
export interface AgentOptions<P, I> extends NodeOptions {
  readonly message?: ((input: StepInput<P, I>) => unknown) | undefined
  readonly includeRunInput?: boolean | undefined
}

/** @internal */
export const runInputHeading = "The workflow's input (what the user asked for at the start of this run):"

const agentMessage = <P, I>(input: StepInput<P, I>, options: AgentOptions<P, I> | undefined) => {
  const message = options?.message === undefined ? stepMessage(input) : options.message(input)
  const includeRunInput = (options?.includeRunInput ?? true) && input.input !== undefined && message !== input.input
  return {
    message,
    additionalContext: includeRunInput
      ? `${runInputHeading}\n${StepOutput.contentText(input.input)}`
      : undefined
  }
}

const make = <const N extends string, A, E, R, P, I>(
  name: N,
  kind: WorkflowEvent.StepKind,
  agent: Agent.Agent<A, E, R>,
  options: AgentOptions<P, I> | undefined
): Step<A, E, R, P, I, N> =>
  makeStep({
    name,
    kind,
    description: options?.description,
    onError: options?.onError,
    retry: options?.retry,
    execute: (input: StepInput<P, I>) => {
      const { additionalContext, message } = agentMessage(input, options)
      return Effect.map(Agent.run(agent, message, { additionalContext }), (result) => result.content)
    }
  })

/** @internal */
export const agentStep = <const N extends string, A, E, R, P = unknown, I = unknown>(
  name: N,
  agent: Agent.Agent<A, E, R>,
  options?: AgentOptions<P, I>
): Step<A, E, R, P, I, N> => make(name, "agent", agent, options)

/** @internal */
export const teamStep = <const N extends string, A, E, R, P = unknown, I = unknown>(
  name: N,
  team: Team.Team<A, E, R>,
  options?: AgentOptions<P, I>
): Step<A, E, R, P, I, N> => make(name, "team", team.leader, options)
