import { z } from 'zod';
import { notFound } from '../../errors.js';
import { newUuid } from '../../ids.js';
import type { Db } from '../../store/db.js';
import { ownedResource } from '../lookup.js';
import type { ApplicationConfig } from '../model/application.js';
import { MAX_PULL_REQUEST_ID, previewFqdn } from '../model/preview.js';
import { defineOperation } from '../operation.js';
import { uuidParam } from '../validators.js';
import { stamps } from './common.js';
import { serverOf, type ResourceRow } from './resource-common.js';
import { proxySettingsOf } from '../model/proxy.js';

/**
 * Coolify's preview deployments (docs/decisions/previews.md): `deploy` with `pr` builds a pull
 * request's head and runs it beside the application under its own names and domain; the
 * application's GET lists them, and DELETE /applications/{uuid}/previews/{pull_request_id}
 * removes one. The engine part is src/engine/previews.ts.
 */

/** A preview as get_application lists it. */
export const previewEntry = z.object({
  pull_request_id: z.number().int(),
  /** As the engine said after its last deployment; null: never seen. */
  status: z.string().nullable(),
  fqdn: z.string().nullable(),
  created_at: z.string(),
});

export async function applicationPreviews(db: Db, resourceId: number): Promise<z.infer<typeof previewEntry>[]> {
  const rows = await db
    .selectFrom('application_previews')
    .select(['pull_request_id', 'observed_status', 'fqdn', 'created_at'])
    .where('resource_id', '=', resourceId)
    .orderBy('pull_request_id')
    .execute();
  return rows.map((p) => ({ pull_request_id: p.pull_request_id, status: p.observed_status, fqdn: p.fqdn, created_at: p.created_at }));
}

/** Coolify's `pr` of a deploy: a pull request id, 0 (or absent) for the application itself. */
export const pullRequestInput = z
  .union([
    z.number().int(),
    z
      .string()
      .regex(/^\d{1,10}$/, 'A pull request id.')
      .transform(Number),
  ])
  .pipe(z.number().int().min(0).max(MAX_PULL_REQUEST_ID));

/**
 * Why an application cannot have a preview (422 on `pr`), or null: previews build a pull request
 * from a git repository, so only git applications built by berth (not dockercompose, whose
 * services would all need names of their own) on a standalone destination have them.
 */
export async function previewRefusal(db: Db, r: ResourceRow): Promise<string | null> {
  if (r.kind !== 'application') return 'Only applications have previews.';
  const c = JSON.parse(r.config) as ApplicationConfig;
  if (!c.source || !('git_repository' in c.source)) return `Application ${r.name} is not built from a git repository: previews build a pull request.`;
  if (c.build_pack === 'dockercompose') return `Application ${r.name} is a dockercompose application: berth does not run previews of them yet.`;
  const d = await db.selectFrom('destinations').select('type').where('id', '=', r.destination_id).executeTakeFirstOrThrow();
  if (d.type === 'swarm') return `Application ${r.name} runs on a swarm destination: berth runs previews on standalone destinations only.`;
  return null;
}

/**
 * The preview of a pull request (of an application previewRefusal let through), made at its first deploy (its domain from the template as it is
 * then, as Coolify keeps it afterwards). Concurrent first deploys make one row: the unique
 * constraint decides, and the loser reads the winner's.
 */
export async function ensurePreview(db: Db, r: ResourceRow, pr: number): Promise<void> {
  const c = JSON.parse(r.config) as ApplicationConfig;
  await db
    .insertInto('application_previews')
    .values({ uuid: newUuid(), resource_id: r.id, pull_request_id: pr, fqdn: previewFqdn(c.fqdn, c.preview_url_template, pr), ...stamps() })
    .onConflict((oc) => oc.columns(['resource_id', 'pull_request_id']).doNothing())
    .execute();
}

export const applicationPreviewOperations = [
  defineOperation({
    name: 'delete_application_preview',
    title: 'Delete an application preview',
    description: "Delete a pull request's preview of an application: its container, volumes and domain route, then its record.",
    summary: 'Delete the preview deployment of a pull request.',
    permission: 'write',
    toolset: 'applications',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        pull_request_id: z
          .union([
            z.number().int(),
            z
              .string()
              .regex(/^\d{1,10}$/, 'A pull request id.')
              .transform(Number),
          ])
          .pipe(z.number().int().min(1).max(MAX_PULL_REQUEST_ID)),
      }),
    output: () => z.object({ message: z.string(), removed: z.array(z.string()) }),
    annotations: { readOnly: false, destructive: true, idempotent: true, openWorld: true },
    http: { method: 'DELETE', path: '/api/v1/applications/{uuid}/previews/{pull_request_id}' },
    async run({ db, caller, runtime, logger }, i) {
      const r = await ownedResource(db, i.uuid, caller.teamId, ['application']);
      const row = await db.selectFrom('application_previews').select('id').where('resource_id', '=', r.id).where('pull_request_id', '=', i.pull_request_id).executeTakeFirst();
      if (!row) throw notFound();
      // The engine first: one that cannot be reached leaves the record, so the call can be repeated
      // and nothing runs that no record names.
      const removed = await runtime.removePreview(r.id, i.pull_request_id, { volumes: true });
      await db.deleteFrom('application_previews').where('id', '=', row.id).execute();
      // Its route goes with the record (a proxy that cannot be reached is told at the next deploy).
      const s = await serverOf(db, r);
      if (proxySettingsOf(s).proxy_type !== 'none' && runtime.isLive(s))
        await runtime.syncProxy(s.id, { signal: AbortSignal.timeout(30_000) }).catch((err) => logger.warn({ err: (err as Error).message, server: s.uuid }, 'could not remove the preview’s route'));
      return { message: 'Preview deployment deleted.', removed };
    },
  }),
];
