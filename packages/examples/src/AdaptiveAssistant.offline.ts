/**
 * The scripted model of the adaptive assistant (scenario 5A): each of the
 * four assistants answers in its style.
 *
 * @since 0.1.0
 */
import { TestModel } from "@sessionflow/core"
import * as Offline from "./Offline.js"

const adaptiveReply = (agent: string | undefined, query: string): string => {
  switch (agent) {
    case "Onboarding Agent":
      return "Welcome aboard! I'm glad you're here. Do you prefer detailed technical " +
        "answers, or a friendly, casual chat? Either way, ask me anything."
    case "Technical Expert":
      return /binary search tree/i.test(query)
        ? [
          "A binary search tree keeps smaller keys left and larger keys right:",
          "",
          "```python",
          "class Node:",
          "    def __init__(self, key):",
          "        self.key, self.left, self.right = key, None, None",
          "",
          "def insert(root, key):",
          "    if root is None:",
          "        return Node(key)",
          "    if key < root.key:",
          "        root.left = insert(root.left, key)",
          "    else:",
          "        root.right = insert(root.right, key)",
          "    return root",
          "```",
          "Search follows the same comparisons: O(log n) when balanced, O(n) in the worst case."
        ].join("\n")
        : `Technically speaking: "${Offline.topicOf(query)}" deserves a precise answer with examples and trade-offs.`
    case "Friendly Assistant":
      return /pizza/i.test(query)
        ? "Ooh, tough one! Margherita is a classic, but honestly? Mushrooms " +
          "and a drizzle of hot honey are hard to beat. What's yours? 🍕"
        : `Great question! Let's keep it simple and fun: ${Offline.topicOf(query)} — happy to dig in with you.`
    default:
      return /quantum/i.test(query)
        ? "Quantum computers use qubits, which can hold a mix of 0 and 1 at once and can be " +
          "entangled with each other. For some problems — factoring, simulating molecules — " +
          "that lets them explore many possibilities far faster than classical computers."
        : `Here's a balanced answer to "${
          Offline.topicOf(query)
        }": the key ideas first, then the details if you want them.`
  }
}

export const respond = (request: TestModel.Request): TestModel.Reply =>
  TestModel.text(adaptiveReply(request.agent, request.lastUserMessage ?? ""))

export const offlineModel = TestModel.layer(respond)
