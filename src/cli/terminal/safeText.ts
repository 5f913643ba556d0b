/**
 * Text from outside (the model, tool arguments and results, server errors, file paths) made safe
 * for a terminal: escape sequences and control characters removed, so that nothing a model or a
 * file says can move the cursor, rewrite what was shown, retitle the window or hide text.
 */

/** ESC-introduced sequences: CSI (`ESC [ … final`), OSC/DCS/SOS/PM/APC strings (to BEL or ST, or the end), any other `ESC x`. */
const ESCAPES = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b[\]PX^_][\s\S]*?(?:\u0007|\u001b\\|$)|\u001b[\s\S]?/g

/** C0 controls but tab and newline, DEL, and the C1 controls (U+0080–U+009F, which include the 8-bit CSI). */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g

/**
 * `text` without escape sequences or control characters; tabs and newlines stay (`\r\n` becomes
 * `\n`). A sequence split across two streamed pieces cannot survive either: ESC itself is always
 * removed, so what is left of it is plain text.
 */
export const clean = (text: string): string => text.replace(/\r\n/g, "\n").replace(ESCAPES, "").replace(CONTROLS, "")
