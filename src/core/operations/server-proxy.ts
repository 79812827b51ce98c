import { X509Certificate } from 'node:crypto';
import { z } from 'zod';
import { atomically } from '../../store/atomic.js';
import type { Db } from '../../store/db.js';
import { nowIso } from '../../store/db.js';
import { BerthError, validationError } from '../../errors.js';
import { decodeCompose, parseCompose } from '../compose.js';
import { owned } from '../lookup.js';
import { proxySettingsOf, type ProxySettings } from '../model/proxy.js';
import { defineOperation, type OperationContext } from '../operation.js';
import { sensitive } from '../redact.js';
import { RECORD_ONLY_NOTE, type ServerEngine } from '../runtime.js';
import { flag, httpUrl, uuidParam } from '../validators.js';
import { READ, UPDATE } from './common.js';
import { displayStatus, serverOf, type ResourceRow } from './resource-common.js';

/** Coolify's proxy types: berth runs Caddy (or none); Traefik is refused by name. */
export const proxyTypeInput = z
  .string()
  .transform((v) => v.toLowerCase())
  .superRefine((v, ctx) => {
    if (v === 'caddy' || v === 'none') return;
    ctx.addIssue({ code: 'custom', message: v === 'traefik' ? 'berth runs Caddy as the proxy: use proxy_type "caddy" (or "none").' : 'Must be "caddy" or "none".' });
  })
  .transform((v) => v as ProxySettings['proxy_type'])
  .describe('caddy: berth runs a Caddy proxy on the server for the domains of its applications; none: no proxy.');

/** PEM certificates (a private ACME CA's root), each one parsed. */
const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const pemCertificates = z
  .string()
  .max(65_536)
  .refine((v) => {
    const blocks = v.match(PEM_BLOCK) ?? [];
    if (!blocks.length || v.replace(PEM_BLOCK, '').trim()) return false;
    try {
      for (const b of blocks) new X509Certificate(b);
      return true;
    } catch {
      return false;
    }
  }, 'Must be one or more PEM certificates (-----BEGIN CERTIFICATE----- ...).');

const proxySchema = z.object({
  proxy_type: z.enum(['caddy', 'none']),
  status: z.string().nullable().describe("The proxy container's state as the engine reports it (running, exited, ...); null when berth does not manage the server."),
  redirect_enabled: z.boolean(),
  redirect_url: z.string().nullable(),
  tls_issuer: z.enum(['acme', 'internal']).describe("berth: who signs https:// domains' certificates: ACME (Let's Encrypt, or acme_ca) or Caddy's internal CA (private names)."),
  acme_email: z.string().nullable(),
  acme_ca: z.string().nullable(),
  acme_ca_root: z.string().nullable().describe("The PEM root a private acme_ca's HTTPS is checked against; null: the system's roots."),
  configuration: sensitive(z.string().nullable().describe('The saved proxy compose file.')),
});

type ServerRow = Awaited<ReturnType<typeof owned<'servers'>>>;

async function proxyView({ runtime }: OperationContext, s: ServerRow): Promise<z.infer<typeof proxySchema>> {
  const settings = proxySettingsOf(s);
  const status = runtime.isLive(s) ? ((await runtime.proxyStatus(s.id)) ?? 'exited') : null;
  const { proxy_type, redirect_enabled, redirect_url, tls_issuer, acme_email, acme_ca, acme_ca_root, configuration } = settings;
  return { proxy_type, status, redirect_enabled, redirect_url, tls_issuer, acme_email, acme_ca, acme_ca_root, configuration };
}

/** Stores a server's proxy settings: the JSON read, merged and written in one transaction, so concurrent changes of different settings both land. */
export async function saveProxySettings(store: Db, serverId: number, patch: Partial<ProxySettings>): Promise<void> {
  await atomically(store, async (db) => {
    const s = await db.selectFrom('servers').select('proxy').where('id', '=', serverId).executeTakeFirstOrThrow();
    await db
      .updateTable('servers')
      .set({ proxy: JSON.stringify({ ...proxySettingsOf(s), ...patch }), updated_at: nowIso() })
      .where('id', '=', serverId)
      .execute();
  });
}

