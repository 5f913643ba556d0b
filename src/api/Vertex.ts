/**
 * The `Vertex` namespace of the public API (`index.ts`): the names of `layers/providers/Vertex.ts`
 * users need, listed by name; its URLs, request body and publisher choice stay internal.
 */
export {
  type AuthHeaders,
  type GoogleAuthClient,
  layer,
  make,
  type Options,
  type Publisher
} from "../layers/providers/Vertex.ts"
