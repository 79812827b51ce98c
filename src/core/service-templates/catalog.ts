import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { z } from 'zod';
import { BUILTIN_APPS } from './builtin-apps.js';
import { BUILTIN_TOOLS } from './builtin-tools.js';
import type { ServiceTemplate } from './template.js';

/** A template name as Coolify spells them ("uptime-kuma", "n8n-with-postgresql", "denoKV"). */
export const TEMPLATE_TYPE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export const BUILTIN_TEMPLATES: ServiceTemplate[] = [...BUILTIN_APPS, ...BUILTIN_TOOLS].map((t) => ({
  ...t,
  documentation: t.documentation ?? null,
  port: t.port ?? null,
  source: 'builtin' as const,
}));

/** How long a catalog URL may take to answer, and how large it may be (Coolify's own is about 0.5 MB). */
const FETCH_TIMEOUT_MS = 10_000;
const MAX_CATALOG_BYTES = 20 * 1024 * 1024;
/** After a catalog that could not be read, the built-in catalog serves alone this long before the next try. */
const RETRY_AFTER_MS = 60_000;

/** One entry of Coolify's service-templates.json: what berth reads of it (other keys are ignored). */
const coolifyEntry = z.object({
  compose: z.string().min(1),
  slogan: z.string().optional(),
  tags: z.array(z.string()).nullish(),
  documentation: z.string().nullish(),
  port: z.union([z.string(), z.number()]).nullish(),
});

/**
 * Templates of a catalog in Coolify's service-templates.json format: an object of template name →
 * entry, the compose file base64-encoded. Entries berth cannot read are left out and named.
 */
export function parseCoolifyCatalog(json: unknown): { templates: ServiceTemplate[]; skipped: string[] } {
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new Error('not an object of template name → template');
  const templates: ServiceTemplate[] = [];
  const skipped: string[] = [];
  for (const [type, raw] of Object.entries(json)) {
    const e = coolifyEntry.safeParse(raw);
    const compose = e.success ? Buffer.from(e.data.compose, 'base64').toString('utf8') : '';
    if (!TEMPLATE_TYPE.test(type) || !e.success || !compose.trim() || compose.includes('\uFFFD')) {
      skipped.push(type);
      continue;
    }
    templates.push({
      type,
      slogan: e.data.slogan ?? '',
      tags: (e.data.tags ?? []).map(String),
      documentation: e.data.documentation ?? null,
      port: e.data.port === undefined || e.data.port === null ? null : String(e.data.port),
      compose,
      source: 'operator',
    });
  }
  return { templates, skipped };
}

async function readSource(source: string): Promise<string> {
  if (!/^https?:\/\//i.test(source)) return readFile(source, 'utf8');
  const res = await fetch(source, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'follow' });
  if (!res.ok) throw new Error(`answered ${res.status}`);
  const text = await res.text();
  if (Buffer.byteLength(text) > MAX_CATALOG_BYTES) throw new Error('larger than 20 MB');
  return text;
}

export interface Catalog {
  /** Every template by type: the operator's over berth's own. */
  byType: Map<string, ServiceTemplate>;
  /** Sorted by type, for lists. */
  all: ServiceTemplate[];
}

function merge(operator: ServiceTemplate[]): Catalog {
  const byType = new Map(BUILTIN_TEMPLATES.map((t) => [t.type, t]));
  for (const t of operator) byType.set(t.type, t);
  return { byType, all: [...byType.values()].sort((a, b) => a.type.localeCompare(b.type)) };
}

const builtinOnly = merge([]);
/** The operator's catalog, read once per process and source (a changed file needs a restart, as every setting). */
const loaded = new Map<string, { catalog: Promise<Catalog>; failedAt?: number }>();

/**
 * The catalog a call sees: berth's own, extended and overridden by the operator's
 * BERTH_SERVICE_TEMPLATES (a file, or a URL fetched on first use). A source that cannot be read
 * is logged, and the built-in catalog serves alone until a retry a minute later.
 */
export function serviceCatalog(source: string | null, logger?: Pick<Logger, 'warn' | 'info'>): Promise<Catalog> {
  if (!source) return Promise.resolve(builtinOnly);
  const entry = loaded.get(source);
  if (entry && (entry.failedAt === undefined || Date.now() - entry.failedAt < RETRY_AFTER_MS)) return entry.catalog;
  const next: { catalog: Promise<Catalog>; failedAt?: number } = { catalog: Promise.resolve(builtinOnly) };
  next.catalog = readSource(source)
    .then((text) => {
      const { templates, skipped } = parseCoolifyCatalog(JSON.parse(text));
      logger?.info({ templates: templates.length, skipped: skipped.length }, 'service templates loaded from BERTH_SERVICE_TEMPLATES');
      if (skipped.length) logger?.warn({ skipped: skipped.slice(0, 20) }, 'service templates left out: not in service-templates.json form');
      return merge(templates);
    })
    .catch((e: unknown) => {
      next.failedAt = Date.now();
      logger?.warn({ err: (e as Error).message }, 'BERTH_SERVICE_TEMPLATES could not be read; serving the built-in templates only');
      return builtinOnly;
    });
  loaded.set(source, next);
  return next.catalog;
}
