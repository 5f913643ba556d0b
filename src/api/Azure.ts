/**
 * The `Azure` namespace of the public API (`index.ts`): the names of `layers/providers/Azure.ts`
 * users need, listed by name; its URL building stays internal.
 */
export {
  type AzureApi,
  layer,
  make,
  type Options
} from "../layers/providers/Azure.ts"
