/**
 * Where a provider's credential found in the environment may be sent: its vendor's own hosts
 * only. A key is sent elsewhere (a local server, a proxy, a mock) only when it is given or its
 * variable named explicitly, so that a key exported for one service never reaches another
 * unasked. Plain functions of URLs, without Effect, so the CLI can ask them before loading any
 * provider.
 */

/** The API roots whose hosts are their providers' own. */
export const OPENAI_BASE_URL = "https://api.openai.com/v1"
export const ANTHROPIC_BASE_URL = "https://api.anthropic.com"
export const GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"

/** Azure OpenAI's resource hosts (`RESOURCE.openai.azure.com`, and those of AI Foundry). */
export const AZURE_DOMAINS: ReadonlyArray<string> = [".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"]
/** AWS's hosts: Bedrock's regional endpoints and VPC endpoints. */
export const AWS_DOMAINS: ReadonlyArray<string> = [".amazonaws.com", ".amazonaws.com.cn"]
/** Google's API hosts: Vertex AI's regional, multi-region and Private Service Connect endpoints. */
export const GOOGLE_DOMAINS: ReadonlyArray<string> = [".googleapis.com"]

const parse = (url: string): URL | undefined => {
  try {
    return new URL(url)
  } catch {
    return undefined
  }
}

/** Whether `url` has the origin (scheme, host and port) of `home`: plain HTTP to the same host is another place. */
export const sameOrigin = (home: string) => (url: string): boolean => {
  const there = parse(url)
  return there !== undefined && there.origin === parse(home)?.origin
}

/** Whether `url` is HTTPS to a host under one of `domains` (each given with its leading dot). */
export const httpsUnder = (domains: ReadonlyArray<string>) => (url: string): boolean => {
  const there = parse(url)
  return there !== undefined && there.protocol === "https:" && domains.some((domain) => there.hostname.endsWith(domain))
}

/** The origin of a URL as a person reads it (`http://127.0.0.1:8080`), or the URL itself when it is none. */
export const originOf = (url: string): string => parse(url)?.origin ?? url
