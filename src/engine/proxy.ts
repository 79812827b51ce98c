import type { Db } from '../store/db.js';
import type { ApplicationConfig } from '../core/model/application.js';
import type { ServiceConfig } from '../core/model/service.js';
import { composePort, parseCompose } from '../core/compose.js';
import { parseDomains } from '../core/domains.js';
import { DEFAULT_PROXY_PORTS, PROXY_CONTAINER, PROXY_NETWORK, proxySettingsOf, type ProxyRoute, type ProxyRunSpec, type ProxySettings } from '../core/model/proxy.js';
import type { EngineClient } from './engine-client.js';
import { NotFoundError } from './engine-errors.js';
import { LABEL_MANAGED } from './plan.js';
import { previewName } from '../core/model/preview.js';
import { ACME_CA_ROOT_FILE, CADDY_CONFIG_FILE, caddyConfig } from './caddy-config.js';

/** Marks the proxy container with its server, so orphan listings and cleanups know it. */
export const LABEL_PROXY = 'berth.proxy';
/** Certificates and the internal CA survive a restart of the proxy (Caddy's data directory). */
const PROXY_DATA_VOLUME = 'berth-proxy-data';

/** The first port of a comma-separated list, or the container's usual HTTP port. */
const firstPort = (ports: string | null | undefined) => Number((ports ?? '').split(',')[0]) || 80;

/**
 * Every domain of the resources on a server's destinations, as routes to their containers; an
 * application's copy on this server (an additional destination) is routed here too, to its own
 * container of the same name (docs/decisions/additional-destinations.md).
 */
