/**
 * The `Gemini` namespace of the public API (`index.ts`): the names of `layers/providers/Gemini.ts`
 * users need, listed by name; its URL building stays internal.
 */
export {
  layer,
  make,
  type Options
} from "../layers/providers/Gemini.ts"
