import { BerthError } from '../errors.js';
import type { TargetGuard } from './outbound-guard.js';

export const CLOUD_PROVIDERS = ['hetzner', 'digitalocean', 'vultr'] as const;
export type CloudProvider = (typeof CLOUD_PROVIDERS)[number];
export const PROVIDER_NAMES: Record<CloudProvider, string> = { hetzner: 'Hetzner', digitalocean: 'DigitalOcean', vultr: 'Vultr' };

/** One page may be large (server types carry a price per location); a listing stops after this many pages. */
const PAGE_BYTES = 4 * 1024 * 1024;
const MAX_PAGES = 40;
const TIMEOUT_MS = 15_000;

export interface CloudCall {
  guard: TargetGuard;
  baseUrl: string;
  provider: CloudProvider;
  token: string;
}

/** GET one provider path with the token; the parsed JSON, or a provider_failed naming what went wrong (never the token). */
export async function cloudGet(c: CloudCall, path: string, query: Record<string, string | number> = {}): Promise<{ status: number; json: Record<string, unknown> }> {
  const url = new URL(`${c.baseUrl.replace(/\/+$/, '')}${path}`);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v));
  const name = PROVIDER_NAMES[c.provider];
  let r: { status: number; text: string };
  try {
    r = await c.guard.fetch(url.toString(), { method: 'GET', headers: { authorization: `Bearer ${c.token}`, accept: 'application/json' }, timeoutMs: TIMEOUT_MS, maxAnswer: PAGE_BYTES });
  } catch (err) {
    throw new BerthError('provider_failed', { message: `${name}'s API (${url.origin}) could not be reached: ${(err as Error).message}` });
  }
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(r.text) as Record<string, unknown>;
  } catch {
    if (r.status < 300) throw new BerthError('provider_failed', { message: `${name}'s API answered ${r.status} with something that is not JSON.` });
  }
  return { status: r.status, json };
}

function failed(c: CloudCall, status: number, json: Record<string, unknown>): BerthError {
  const err = json.error as { message?: string } | string | undefined;
  const said = typeof err === 'string' ? err : (err?.message ?? (typeof json.message === 'string' ? json.message : ''));
  const why = status === 401 || status === 403 ? ' (the token is not accepted: check it with validate_cloud_token)' : '';
  return new BerthError('provider_failed', { message: `${PROVIDER_NAMES[c.provider]}'s API answered ${status}${why}${said ? `: ${said.slice(0, 300)}` : '.'}` });
}

/** Whether the provider accepts the token (Coolify asks Hetzner for its servers, the others for the account). */
export async function tokenAccepted(c: CloudCall): Promise<boolean> {
  const r = await cloudGet(c, c.provider === 'hetzner' ? '/servers' : '/account', c.provider === 'hetzner' ? { per_page: 1 } : {});
  if (r.status >= 200 && r.status < 300) return true;
  if (r.status === 401 || r.status === 403) return false;
  throw failed(c, r.status, r.json);
}

/**
 * Every item of a provider's list, following its pagination: Hetzner's meta.pagination.next_page,
 * DigitalOcean's links.pages.next (page numbers), Vultr's cursor in meta.links.next.
 */
export async function cloudList(c: CloudCall, path: string, key: string, query: Record<string, string | number> = {}): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let page = 1;
  let cursor = '';
  for (let n = 0; n < MAX_PAGES; n++) {
    const q: Record<string, string | number> = c.provider === 'vultr' ? { ...query, per_page: 100, ...(cursor ? { cursor } : {}) } : { ...query, page, per_page: 50 };
    const r = await cloudGet(c, path, q);
    if (r.status < 200 || r.status >= 300) throw failed(c, r.status, r.json);
    const got = r.json[key];
    if (!Array.isArray(got)) throw new BerthError('provider_failed', { message: `${PROVIDER_NAMES[c.provider]}'s API answered without a "${key}" list.` });
    items.push(...(got as Record<string, unknown>[]));
    if (c.provider === 'hetzner') {
      const next = (r.json.meta as { pagination?: { next_page?: number | null } } | undefined)?.pagination?.next_page;
      if (!next) break;
      page = next;
    } else if (c.provider === 'digitalocean') {
      if (!(r.json.links as { pages?: { next?: string } } | undefined)?.pages?.next) break;
      page++;
    } else {
      const next = (r.json.meta as { links?: { next?: string } } | undefined)?.links?.next;
      const nextCursor = next ? (next.startsWith('http') ? new URL(next).searchParams.get('cursor') : next) : null;
      if (!nextCursor) break;
      cursor = nextCursor;
    }
  }
  return items;
}
