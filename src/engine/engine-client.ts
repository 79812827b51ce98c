/**
 * The Docker Engine API client, by area in `docker/` (transport, images, networks and volumes,
 * containers, exec and archives); the rest of berth imports it from here.
 */
export {
  type CallOptions,
  compareApiVersions,
  DEFAULT_TIMEOUTS,
  type EngineClientOptions,
  type EngineEvent,
  type EngineTimeouts,
  goFileModeToUnix,
  labelFilter,
  MAX_API_VERSION,
  MIN_API_VERSION,
  parseEndpoint,
  splitImageRef,
} from './docker/transport.js';
export { collectExec, EngineClient, ensureImage } from './docker/client.js';
