/**
 * The OTLP exporters behind `telemetry.ts`, loaded only when an endpoint is set: `effect`'s own
 * (`effect/observability`), over `fetch`, in JSON or protobuf.
 */
import * as Layer from "effect/Layer"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Otlp from "effect/observability/Otlp"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import type { OtlpSettings } from "./telemetry.ts"

/** How long closing the exporters may take to send what is left. */
const shutdownTimeout = "3 seconds"

/** Spans, metrics and logs to `settings.endpoint`. */
export const layer = (settings: OtlpSettings) =>
  Otlp.layer({
    baseUrl: settings.endpoint,
    headers: settings.headers,
    ...(settings.defaultServiceName === undefined ? {} : { resource: { serviceName: settings.defaultServiceName } }),
    // keep the terminal's logger: OTLP gets the logs as well
    loggerMergeWithExisting: true,
    shutdownTimeout
  }).pipe(
    Layer.provide(settings.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    Layer.provide(FetchHttpClient.layer)
  )
