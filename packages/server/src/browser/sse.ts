/**
 * Reads a `text/event-stream` response body as it arrives (EventSource
 * cannot POST): calls `onEvent` with each event's name and data.
 */
export interface ServerSentEvent {
  readonly event: string
  readonly data: string
}

export const readEvents = async (
  body: ReadableStream<Uint8Array>,
  onEvent: (event: ServerSentEvent) => void
): Promise<void> => {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n")
    let end = buffer.indexOf("\n\n")
    while (end !== -1) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let event = "message"
      const data: Array<string> = []
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim()
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
      }
      if (data.length > 0) onEvent({ event, data: data.join("\n") })
      end = buffer.indexOf("\n\n")
    }
  }
}
