import { z } from 'zod';
import { newUuid } from '../../ids.js';
import { parseDomains } from '../domains.js';

/**
 * Preview deployments (docs/decisions/previews.md): a pull request's head built and run beside its
 * application, under names of its own. Coolify's names: containers and volumes take `-pr-<N>`,
 * the domain comes from the application's preview_url_template.
 */

/** Coolify's default preview_url_template. */
export const DEFAULT_PREVIEW_URL_TEMPLATE = '{{pr_id}}.{{domain}}';

/** Coolify's pull_request_id range (a positive 32-bit integer). */
export const MAX_PULL_REQUEST_ID = 2147483647;

/** The ref a preview builds: GitHub's head of a pull request, the same name in any other repository. */
export const pullRequestRef = (pr: number) => `refs/pull/${pr}/head`;

/** A preview's container (and its name on the networks): the application's with Coolify's suffix. */
export const previewName = (uuid: string, pr: number) => `${uuid}-pr-${pr}`;

/** A preview's volume beside the application's (Coolify's is_preview_suffix_enabled, always on). */
export const previewVolume = (volume: string, pr: number) => `${volume}-pr-${pr}`;

/** Where a preview's built images are kept: apart from the application's, so its rollbacks never see them. */
export const previewImage = (uuid: string, pr: number) => `localhost/berth-app-${uuid}-pr-${pr}`;

/** The host of a template filled in with an example, so the door checks what a preview would get. */
const HOST = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

const fill = (template: string, domain: string, pr: number) => template.replaceAll('{{random}}', newUuid()).replaceAll('{{domain}}', domain).replaceAll('{{pr_id}}', String(pr));

/** Coolify's preview_url_template: a host made of {{pr_id}}, {{domain}}, {{random}} and literal labels. */
export const previewUrlTemplate = z
  .string()
  .max(255)
  .refine((t) => /\{\{(pr_id|random)\}\}/.test(t), 'Must contain {{pr_id}} or {{random}}, so that each pull request has a domain of its own.')
  .refine((t) => HOST.test(fill(t, 'example.com', 1).toLowerCase()), 'Must make a host name, e.g. "{{pr_id}}.{{domain}}" or "pr-{{pr_id}}.preview.example.com".');

/**
 * A preview's domain as Coolify makes it: the application's first domain's scheme and host put
 * into the template (its port and path are not kept); null when the application has no domain.
 */
export function previewFqdn(appFqdn: string | null | undefined, template: string | null | undefined, pr: number): string | null {
  const [first] = parseDomains(appFqdn);
  if (!first) return null;
  return `${first.scheme}://${fill(template || DEFAULT_PREVIEW_URL_TEMPLATE, first.host, pr).toLowerCase()}`;
}
