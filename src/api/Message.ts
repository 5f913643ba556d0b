/**
 * The `Message` namespace of the public API (`index.ts`): the names of `domain/Message.ts` users
 * need, listed by name; the helpers of the loop and the wire formats (image checks and sizes,
 * provider blocks, rune counts) stay internal.
 */
export {
  assistant,
  AssistantMessage,
  Content,
  ContentPart,
  hasImages,
  image,
  ImageDataPart,
  ImagePart,
  imageUrl,
  ImageUrlPart,
  isImage,
  Message,
  ProviderBlock,
  system,
  SystemMessage,
  text,
  textOf,
  TextPart,
  ToolCall,
  toolResult,
  ToolResultMessage,
  user,
  UserMessage
} from "../domain/Message.ts"
