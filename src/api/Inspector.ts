/**
 * The `Inspector` namespace of the public API (`index.ts`): the names of `inspector/Inspector.ts`
 * users need, listed by name; the page's cookie and its paging stay internal.
 */
export {
  type ClusterView,
  exportHtml,
  type ExportOptions,
  layer,
  makeToken,
  type Options,
  TOKEN_HEADER,
  url
} from "../inspector/Inspector.ts"
