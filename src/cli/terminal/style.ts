/**
 * Terminal colours: ANSI styles on a TTY, plain text otherwise or when `NO_COLOR` is set
 * (https://no-color.org).
 */

/** The styles the renderer uses; each is the identity when colours are off. */
export interface Style {
  readonly dim: (text: string) => string
  readonly bold: (text: string) => string
  readonly red: (text: string) => string
  readonly green: (text: string) => string
  readonly yellow: (text: string) => string
  readonly cyan: (text: string) => string
  /** Whether these styles colour at all. */
  readonly enabled: boolean
}

const ansi = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`

const plain = (text: string) => text

/** Styles for a stream: coloured only when it is a TTY and `NO_COLOR` is unset or empty. */
export const styleFor = (isTTY: boolean, env: NodeJS.ProcessEnv = process.env): Style => {
  const noColor = env["NO_COLOR"] !== undefined && env["NO_COLOR"] !== ""
  if (!isTTY || noColor) return { dim: plain, bold: plain, red: plain, green: plain, yellow: plain, cyan: plain, enabled: false }
  return {
    dim: ansi(2, 22),
    bold: ansi(1, 22),
    red: ansi(31, 39),
    green: ansi(32, 39),
    yellow: ansi(33, 39),
    cyan: ansi(36, 39),
    enabled: true
  }
}
