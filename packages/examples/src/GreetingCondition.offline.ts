/**
 * The scripted model of the greeting condition (scenario 4): the greeter
 * welcomes, the assistant answers the query (a joke when asked for one).
 *
 * @since 0.1.0
 */
import { TestModel } from "@sessionflow/core"

const jokes = [
  "Why do programmers prefer dark mode? Because light attracts bugs.",
  "I told my computer I needed a break, and it said: no problem, I'll go to sleep."
]

const answer = (message: string): string => {
  const text = message.toLowerCase()
  if (text.includes("joke")) return `Here's one for you: ${jokes[text.length % jokes.length]}`
  if (/\bhelp\b/.test(text)) return "Of course! Tell me what you're working on and we'll sort it out together."
  if (/\b(thanks|thank you)\b/.test(text)) return "You're welcome — happy to help any time."
  return `Good question. Here's my short take on "${message.trim()}": start small, check the result, then iterate.`
}

export const offlineModel = TestModel.layer((request) =>
  request.agent === "Greeter"
    ? TestModel.text("Hello and welcome! I'm your assistant — nice to meet you. I'm here whenever you need a hand.")
    : TestModel.text(answer(request.lastUserMessage ?? ""))
)
