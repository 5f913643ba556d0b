/**
 * The `SandboxMacos` namespace of the public API (`index.ts`): the names of
 * `layers/sandbox/SandboxMacos.ts` users need, listed by name; the Seatbelt profile it compiles
 * stays internal.
 */
export {
  layer,
  type MacosOptions,
  make
} from "../layers/sandbox/SandboxMacos.ts"
