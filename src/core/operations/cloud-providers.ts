import { z } from 'zod';
import { notFound, validationError } from '../../errors.js';
import { type CloudCall, type CloudProvider, cloudList, PROVIDER_NAMES } from '../cloud-api.js';
import { defineOperation, type OperationContext } from '../operation.js';
import { TargetGuard } from '../outbound-guard.js';
import { uuidParam } from '../validators.js';
import { READ } from './common.js';

/** The team's token of this provider named by Coolify's query field (its deprecated alias too); another provider's or team's is the same 404. */
export async function cloudCall(ctx: Pick<OperationContext, 'db' | 'caller' | 'config'>, provider: CloudProvider, uuid: string): Promise<CloudCall> {
  const t = await ctx.db.selectFrom('cloud_tokens').select(['token', 'provider']).where('uuid', '=', uuid).where('team_id', '=', ctx.caller.teamId).executeTakeFirst();
  if (!t || t.provider !== provider) throw notFound();
  return { guard: new TargetGuard(ctx.config.outboundAllowedTargets), baseUrl: ctx.config.cloudApiUrls[provider], provider, token: t.token };
}

interface Listing {
  provider: CloudProvider;
  /** Coolify's path segment and berth's tool name part. */
  route: string;
  what: string;
  path: string;
  key: string;
  query?: Record<string, string>;
  /** Coolify leaves out what cannot be ordered (deprecated types, unavailable regions and sizes, private images). */
  keep?: (item: Record<string, unknown>) => boolean;
}

/** Coolify 4.3.11's catalogue routes, each one call (all pages) to the provider's own API with the team's token. */
const LISTINGS: Listing[] = [
  { provider: 'hetzner', route: 'locations', what: 'locations', path: '/locations', key: 'locations' },
  { provider: 'hetzner', route: 'server-types', what: 'server types (sizes and prices)', path: '/server_types', key: 'server_types', keep: (t) => t.deprecated !== true },
  { provider: 'hetzner', route: 'images', what: 'system images', path: '/images', key: 'images', query: { type: 'system' } },
  { provider: 'hetzner', route: 'ssh-keys', what: 'SSH keys', path: '/ssh_keys', key: 'ssh_keys' },
  { provider: 'hetzner', route: 'firewalls', what: 'firewalls', path: '/firewalls', key: 'firewalls' },
  { provider: 'hetzner', route: 'networks', what: 'private networks', path: '/networks', key: 'networks' },
  { provider: 'digitalocean', route: 'regions', what: 'available regions', path: '/regions', key: 'regions', keep: (r) => r.available !== false },
  { provider: 'digitalocean', route: 'sizes', what: 'available droplet sizes', path: '/sizes', key: 'sizes', keep: (s) => s.available !== false },
  { provider: 'digitalocean', route: 'images', what: 'public distribution images', path: '/images', key: 'images', query: { type: 'distribution' }, keep: (i) => i.public !== false },
  { provider: 'digitalocean', route: 'ssh-keys', what: 'SSH keys', path: '/account/keys', key: 'ssh_keys' },
  { provider: 'vultr', route: 'regions', what: 'regions', path: '/regions', key: 'regions' },
  { provider: 'vultr', route: 'plans', what: 'plans (sizes and prices)', path: '/plans', key: 'plans' },
  { provider: 'vultr', route: 'os', what: 'operating systems', path: '/os', key: 'os' },
  { provider: 'vultr', route: 'ssh-keys', what: 'SSH keys', path: '/ssh-keys', key: 'ssh_keys' },
];

export const cloudProviderOperations = LISTINGS.map((l) => {
  const name = PROVIDER_NAMES[l.provider];
  return defineOperation({
    name: `list_${l.provider}_${l.route.replace(/-/g, '_')}`,
    title: `List ${name} ${l.what}`,
    description: `${name}'s ${l.what} as its API answers them (every page), asked with one of the team's ${l.provider} cloud tokens (cloud_provider_token_uuid, from list_cloud_tokens). Reads only; 502 when ${name}'s API cannot be reached or refuses the token.`,
    summary: `${name}'s ${l.what}, from its API with a team cloud token.`,
    permission: 'read',
    toolset: 'servers',
    input: () =>
      z.strictObject({
        cloud_provider_token_uuid: uuidParam.optional().describe(`The team's ${l.provider} token (list_cloud_tokens).`),
        cloud_provider_token_id: uuidParam.optional().describe("Coolify's deprecated name of cloud_provider_token_uuid."),
      }),
    output: () => z.array(z.record(z.string(), z.unknown())),
    annotations: { ...READ, openWorld: true },
    http: { method: 'GET', path: `/api/v1/${l.provider}/${l.route}` },
    async run(ctx, i) {
      const uuid = i.cloud_provider_token_uuid ?? i.cloud_provider_token_id;
      if (!uuid) throw validationError({ cloud_provider_token_uuid: ['The team’s cloud provider token to ask with (list_cloud_tokens).'] });
      const items = await cloudList(await cloudCall(ctx, l.provider, uuid), l.path, l.key, l.query);
      return l.keep ? items.filter(l.keep) : items;
    },
  });
});
