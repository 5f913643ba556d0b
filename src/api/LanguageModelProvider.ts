/**
 * The `LanguageModelProvider` namespace of the public API (`index.ts`): the names of
 * `layers/providers/LanguageModel.ts` users need, listed by name; its conversions of messages and
 * errors stay internal.
 */
export {
  fromLanguageModel,
  layer
} from "../layers/providers/LanguageModel.ts"