/** Applies saved settings to a running proxy; the settings stay saved when the engine cannot be reached. */
async function applyNow(ctx: OperationContext, s: ServerRow): Promise<void> {
  if (!ctx.runtime.isLive(s)) return;
  await ctx.runtime.syncProxy(s.id).catch((err) => ctx.logger.warn({ err: (err as Error).message, server: s.uuid }, 'could not apply the proxy settings'));
}

/** A proxy compose file: one service; its image, ports and environment; the host-isolation rules of any compose file. */
function checkConfiguration(raw: string, hostAccess: boolean): string {
  const yaml = decodeCompose(raw);
  let parsed: ReturnType<typeof parseCompose>;
  try {
    parsed = parseCompose(yaml);
  } catch (err) {
    const errors = err instanceof BerthError ? err.details.errors : undefined;
    if (errors?.docker_compose_raw) throw validationError({ configuration: errors.docker_compose_raw });
    throw err;
  }
  if (parsed.containers.length !== 1) throw validationError({ configuration: ['The proxy configuration has exactly one service (the proxy).'] });
  if (parsed.hostReach.length && !hostAccess) throw validationError({ configuration: parsed.hostReach });
  return yaml;
}

export const serverProxyOperations = [
  defineOperation({
    name: 'get_server_proxy',
    title: "Get a server's proxy",
    description: "A server's reverse proxy: proxy_type (caddy or none), its status as the engine reports it, redirect settings and TLS issuer. The saved compose configuration needs read:sensitive.",
    summary: "A server's proxy settings and its status from the engine.",
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => proxySchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/proxy' },
    async run(ctx, { uuid }) {
      return proxyView(ctx, await owned(ctx.db, 'servers', uuid, ctx.caller.teamId));
    },
  }),
  defineOperation({
    name: 'update_server_proxy',
    title: "Change a server's proxy",
    description:
      'Set proxy_type (caddy runs a Caddy proxy for the domains of the applications on the server; none removes it), redirect_enabled (http→https for https domains, and unknown hosts to redirect_url), and how https certificates are got: tls_issuer acme (acme_email; acme_ca and acme_ca_root for another or a private ACME CA) or internal. A running proxy picks the change up at once.',
    summary: "Change a server's proxy type, redirects or TLS issuer.",
    permission: 'write',
    toolset: 'servers',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        proxy_type: proxyTypeInput.optional(),
        redirect_enabled: flag.optional(),
        redirect_url: httpUrl.nullable().optional(),
        tls_issuer: z.enum(['acme', 'internal']).optional(),
        acme_email: z.email().max(254).nullable().optional(),
        acme_ca: httpUrl.nullable().optional(),
        acme_ca_root: pemCertificates.nullable().optional(),
      }),
    output: () => proxySchema,
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/servers/{uuid}/proxy' },
    unsupported: { generate_exact_labels: { hint: 'berth writes the proxy routes itself (no container labels)', accepts: [false] } },
    async run(ctx, { uuid, ...patch }) {
      const s = await owned(ctx.db, 'servers', uuid, ctx.caller.teamId);
      const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<ProxySettings>;
      await saveProxySettings(ctx.db, s.id, given);
      const now = await owned(ctx.db, 'servers', uuid, ctx.caller.teamId);
      await applyNow(ctx, now);
      return proxyView(ctx, now);
    },
  }),
  defineOperation({
    name: 'save_server_proxy_configuration',
    title: "Save a server's proxy configuration",
    description:
      "Save the proxy's compose file (plain or base64): one service whose image, ports and environment the proxy runs with (ports decide what it publishes; 80:80 and 443:443 by default). Checked by the host-isolation rules of any compose file. Takes effect at restart_server_proxy.",
    summary: "Save the proxy's compose file (image, ports, environment); restart the proxy to apply it.",
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam, configuration: z.string().min(1).max(100_000) }),
    output: () => proxySchema.extend({ message: z.string() }),
    annotations: UPDATE,
    http: { method: 'PUT', path: '/api/v1/servers/{uuid}/proxy/configuration' },
    async run(ctx, { uuid, configuration }) {
      const s = await owned(ctx.db, 'servers', uuid, ctx.caller.teamId);
      await saveProxySettings(ctx.db, s.id, { configuration: checkConfiguration(configuration, s.host_access === 1) });
      return { ...(await proxyView(ctx, await owned(ctx.db, 'servers', uuid, ctx.caller.teamId))), message: 'Proxy configuration saved.' };
    },
  }),
  defineOperation({
    name: 'restart_server_proxy',
    title: "Restart a server's proxy",
    description: "Start the server's proxy again from its configuration (image, ports) with every domain's route; it starts even when no domain needs it yet. Follow with get_server_proxy.",
    summary: "Recreate and start a server's proxy; follow with get_server_proxy.",
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => z.object({ message: z.string() }),
    annotations: { readOnly: false, destructive: false, idempotent: true, openWorld: true },
    http: { method: 'POST', path: '/api/v1/servers/{uuid}/proxy/restart' },
    async run(ctx, { uuid }) {
      const s = await owned(ctx.db, 'servers', uuid, ctx.caller.teamId);
      if (!ctx.runtime.isLive(s)) throw new BerthError('conflict', { message: RECORD_ONLY_NOTE });
      if (proxySettingsOf(s).proxy_type === 'none') throw validationError({ proxy_type: ['The server runs no proxy (proxy_type none): set proxy_type "caddy" first (update_server_proxy).'] });
      // Pulling an image can take minutes: the answer does not wait (Coolify's queued restart).
      void ctx.runtime.syncProxy(s.id, { start: true, recreate: true }).catch((err) => ctx.logger.warn({ err: (err as Error).message, server: s.uuid }, 'proxy restart failed'));
      return { message: 'Proxy restart queued.' };
    },
  }),
];

