/**
 * OpenTelemetry export for the CLI, turned on by the standard environment variables:
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's base URL; `/v1/traces`, `/v1/metrics` and
 * `/v1/logs` are appended), `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or
 * `http/json`; `grpc` is not supported), `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SDK_DISABLED`.
 *
 * Without an endpoint nothing here loads: the exporters (`otlp.ts`) are imported only when one is
 * set, so start-up pays nothing for them.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Secrets } from "../../services/Secrets.ts"
import { fail } from "../terminal/failure.ts"

/** What the environment asks for, checked. */
export interface OtlpSettings {
  readonly endpoint: string
  readonly protocol: "http/protobuf" | "http/json"
  readonly headers: Readonly<Record<string, string>>
  /** Set when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names the service. */
  readonly defaultServiceName: string | undefined
}

/** The environment's telemetry settings: `undefined` when export is off, a message when a variable is wrong. */
export const fromEnv = (env: Readonly<Record<string, string | undefined>>): OtlpSettings | undefined | { readonly problem: string } => {
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
  if (endpoint === undefined || endpoint === "" || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined
  if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol)) {
    return { problem: `OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, not "${endpoint}"` }
  }
  const protocol = env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || "http/protobuf"
  if (protocol !== "http/protobuf" && protocol !== "http/json") {
    return { problem: `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: use http/protobuf or http/json${protocol === "grpc" ? " (gRPC is not)" : ""}` }
  }
  const headers: Record<string, string> = {}
  for (const pair of (env.OTEL_EXPORTER_OTLP_HEADERS ?? "").split(",")) {
    if (pair.trim() === "") continue
    const at = pair.indexOf("=")
    const name = at > 0 ? pair.slice(0, at).trim() : ""
    // the value may be a key: never shown
    if (name === "") return { problem: "OTEL_EXPORTER_OTLP_HEADERS must be name=value pairs separated by commas" }
    try {
      headers[name] = decodeURIComponent(pair.slice(at + 1).trim())
    } catch {
      return { problem: `OTEL_EXPORTER_OTLP_HEADERS: the value of ${name} is not URL-encoded correctly` }
    }
  }
  const named = (env.OTEL_SERVICE_NAME?.trim() ?? "") !== "" || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? "")
  return { endpoint, protocol, headers, defaultServiceName: named ? undefined : "agent-loop" }
}

/** Whether this process exports telemetry (the variables are read once, at start). */
export const exporting: boolean = (() => {
  const settings = fromEnv(process.env)
  return settings !== undefined && !("problem" in settings)
})()

/**
 * The OTLP exporters of spans, metrics and logs for the program it is provided to, or nothing
 * when export is off. Closing it sends what is left, within a short deadline, so a run that ends
 * is not held up by a collector that does not answer. A wrong variable fails the command with its
 * name; the header values are registered as secrets.
 */
export const layer = (env: Readonly<Record<string, string | undefined>> = process.env) => {
  const settings = fromEnv(env)
  if (settings === undefined) return Layer.empty
  if ("problem" in settings) return Layer.effectDiscard(fail(settings.problem))
  return Layer.unwrap(Effect.gen(function*() {
    ;(yield* Secrets).add(Object.values(settings.headers))
    const { layer } = yield* Effect.promise(() => import("./otlp.ts"))
    return layer(settings)
  }))
}
