/**
 * The `Metrics` namespace of the public API (`index.ts`): the names of `layers/Metrics.ts` users
 * need, listed by name; the observer that derives them stays internal.
 */
export {
  costUsd,
  Endpoint,
  type EndpointOptions,
  eventsDropped,
  genAiOperationDuration,
  genAiTokenUsage,
  iterations,
  layer,
  layerPrometheus,
  MetricsEndpointError,
  modelCallDuration,
  modelCallSeconds,
  retries,
  tokens,
  toolCalls,
  turnDuration,
  turnSeconds,
  turns,
  turnsInFlight
} from "../layers/Metrics.ts"
