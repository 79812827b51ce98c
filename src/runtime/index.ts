export * from './errors.js';
export * from './types.js';
export * from './engine.js';
export * from './volume-copy.js';
export { compareManifests, manifestOf, type Manifest, type ManifestEntry } from './tar-manifest.js';
export { demuxDockerStream, type StreamFrame } from './docker-stream.js';