export async function proxyRoutes(db: Db, serverId: number): Promise<ProxyRoute[]> {
  const rows = await db
    .selectFrom('resources as r')
    .innerJoin('destinations as d', 'd.id', 'r.destination_id')
    .select(['r.uuid', 'r.kind', 'r.config'])
    .where((eb) => eb.or([eb('d.server_id', '=', serverId), eb('r.id', 'in', eb.selectFrom('application_destinations').select('resource_id').where('server_id', '=', serverId))]))
    .where('r.kind', 'in', ['application', 'service'])
    .where('r.deleting', 'is', null)
    .orderBy('r.id')
    .execute();
  const out: ProxyRoute[] = [];
  const seen = new Set<string>();
  const add = (fqdn: string | null | undefined, upstream: string, defaultPort: number, sw: { is_gzip_enabled?: boolean; is_stripprefix_enabled?: boolean }) => {
    for (const d of parseDomains(fqdn)) {
      // One route per scheme, host and prefix: the oldest resource keeps a domain the team shares.
      const key = `${d.scheme}://${d.host}${d.path}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ scheme: d.scheme, host: d.host, path: d.path, upstream, port: d.port ?? defaultPort, gzip: sw.is_gzip_enabled ?? true, stripPrefix: sw.is_stripprefix_enabled ?? true });
    }
  };
  for (const r of rows) {
    if (r.kind === 'application') {
      const c = JSON.parse(r.config) as ApplicationConfig;
      add(c.fqdn, r.uuid, firstPort(c.ports_exposes), c);
      // A dockercompose application routes as a service: each compose service's domains to its container.
      for (const k of c.compose?.containers ?? []) {
        const fqdn = c.compose_domains?.[k.name];
        if (fqdn) add(fqdn, `${r.uuid}-${k.name}`, k.ports.length ? composePort(k.ports[0]!).containerPort : firstPort(c.ports_exposes), c);
      }
    } else {
      const c = JSON.parse(r.config) as ServiceConfig;
      for (const k of c.containers) {
        const part = c.parts?.[k.name];
        if (part?.fqdn) add(part.fqdn, `${r.uuid}-${k.name}`, k.ports.length ? composePort(k.ports[0]!).containerPort : 80, part);
      }
    }
  }
  // Previews last: a domain an application or service answers to keeps its route (docs/decisions/previews.md).
  const previews = await db
    .selectFrom('application_previews as p')
    .innerJoin('resources as r', 'r.id', 'p.resource_id')
    .innerJoin('destinations as d', 'd.id', 'r.destination_id')
    .select(['r.uuid', 'r.config', 'p.pull_request_id', 'p.fqdn'])
    .where('d.server_id', '=', serverId)
    .where('r.deleting', 'is', null)
    .where('p.image_tag', 'is not', null)
    .orderBy('p.id')
    .execute();
  for (const p of previews) {
    const c = JSON.parse(p.config) as ApplicationConfig;
    add(p.fqdn, previewName(p.uuid, p.pull_request_id), firstPort(c.ports_exposes), c);
  }
  return out;
}

/** How the proxy runs: the saved compose configuration's one service, or the defaults. */
export function proxyRunSpec(s: ProxySettings, defaultImage: string): ProxyRunSpec {
  if (!s.configuration) return { image: defaultImage, ports: DEFAULT_PROXY_PORTS, environment: {} };
  const [c] = parseCompose(s.configuration).containers;
  return { image: c?.image || defaultImage, ports: c?.ports.length ? c.ports : DEFAULT_PROXY_PORTS, environment: c?.environment ?? {} };
}

/** The proxy container's state as its engine reports it (running, exited, ...), or null when there is none. */
export async function proxyState(engine: EngineClient, signal?: AbortSignal): Promise<string | null> {
  try {
    return (await engine.inspectContainer(PROXY_CONTAINER, { signal })).State.Status;
  } catch (err) {
    if (err instanceof NotFoundError) return null;
    throw err;
  }
}

export interface SyncOptions {
  /** Start the proxy even when no domain needs it yet (proxy/restart). */
  start?: boolean;
  /** Replace the container (a new image, ports or environment take effect). */
  recreate?: boolean;
  /** The image when the configuration names none (BERTH_PROXY_IMAGE). */
  defaultImage: string;
  signal?: AbortSignal;
  log?: (line: string) => Promise<void>;
}

/**
 * Makes a server's proxy match the records: with proxy_type none it is removed (its data volume
 * stays); otherwise it runs once a domain needs it (or `start`), on its own network, which every
 * routed container joins (and an unrouted one leaves), and its Caddy config is rewritten and
 * reloaded in place, without dropping connections.
 */
export async function syncProxy(db: Db, engine: EngineClient, serverId: number, o: SyncOptions): Promise<void> {
  const server = await db.selectFrom('servers').select(['uuid', 'proxy']).where('id', '=', serverId).executeTakeFirstOrThrow();
  const settings = proxySettingsOf(server);
  const log = o.log ?? (async () => undefined);
  const signal = o.signal;
  const state = await proxyState(engine, signal);
  if (settings.proxy_type === 'none') {
    if (state !== null && (await engine.removeContainer(PROXY_CONTAINER, { force: true, signal }))) await log('proxy removed (proxy_type none)');
    return;
  }
  const routes = await proxyRoutes(db, serverId);
  if (state === null && !routes.length && !o.start) return;
  await ensureNetwork(engine, signal);
  await joinRouted(engine, new Set(routes.map((r) => r.upstream)), signal);
  const config = JSON.stringify(caddyConfig(routes, settings), null, 1);
  const { fileStoragesTar } = await import('./file-tar.js');
  const files = [{ path: CADDY_CONFIG_FILE, content: config, isDirectory: false }];
  if (settings.acme_ca_root) files.push({ path: ACME_CA_ROOT_FILE, content: settings.acme_ca_root, isDirectory: false });
  const write = () => engine.putArchive(PROXY_CONTAINER, '/', fileStoragesTar(files), { signal });
  if (state === null || o.recreate) {
    const run = proxyRunSpec(settings, o.defaultImage);
    const { ensureImage } = await import('./engine-client.js');
    await ensureImage(engine, run.image, { signal });
    await engine.removeContainer(PROXY_CONTAINER, { force: true, signal });
    await engine.createContainer(
      PROXY_CONTAINER,
      {
        image: run.image,
        cmd: ['caddy', 'run', '--config', CADDY_CONFIG_FILE],
        env: Object.entries(run.environment).map(([k, v]) => `${k}=${v}`),
        ports: run.ports.map(composePort),
        volumes: [{ volume: PROXY_DATA_VOLUME, target: '/data' }],
        networkMode: PROXY_NETWORK,
        restartPolicy: { name: 'unless-stopped' },
        labels: { [LABEL_MANAGED]: 'true', [LABEL_PROXY]: server.uuid },
      },
      { signal },
    );
    await write();
    await engine.startContainer(PROXY_CONTAINER, { signal });
    await log(`proxy started from ${run.image} (${run.ports.join(', ')}) with ${routes.length} route(s)`);
    return;
  }
  await write();
  if (state !== 'running') {
    await engine.startContainer(PROXY_CONTAINER, { signal });
    await log(`proxy started with ${routes.length} route(s)`);
    return;
  }
  const { collectExec } = await import('./engine-client.js');
  const r = await collectExec(await engine.exec(PROXY_CONTAINER, ['caddy', 'reload', '--config', CADDY_CONFIG_FILE, '--force'], { signal }));
  if (r.exitCode !== 0) throw new Error(`the proxy refused its new routes: ${(r.stderr || r.stdout).trim().slice(-500)}`);
  await log(`proxy routes reloaded (${routes.length} route(s))`);
}

async function ensureNetwork(engine: EngineClient, signal?: AbortSignal): Promise<void> {
  try {
    await engine.inspectNetwork(PROXY_NETWORK, { signal });
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    await engine.createNetwork(PROXY_NETWORK, { labels: { [LABEL_MANAGED]: 'true' }, signal });
  }
}

/** Routed containers join the proxy's network; berth's containers no route names leave it (others an operator put there stay). */
async function joinRouted(engine: EngineClient, upstreams: ReadonlySet<string>, signal?: AbortSignal): Promise<void> {
  const net = await engine.inspectNetwork(PROXY_NETWORK, { signal });
  const members = new Set(Object.values((net.Containers ?? {}) as Record<string, { Name?: string }>).map((c) => c.Name ?? ''));
  for (const name of upstreams) {
    if (members.has(name)) continue;
    try {
      await engine.connectNetwork(PROXY_NETWORK, name, { signal });
    } catch (err) {
      // Not deployed yet: it joins at its deploy.
      if (!(err instanceof NotFoundError)) throw err;
    }
  }
  for (const name of members) {
    if (name === PROXY_CONTAINER || upstreams.has(name)) continue;
    const labels = await engine
      .inspectContainer(name, { signal })
      .then((c) => c.Config.Labels ?? {})
      .catch(() => ({}) as Record<string, string>);
    if (labels[LABEL_MANAGED] === 'true') await engine.disconnectNetwork(PROXY_NETWORK, name, { signal });
  }
}
