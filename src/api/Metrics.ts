/**
 * The `Metrics` namespace of the public API (`index.ts`): the names of `layers/Metrics.ts` users
 * need, listed by name; the observer that derives them stays internal.
 */
export {
  costUsd,
  Endpoint,
  type EndpointOptions,
  eventsDropped,
  iterations,
  layer,
  layerPrometheus,
  MetricsEndpointError,
  modelCallDuration,
  retries,
  tokens,
  toolCalls,
  turnDuration,
  turns,
  turnsInFlight
} from "../layers/Metrics.ts"