/**
 * Whether the proxy of a resource's server can answer its domains: the proxy container's state
 * as the engine says (running, exited, ...); null when it has no domains, its server runs no
 * proxy, or berth does not manage the server.
 */
export async function domainProxyStatus(ctx: OperationContext, r: { destination_id: number }, fqdn: string | null | undefined): Promise<string | null> {
  if (!fqdn) return null;
  const s = await ctx.db.selectFrom('destinations as d').innerJoin('servers as s', 's.id', 'd.server_id').selectAll('s').where('d.id', '=', r.destination_id).executeTakeFirstOrThrow();
  if (proxySettingsOf(s).proxy_type === 'none' || !ctx.runtime.isLive(s)) return null;
  return (await ctx.runtime.proxyStatus(s.id)) ?? 'exited';
}

/**
 * After a domain change: the server of a resource that runs reloads its proxy's routes now (one
 * config write and a `caddy reload`), not at the next deploy. One that does not run is routed at
 * its deploy. A proxy that cannot is logged and never fails the change (the next deploy retries).
 */
export async function routeAtOnce(ctx: OperationContext, r: Pick<ResourceRow, 'id' | 'destination_id' | 'status' | 'observed_status' | 'deleting'>): Promise<void> {
  if (!/^(running|restarting|degraded)/.test(displayStatus(r))) return;
  await routeServer(ctx, await serverOf(ctx.db, r));
  // An application's copies are routed by their own servers' proxies (additional destinations).
  const copies = await ctx.db.selectFrom('application_destinations as a').innerJoin('servers as s', 's.id', 'a.server_id').selectAll('s').where('a.resource_id', '=', r.id).execute();
  for (const s of copies) await routeServer(ctx, s);
}

/** One server's proxy reloads its routes from the records now; logged, never fails the change. */
export async function routeServer(ctx: Pick<OperationContext, 'runtime' | 'logger'>, s: ServerEngine & { uuid: string; proxy: string | null }): Promise<void> {
  if (proxySettingsOf(s).proxy_type === 'none' || !ctx.runtime.isLive(s)) return;
  await ctx.runtime.syncProxy(s.id, { signal: AbortSignal.timeout(30_000) }).catch((err) => ctx.logger.warn({ err: (err as Error).message, server: s.uuid }, 'could not route the changed domains'));
}
