/**
 * Teams: a leader agent that delegates to member agents.
 *
 * The leader is an agent (instructions, its own tools, an optional output
 * Schema and model) with one more tool, `delegate_task_to_member`
 * (`member_name`, `task`): a call runs that member on the task, and the
 * member's reply (its text, or its structured output as JSON text) comes back
 * to the leader as the tool result. A member that fails with a typed error
 * (a model error, too many turns, a bad structured output) is reported to the
 * leader as an error result, like a failing tool; defects propagate.
 *
 * Members and the team's tools run in the same context as the leader: inside
 * a workflow they share the run's one session state (the same `Ref`, never a
 * copy). Members' events are published one level deeper than the team's
 * step: at `[...stepPath, memberName]`.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Effect from "effect/Effect"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type { Covariant } from "effect/Types"
import * as Agent from "./Agent.js"
import * as internal from "./internal/agent/agent.js"
import { errorText } from "./internal/format.js"
import { contentText } from "./StepOutput.js"
import type { ResponseDecodeError, RunPaused } from "./WorkflowError.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * @since 0.1.0
 * @category type ids
 */
export const TypeId: unique symbol = Symbol.for("@sessionflow/core/Team")

/**
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = typeof TypeId

/**
 * The name of the generated delegation tool.
 *
 * @since 0.1.0
 * @category constants
 */
export const delegateToolName = "delegate_task_to_member"

/**
 * A team whose output is `A`, whose runs may fail with `E` and need `R` (the
 * leader's and every member's requirements).
 *
 * @since 0.1.0
 * @category models
 */
export interface Team<out A, out E = never, out R = never> extends Pipeable {
  readonly [TypeId]: {
    readonly _A: Covariant<A>
    readonly _E: Covariant<E>
    readonly _R: Covariant<R>
  }
  readonly name: string
  readonly members: ReadonlyArray<Agent.Any>
  /** the leader: an agent with the team's instructions, tools and the delegation tool */
  readonly leader: Agent.Agent<A, E, R>
}

/**
 * Any team.
 *
 * @since 0.1.0
 * @category models
 */
export interface Any extends Team<unknown, unknown, unknown> {}

/**
 * @since 0.1.0
 * @category options
 */
export interface MakeOptions extends Agent.MakeOptions {
  /** the agents the leader can delegate to (unique names) */
  readonly members: ReadonlyArray<Agent.Any>
}

const Proto = {
  [TypeId]: { _A: (_: never) => _, _E: (_: never) => _, _R: (_: never) => _ },
  pipe() {
    return pipeArguments(this, arguments)
  },
  toJSON(this: Any) {
    return { _id: "Team", name: this.name, members: this.members.map((m) => m.name) }
  }
}

/** The members section of the leader's system prompt. */
const roster = (teamName: string, members: ReadonlyArray<Agent.Any>): string =>
  [
    `You lead the team '${teamName}'. Delegate work to a member with the \`${delegateToolName}\` ` +
    `tool (the member's name and the task); the member's reply comes back as the tool result.`,
    "Members:",
    ...members.map((member) => {
      const about = member.description ?? member.instructions.join(" ")
      return about.length === 0 ? `- ${member.name}` : `- ${member.name}: ${about}`
    })
  ].join("\n")

/** The leader's delegate tool: runs a member on a task; the member's reply (or its failure) is the result. */
const delegateTool = (members: ReadonlyArray<Agent.Any>): internal.ToolEntry => {
  const names = members.map((m) => m.name) as [string, ...Array<string>]
  const tool = Tool.make(delegateToolName, {
    description: "Give a task to one member of the team and get the member's reply.",
    parameters: {
      member_name: Schema.Literal(...names).annotations({
        description: "The name of the member",
        message: (issue) => ({
          message: `Unknown member ${JSON.stringify(issue.actual)}; the members are ${
            names.map((n) => JSON.stringify(n)).join(", ")
          }`,
          override: true
        })
      }),
      task: Schema.String.annotations({
        description: "The task for the member, with everything the member needs to know"
      })
    },
    success: Schema.String
  })
  return internal.makeToolEntry(tool, {
    parameters: tool.parametersSchema,
    run: ({ member_name, task }) =>
      Agent.run(members.find((m) => m.name === member_name)!, task).pipe(
        Effect.map((result) => ({ result: contentText(result.content), isFailure: false })),
        WorkflowEvent.withPathSegment(member_name)
      ),
    failure: (error, { member_name }) => `Member '${member_name}' failed: ${errorText(error)}`
  })
}

/**
 * What a team's members add to its errors: a member's other failures come
 * back to the leader as tool results, but a member whose tool needs approval
 * pauses the run (`RunPaused`, or `ResponseDecodeError` for a bad answer).
 *
 * @since 0.1.0
 * @category type-level
 */
export type MemberPause<M> = Extract<Agent.Error<M>, RunPaused | ResponseDecodeError>

/**
 * Makes a team.
 *
 * ```ts
 * const team = Team.make({
 *   name: "ManagementTeam",
 *   members: [stepManager, stepCoordinator],
 *   tools: TeamTools,                       // the leader's own tools
 *   instructions: ["Coordinate the project steps."]
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const O extends MakeOptions>(
  options: O
): Team<
  Agent.MakeOutput<O>,
  Agent.MakeError<O> | MemberPause<O["members"][number]>,
  Agent.MakeContext<O> | Agent.Context<O["members"][number]>
> => {
  const seen = new Set<string>()
  for (const member of options.members) {
    if (seen.has(member.name)) {
      throw new Error(`Team '${options.name}': two members are named '${member.name}'`)
    }
    seen.add(member.name)
  }
  const instructions = internal.instructionLines(options.instructions)
  const leader = options.members.length === 0 ? internal.make(options) : internal.make(
    { ...options, instructions: [...instructions, "", roster(options.name, options.members)] },
    [delegateTool(options.members)]
  )
  const team = Object.create(Proto)
  team.name = options.name
  team.members = options.members
  team.leader = leader
  return team
}

/**
 * Runs the team (its leader) on a message.
 *
 * @since 0.1.0
 * @category running
 */
export const run = <A, E, R>(
  self: Team<A, E, R>,
  message: unknown,
  options?: Agent.RunOptions
): Effect.Effect<Agent.Result<A>, E, R> =>
  Agent.run(self.leader, message, options).pipe(
    Effect.withSpan("Team.run", { attributes: { "sessionflow.team.name": self.name } })
  )

/**
 * Runs the team and streams its leader's and members' text deltas and tool
 * calls (see `Agent.stream`).
 *
 * @since 0.1.0
 * @category running
 */
export const stream = <A, E, R>(
  self: Team<A, E, R>,
  message: unknown,
  options?: Agent.RunOptions
): Stream.Stream<Agent.StreamEvent<A>, E, R> => Agent.stream(self.leader, message, options)
