import { z } from 'zod';
import type { Db } from '../../store/db.js';
import { validationError } from '../../errors.js';
import { claimOf, parseDomains, requireFreeDomains } from '../domains.js';
import type { ServiceConfig } from '../model/service.js';
import { domains, flag } from '../validators.js';
import { normalizeDomains } from './applications.js';
import { isDatabaseImage } from './service-parts.js';

/**
 * Coolify's `urls` on POST and PATCH /services: each service application's URLs by its compose
 * name (`url` null clears them), with force_domain_override as on the other domain fields.
 */
export const serviceUrlsInput = {
  urls: z
    .array(z.strictObject({ name: z.string().min(1).max(255), url: domains.nullable().optional() }))
    .max(100)
    .optional()
    .describe("Each service application's URLs by its compose service name, e.g. [{name: 'web', url: 'https://app.example.com'}]."),
  force_domain_override: flag.optional(),
};

type Urls = z.infer<typeof serviceUrlsInput.urls>;

/**
 * Sets the URLs of a service's applications in `c` (not yet written), refusing names that are no
 * application of it (422), one URL asked for twice in the request (422 unless forced, as Coolify)
 * and a domain another resource answers to (409, as every claim). Call inside the transaction
 * that writes `c`, so the claim and the write are one step.
 */
export async function applyServiceUrls(db: Db, teamId: number, c: ServiceConfig, urls: Urls, self: { resourceId?: number }, force = false): Promise<void> {
  if (!urls?.length) return;
  const apps = new Set(c.containers.filter((k) => !isDatabaseImage(k.image)).map((k) => k.name));
  const errors: string[] = [];
  const seen = new Map<string, string>();
  for (const u of urls) {
    if (!apps.has(u.name)) errors.push(`Service container with '${u.name}' not found (the service's applications: ${[...apps].join(', ') || 'none'}).`);
    for (const d of parseDomains(u.url)) {
      const was = seen.get(claimOf(d));
      if (was !== undefined && was !== u.name && !force) errors.push(`The request gives ${claimOf(d)} to both ${was} and ${u.name}. Use force_domain_override=true to proceed.`);
      seen.set(claimOf(d), u.name);
    }
  }
  if (errors.length) throw validationError({ urls: errors });
  for (const u of urls) {
    const fqdn = normalizeDomains(u.url);
    await requireFreeDomains(db, teamId, fqdn, { resourceId: self.resourceId, part: u.name }, force);
    const was = c.parts?.[u.name] ?? { human_name: null, description: null };
    c.parts = { ...c.parts, [u.name]: { ...was, fqdn } };
  }
}

/** Coolify's `domains` answer: the service applications' URLs, sorted. */
export const serviceDomains = (c: ServiceConfig): string[] =>
  c.containers
    .map((k) => c.parts?.[k.name]?.fqdn)
    .filter((f): f is string => Boolean(f))
    .sort();
