/**
 * The `Bedrock` namespace of the public API (`index.ts`): the names of
 * `layers/providers/Bedrock.ts` users need, listed by name; the list of AWS packages it loads stays
 * internal.
 */
export {
  type Credentials,
  layer,
  make,
  type Options
} from "../layers/providers/Bedrock.ts"
