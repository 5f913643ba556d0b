/**
 * What an environment variable holding a credential looks like, by name or by value. No imports:
 * the installed `agent-loop` launcher loads this before anything else (`cli/launcher.ts`), and
 * `exec` withholds the same variables from commands (`exec.ts`).
 */

/**
 * Names of environment variables withheld from commands: any name containing one of these words
 * (`OPENAI_API_KEY`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`, `PGPASSFILE`, …), or
 * `PAT` and `DSN` as a whole word (`GH_PAT`, `SENTRY_DSN`). Deliberately broad: a variable a
 * command needed can be passed by the user, a leaked key cannot be taken back.
 */
export const SECRET_ENV_PATTERN = /KEY|TOKEN|SECRET|PASS|CRED|AUTH|PRIVATE|COOKIE|(?:^|_)(?:PAT|DSN)(?:_|$)/i

/**
 * Values withheld whatever their name: a URL with a password in it (`postgres://user:pw@host`),
 * and tokens in the well-known formats of OpenAI and Anthropic (`sk-`), GitHub (`ghp_`,
 * `github_pat_`, …), GitLab (`glpat-`), Slack (`xox?-`), AWS access key ids and Google API keys.
 */
export const SECRET_VALUE_PATTERN =
  /:\/\/[^/\s:@]+:[^/\s@]+@|^(?:sk-|sk_live_|rk_live_|gh[pousr]_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|AIza)/

/** Whether a variable looks like a credential, by its name or its value. */
export const looksSecret = (name: string, value: string): boolean => SECRET_ENV_PATTERN.test(name) || SECRET_VALUE_PATTERN.test(value)
