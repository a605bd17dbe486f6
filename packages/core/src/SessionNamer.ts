/**
 * Names sessions for `Workflow.setSessionName(wf, id, { autogenerate: true })`.
 * When no `SessionNamer` is provided, the name is the workflow's description
 * (or name) and the session's creation time; {@link layerLanguageModel} asks
 * the `LanguageModel` for a short title instead.
 *
 * @since 0.1.0
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { contentText } from "./StepOutput.js"

/**
 * What a namer is told about the session.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly workflowName: string
  readonly description: string | undefined
  readonly sessionId: string
  /** the session's first run input and output, when there is a run */
  readonly firstInput: unknown
  readonly firstOutput: unknown
  readonly createdAt: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly name: (request: Request) => Effect.Effect<string, unknown>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class SessionNamer extends Context.Tag("@sessionflow/core/SessionNamer")<SessionNamer, Service>() {}

/**
 * The name used without a namer, or when the namer fails: the description
 * (else the workflow name) and the creation time, e.g.
 * `Automated article creation - 2026-11-29 13:45`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fallbackName = (request: Request): string =>
  `${request.description ?? request.workflowName} - ${
    new Date(request.createdAt).toISOString().slice(0, 16).replace("T", " ")
  }`

/**
 * @since 0.1.0
 * @category options
 */
export interface LanguageModelOptions {
  /** the most words of a name (default 6) */
  readonly maxWords?: number | undefined
  /** replaces the default instructions */
  readonly instructions?: string | undefined
}

/**
 * A namer that asks the `LanguageModel` for a short title (at most six words)
 * from the session's first input and output.
 *
 * ```ts
 * Workflow.setSessionName(wf, sessionId, { autogenerate: true }).pipe(
 *   Effect.provide(SessionNamer.layerLanguageModel())
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerLanguageModel = (
  options?: LanguageModelOptions
): Layer.Layer<SessionNamer, never, LanguageModel.LanguageModel> =>
  Layer.effect(
    SessionNamer,
    Effect.map(LanguageModel.LanguageModel, (model): Service => {
      const maxWords = options?.maxWords ?? 6
      const instructions = options?.instructions ??
        `You name conversations. Reply with a short, descriptive title of at most ${maxWords} words for the ` +
          "conversation below: the title only, without quotes or trailing punctuation."
      return {
        name: (request) =>
          Effect.gen(function*() {
            const lines = [`Workflow: ${request.workflowName}`]
            if (request.description !== undefined) lines.push(`Description: ${request.description}`)
            lines.push("", "First input:", truncate(contentText(request.firstInput), 2000))
            lines.push("", "First output:", truncate(contentText(request.firstOutput), 2000))
            const response = yield* model.generateText({
              prompt: [
                { role: "system", content: instructions },
                { role: "user", content: lines.join("\n") }
              ]
            })
            const title = cleanTitle(response.text, maxWords)
            if (title.length === 0) {
              return yield* new AiError.MalformedOutput({
                module: "SessionNamer",
                method: "layerLanguageModel",
                description: "The model replied with an empty title"
              })
            }
            return title
          }).pipe(Effect.withSpan("SessionNamer.name"))
      }
    })
  )

const truncate = (s: string, max: number): string => (s.length > max ? `${s.slice(0, max)}…` : s)

/** A model's title reply as a clean name of at most `maxWords` words. */
const cleanTitle = (text: string, maxWords: number): string => {
  const firstLine = text.split(/\r?\n/).map((l) => l.trim()).find((l) => l.length > 0) ?? ""
  const stripped = firstLine
    .replace(/^(title|session name|name)\s*:\s*/i, "")
    .replace(/[*_#`]/g, "")
    .replace(/^["'“”‘’\s]+|["'“”‘’\s]+$/g, "")
  const words = stripped.split(/\s+/).filter((w) => w.length > 0).slice(0, maxWords)
  return words.join(" ").replace(/[.,;:!?]+$/, "")
}
