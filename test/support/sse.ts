/**
 * A client of a server-sent event stream, as the tests read one: it connects, waits for the
 * server's first comment (`: connected`, sent once it has subscribed), then collects the frames.
 */

/** A server-sent event as it arrived. */
export interface SseFrame {
  readonly id?: string
  readonly event?: string
  readonly data: string
}

/**
 * Connects to `url` and returns once the server has subscribed; `until` reads until `enough`
 * holds (deadline `deadlineMs` from the connection, 30 s unless told; the connection is dropped if
 * reading fails), `close` drops it.
 */
export const openEventStream = async (url: string, headers: Record<string, string>, deadlineMs = 30_000) => {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), deadlineMs)
  const response = await fetch(url, { headers, signal: controller.signal })
  if (!response.headers.get("content-type")?.startsWith("text/event-stream")) throw new Error(`not an event stream: ${response.status}`)
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  const frames: Array<SseFrame> = []
  let buffer = ""
  let connected = false
  const pump = async (done: () => boolean) => {
    while (!done()) {
      const chunk = await reader.read()
      if (chunk.done) throw new Error("the event stream ended")
      buffer += chunk.value
      let end: number
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        if (block === ": connected") connected = true
        const fields = Object.fromEntries(
          block.split("\n").filter((l) => !l.startsWith(":")).map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 2)])
        )
        if (fields.data !== undefined) frames.push(fields as unknown as SseFrame)
      }
    }
  }
  const close = () => {
    clearTimeout(timer)
    controller.abort()
  }
  try {
    await pump(() => connected)
  } catch (error) {
    close()
    throw error
  }
  return {
    frames,
    until: async (enough: (frames: Array<SseFrame>) => boolean) => {
      try {
        await pump(() => enough(frames))
        return frames
      } catch (error) {
        close()
        throw error
      }
    },
    close
  }
}
