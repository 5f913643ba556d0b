/**
 * Telling the user something waits for them when they are looking elsewhere: the chat asks the
 * terminal for focus reports (`CSI ?1004h`: it then sends `CSI I` on focus, `CSI O` on blur) and,
 * when a turn ends or a question waits while the terminal is not focused — or when it never said
 * (focus unknown) — sends a notification: OSC 9 where the terminal is known to show it (iTerm2,
 * WezTerm, ghostty, kitty), OSC 777 on VTE terminals and foot, else the bell. Inside tmux or
 * screen, the bell (they pass it on; an OSC would need wrapping).
 */

/** Focus reports on and off. */
export const FOCUS_ON = "\u001b[?1004h"
export const FOCUS_OFF = "\u001b[?1004l"

/** How a notification is sent. */
export type Method = "osc9" | "osc777" | "bell"

/** The method the terminal of `env` is known to support. */
export const methodFor = (env: NodeJS.ProcessEnv): Method => {
  if (env["TMUX"] !== undefined || (env["TERM"] ?? "").startsWith("screen")) return "bell"
  const program = env["TERM_PROGRAM"] ?? ""
  if (["iTerm.app", "WezTerm", "ghostty"].includes(program) || env["KITTY_WINDOW_ID"] !== undefined) return "osc9"
  if (env["VTE_VERSION"] !== undefined || (env["TERM"] ?? "").startsWith("foot")) return "osc777"
  return "bell"
}

/** The bytes of a notification saying `message` (control characters taken out of it). */
export const sequence = (method: Method, message: string): string => {
  const text = message.replaceAll(/[\u0000-\u001f\u007f-\u009f;]/g, " ").slice(0, 200)
  switch (method) {
    case "osc9":
      return `\u001b]9;${text}\u0007`
    case "osc777":
      return `\u001b]777;notify;agent-loop;${text}\u0007`
    case "bell":
      return "\u0007"
  }
}

/** A notifier: focus as last reported, and `notify`, which sends only when the terminal is not (known to be) focused. */
export interface Notifier {
  readonly focused: (focused: boolean) => void
  readonly notify: (message: string) => void
}

/** A notifier writing to `out` (stderr's terminal) with the method of `env`. */
export const make = (out: { write: (text: string) => unknown }, env: NodeJS.ProcessEnv): Notifier => {
  const method = methodFor(env)
  let focus: boolean | undefined
  return {
    focused: (focused) => {
      focus = focused
    },
    notify: (message) => {
      if (focus !== true) out.write(sequence(method, message))
    }
  }
}
