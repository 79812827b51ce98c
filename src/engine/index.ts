export * from './engine-errors.js';
export * from './types.js';
export * from './engine-client.js';
export * from './volume-copy.js';
export { compareManifests, manifestOf, type Manifest, type ManifestEntry } from './tar-manifest.js';
export { demuxDockerStream, type StreamFrame } from './docker-stream.js';
