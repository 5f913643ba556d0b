/**
 * The `ModelOptions` namespace of the public API (`index.ts`): the names of
 * `domain/ModelOptions.ts` users need, listed by name; how the loop resolves them for a call and
 * how the wires read them stay internal.
 */
export {
  merge,
  ModelOptions,
  Reasoning,
  ReasoningEffort
} from "../domain/ModelOptions.ts"
