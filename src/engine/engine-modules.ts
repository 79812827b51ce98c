/**
 * The engine client, the SSH transport and the volume copier pull in undici, ssh2 and node-tar;
 * `berth mcp` starts for every desktop session and mostly never talks to an engine, so they load
 * on first use.
 */
let engineModules: Promise<{ engine: typeof import('./engine-client.js'); sync: typeof import('./volume-sync.js'); connections: typeof import('./connections.js') }> | undefined;
export const loadEngineModules = () =>
  (engineModules ??= Promise.all([import('./engine-client.js'), import('./volume-sync.js'), import('./connections.js')]).then(([engine, sync, connections]) => ({ engine, sync, connections })));
