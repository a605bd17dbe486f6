/**
 * W6: one agent step with one tool call against a local OpenAI-compatible
 * server, in sessionflow (an `Agent` in a workflow step, on the OpenAI Chat
 * Completions provider) and with the openai SDK directly (the same two HTTP
 * exchanges, written by hand).
 */
import { Tool, Toolkit } from "@effect/ai"
import { Agent, SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { OpenAIChat, OpenAIClient } from "@sessionflow/openai"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import OpenAI from "openai"
import type { Runner } from "./types.ts"

export interface Server {
  readonly url: string
  readonly apiKey: string
}

const MODEL = "gpt-bench"
const INPUT = "Please add milk to my shopping list."
const INSTRUCTIONS = "You are a helpful shopping assistant. Always use the provided tools."
const toolResult = (item: string) => `Added '${item}' to the shopping list.`

const unsupported = () => Promise.reject(new Error("not part of W6"))

// -----------------------------------------------------------------------------
// sessionflow
// -----------------------------------------------------------------------------

class Cart extends SessionState.Tag("bench/Cart")<Cart>()({ items: Schema.Array(Schema.String) }) {}

const AddItem = Tool.make("add_item", {
  description: "Add an item to the shopping list",
  parameters: { item: Schema.String },
  success: Schema.String,
  dependencies: [Cart]
})
const CartTools = Toolkit.make(AddItem)
const CartToolsLive = CartTools.toLayer({
  add_item: ({ item }) => Cart.modify((s) => [toolResult(item), { items: [...s.items, item] }] as const)
})

const shopper = Agent.make({ name: "Shopping Assistant", instructions: INSTRUCTIONS, tools: CartTools })

const workflow = Workflow.make({
  name: "shopping",
  state: Cart,
  sessionState: { items: [] },
  steps: [Step.agent("manage_items", shopper)]
})

export const sessionflow = async (server: Server): Promise<Runner> => {
  const layer = Layer.mergeAll(
    CartToolsLive,
    OpenAIChat.modelWithClient(MODEL, OpenAIClient.layer({ apiKey: server.apiKey, baseURL: server.url })),
    SessionStore.layerMemory
  )
  const runtime = ManagedRuntime.make(layer)
  await runtime.runPromise(Effect.void)
  return {
    run: (sessionId, runs) =>
      runtime.runPromise(Effect.gen(function*() {
        for (let i = 0; i < runs; i++) {
          const out = yield* Workflow.run(workflow, INPUT, { sessionId })
          if (typeof out.content !== "string" || out.content.length === 0) throw new Error("no reply")
        }
      })),
    seed: unsupported,
    runSessions: unsupported,
    prefillHistory: unsupported,
    counter: (sessionId) =>
      runtime.runPromise(
        Workflow.getSessionState(workflow, sessionId).pipe(
          Effect.map((s) => s.items.length),
          Effect.catchTag("SessionNotFound", () => Effect.succeed(0))
        )
      ),
    close: () => runtime.dispose()
  }
}

// -----------------------------------------------------------------------------
// the openai SDK directly
// -----------------------------------------------------------------------------

const tools: Array<OpenAI.Chat.Completions.ChatCompletionTool> = [{
  type: "function",
  function: {
    name: "add_item",
    description: "Add an item to the shopping list",
    parameters: {
      type: "object",
      properties: { item: { type: "string" } },
      required: ["item"],
      additionalProperties: false
    },
    strict: true
  }
}]

export const sdk = async (server: Server): Promise<Runner> => {
  const client = new OpenAI({ apiKey: server.apiKey, baseURL: server.url })
  const sessions = new Map<string, { items: Array<string> }>()
  const runOnce = async (sessionId: string) => {
    let state = sessions.get(sessionId)
    if (state === undefined) sessions.set(sessionId, state = { items: [] })
    const messages: Array<OpenAI.Chat.Completions.ChatCompletionMessageParam> = [
      { role: "system", content: INSTRUCTIONS },
      { role: "user", content: INPUT }
    ]
    for (let turn = 0; turn < 10; turn++) {
      const completion = await client.chat.completions.create({ model: MODEL, messages, tools })
      const message = completion.choices[0]!.message
      const calls = message.tool_calls ?? []
      if (calls.length === 0) {
        if (!message.content) throw new Error("no reply")
        return message.content
      }
      messages.push(message)
      for (const call of calls) {
        if (call.type !== "function" || call.function.name !== "add_item") throw new Error("unknown tool")
        const { item } = JSON.parse(call.function.arguments) as { item: string }
        state.items.push(item)
        messages.push({ role: "tool", tool_call_id: call.id, content: toolResult(item) })
      }
    }
    throw new Error("too many turns")
  }
  return {
    run: async (sessionId, runs) => {
      for (let i = 0; i < runs; i++) await runOnce(sessionId)
    },
    seed: unsupported,
    runSessions: unsupported,
    prefillHistory: unsupported,
    counter: async (sessionId) => sessions.get(sessionId)?.items.length ?? 0,
    close: async () => {}
  }
}
