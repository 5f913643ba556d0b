/**
 * The `FileHistoryDir` namespace of the public API (`index.ts`): the names of
 * `layers/FileHistoryDir.ts` users need, listed by name; its default limits are named in
 * `FileHistoryDirOptions`.
 */
export {
  type FileHistoryDirOptions,
  layer,
  make
} from "../layers/FileHistoryDir.ts"
