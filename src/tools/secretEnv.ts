/**
 * What an environment variable holding a credential looks like, by name or by value, and the
 * environment without them that `exec` and hook scripts run with (`scrubbedEnv`). Imports nothing
 * but import-free code: the installed `agent-loop` launcher loads this before anything else
 * (`cli/launcher.ts`).
 */
import { URL_CREDENTIAL } from "../domain/urlCredentials.ts"

/**
 * Names of environment variables withheld from commands: any name containing one of these words
 * (`OPENAI_API_KEY`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`, `PGPASSFILE`, …), or
 * `PAT` and `DSN` as a whole word (`GH_PAT`, `SENTRY_DSN`). Deliberately broad: a variable a
 * command needed can be passed by the user, a leaked key cannot be taken back.
 */
export const SECRET_ENV_PATTERN = /KEY|TOKEN|SECRET|PASS|CRED|AUTH|PRIVATE|COOKIE|(?:^|_)(?:PAT|DSN)(?:_|$)/i

/**
 * Values withheld whatever their name: a URL with a credential in it (`postgres://user:pw@host`,
 * `redis://:pw@host`, `https://TOKEN@host`; see `domain/urlCredentials.ts`), and tokens in the
 * well-known formats of OpenAI and Anthropic (`sk-`), GitHub (`ghp_`, `github_pat_`, …), GitLab
 * (`glpat-`), Slack (`xox?-`), AWS access key ids and Google API keys.
 */
export const SECRET_VALUE_PATTERN = new RegExp(
  `${URL_CREDENTIAL.source}|^(?:sk-|sk_live_|rk_live_|gh[pousr]_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|AIza)`
)

/** Whether a variable looks like a credential, by its name or its value. */
export const looksSecret = (name: string, value: string): boolean => SECRET_ENV_PATTERN.test(name) || SECRET_VALUE_PATTERN.test(value)

/** The part of the program's `Secrets` the rule needs: whether a text holds a known secret. */
export interface KnownSecrets {
  readonly scrub: (text: string) => string
}

/**
 * The rule environment variables are withheld by: the name looks like a credential
 * (`SECRET_ENV_PATTERN`), the value does (`SECRET_VALUE_PATTERN`), or the value contains a secret
 * the program registered in `Secrets` (an API key the CLI read, an MCP server's token), whatever
 * the variable is called.
 */
export const isSecretEnv = (name: string, value: string, secrets?: KnownSecrets): boolean =>
  looksSecret(name, value) || (secrets !== undefined && secrets.scrub(value) !== value)

/** Options of `scrubbedEnv`. */
export interface ScrubbedEnvOptions {
  /** The program's known secrets; without them only names and shapes count. */
  readonly secrets?: KnownSecrets
  /** Variables given even though they look like credentials: those a hook says it needs. */
  readonly pass?: Iterable<string>
}

/**
 * `env` without every variable `isSecretEnv` withholds, but with those named in `pass`: the one
 * environment `exec` and hook scripts run with, so whatever they print (and the model may read)
 * holds no credential unless one was asked for by name.
 */
export const scrubbedEnv = (
  env: Readonly<Record<string, string | undefined>>,
  options: ScrubbedEnvOptions = {}
): Record<string, string> => {
  const pass = new Set(options.pass ?? [])
  const kept: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue
    if (pass.has(name) || !isSecretEnv(name, value, options.secrets)) kept[name] = value
  }
  return kept
}
