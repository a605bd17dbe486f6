/**
 * @since 0.1.0
 */

/**
 * The `OpenAIClient` service: the official `openai` SDK configured from
 * `OPENAI_*` variables, with retries, `Retry-After`, interruption and
 * `AiError` mapping done in Effect.
 *
 * @since 0.1.0
 */
export * as OpenAIClient from "./OpenAIClient.js"

/**
 * `LanguageModel` layers on the Chat Completions API.
 *
 * @since 0.1.0
 */
export * as OpenAIChat from "./OpenAIChat.js"

/**
 * `LanguageModel` layers on the Responses API.
 *
 * @since 0.1.0
 */
export * as OpenAIResponses from "./OpenAIResponses.js"
