/**
 * Application Default Credentials for tests, as Google users have them: a credentials file for
 * `GOOGLE_APPLICATION_CREDENTIALS`. It is a workload identity federation file
 * (`external_account`), whose token endpoint (`token_url`) the file itself names, so Google's
 * `google-auth-library` exchanges its subject token at a loopback server and gets an access token
 * back, by the same code path as on a real machine. (A service account file's token endpoint is
 * fixed in the library, whatever its `token_uri` says, so it cannot be pointed at a loopback.)
 *
 * And a service account file of a universe other than Google's default, for which the library signs
 * its own access token (a JWT with the scopes) with the file's key instead of asking a token
 * endpoint: the loopback checks the signature with the public key.
 */
import * as crypto from "node:crypto"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import type { ReceivedRequest, WireResponse } from "./wireServer.ts"

/** The access token the loopback token endpoint issues. */
export const ACCESS_TOKEN = "ya29.a0-loopback-access-token-value"

/** The token endpoint's path on the loopback server. */
export const TOKEN_PATH = "/v1/token"

/** The token endpoint's answer: an access token for an hour. */
export const tokenResponse: WireResponse = {
  headers: { "content-type": "application/json" },
  body: [JSON.stringify({ access_token: ACCESS_TOKEN, issued_token_type: "urn:ietf:params:oauth:token-type:access_token", token_type: "Bearer", expires_in: 3600 })]
}

/** Whether a request is a token exchange. */
export const isTokenRequest = (request: ReceivedRequest): boolean => request.path === TOKEN_PATH

/** Writes the credentials file (and its subject token) for a token endpoint on `serverUrl`; removed with the scope. */
export const credentialsFile = (serverUrl: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "agent-loop-adc-"))
      const subject = nodePath.join(dir, "subject-token")
      fs.writeFileSync(subject, "subject-token-from-the-identity-provider")
      const file = nodePath.join(dir, "application_default_credentials.json")
      fs.writeFileSync(file, JSON.stringify({
        type: "external_account",
        audience: "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/loopback",
        subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
        token_url: `${serverUrl}${TOKEN_PATH}`,
        credential_source: { file: subject }
      }))
      return { dir, file }
    }),
    ({ dir }) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map(({ file }) => file))

/** The project a generated service account file names. */
export const SERVICE_ACCOUNT_PROJECT = "sa-project"

/**
 * Writes a service account file with a fresh RSA key (removed with the scope), and gives its path
 * and a check of a bearer token: whether it is a JWT the file's key signed for the account, with
 * the cloud-platform scope.
 */
export const serviceAccountFile = Effect.acquireRelease(
  Effect.sync(() => {
    const { privateKey, publicKey } = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 })
    const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "agent-loop-sa-"))
    const file = nodePath.join(dir, "service-account.json")
    const email = `agent@${SERVICE_ACCOUNT_PROJECT}.iam.gserviceaccount.com`
    fs.writeFileSync(file, JSON.stringify({
      type: "service_account",
      project_id: SERVICE_ACCOUNT_PROJECT,
      private_key_id: "key-1",
      private_key: privateKey.export({ type: "pkcs8", format: "pem" }),
      client_email: email,
      client_id: "1",
      universe_domain: "loopback.test"
    }))
    const signedByIt = (authorization: string | undefined): boolean => {
      const [head, body, signature] = (authorization ?? "").replace(/^Bearer /, "").split(".")
      if (head === undefined || body === undefined || signature === undefined) return false
      const claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8"))
      return crypto.verify("RSA-SHA256", Buffer.from(`${head}.${body}`), publicKey, Buffer.from(signature, "base64url")) &&
        claims.iss === email && claims.scope === "https://www.googleapis.com/auth/cloud-platform"
    }
    return { dir, file, signedByIt }
  }),
  ({ dir }) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)
