/**
 * The `Scripted` namespace of the public API (`index.ts`): the names of
 * `layers/providers/Scripted.ts` users need, listed by name; the chunks of one scripted response
 * stay internal.
 */
export {
  layer,
  make,
  type Script,
  ScriptedLog,
  type ScriptedResponse,
  type ScriptedToolCall
} from "../layers/providers/Scripted.ts"
