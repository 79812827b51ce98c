import { DEFAULT_IMAGES_TO_KEEP, isBuilt, UNBUILT_TAG, type ApplicationConfig, type BuildPack } from '../core/model/application.js';
import type { ApplicationImage, RuntimeJobContext } from '../core/runtime.js';
import { atomically } from '../store/atomic.js';
import { nowIso } from '../store/db.js';
import type { EngineClient } from './engine-client.js';
import { ConflictError, NotFoundError } from './engine-errors.js';
import { serverOfResource, type RuntimeParts } from './runtime-rows.js';
import { previewImage, pullRequestRef } from '../core/model/preview.js';

/** An application's images: built on its engine at a deploy, kept for rollbacks, bounded after. */

/**
 * A dockerfile application is built on its server's engine at each deploy, tagged per
 * deployment (localhost/berth-app-<uuid>:<deployment uuid>), and its record then names that
 * image. The build happens before anything is stopped: a failed build leaves the running
 * container as it was. Start and restart use the last built image.
 */
export async function buildIfNeeded(parts: RuntimeParts, d: { uuid: string; kind: string; resource_id: number; pull_request_id?: number }, ctx: RuntimeJobContext): Promise<void> {
  const r = await ctx.db.selectFrom('resources').select(['uuid', 'kind', 'config', 'team_id']).where('id', '=', d.resource_id).executeTakeFirstOrThrow();
  if (r.kind !== 'application') return;
  const c = JSON.parse(r.config) as ApplicationConfig;
  if (!isBuilt(c) || !c.source) return;
  if (d.kind !== 'deploy') {
    if (c.docker_registry_image_tag === UNBUILT_TAG) throw new Error('This application has not been built yet: deploy it first.');
    return;
  }
  // A preview builds its pull request's head into an image of its own (docs/decisions/previews.md).
  const pr = d.pull_request_id ?? 0;
  if (pr && (!('git_repository' in c.source) || c.build_pack === 'dockercompose')) throw new Error('Only a git application that is not dockercompose has previews.');
  const source = pr && 'git_repository' in c.source ? { ...c.source, git_ref: pullRequestRef(pr) } : c.source;
  const { prepareBuildContext } = await import('./build-source.js');
  let ssh: import('./build-source.js').SshCloneSecrets | import('./build-source.js').GithubCloneSecrets | undefined;
  if ('github_app_id' in source && source.github_app_id !== undefined) {
    // A fresh installation token per deploy, from the team's own app (Coolify mints one per clone).
    const app = await ctx.db.selectFrom('github_apps').selectAll().where('id', '=', source.github_app_id).where('team_id', '=', r.team_id).executeTakeFirst();
    if (app) {
      const { githubSession } = await import('../core/github-api.js');
      ssh = { htmlUrl: app.html_url, token: (await githubSession(ctx.db, parts.outbound, app)).token };
    }
  }
  if ('private_key_id' in source && source.private_key_id !== undefined) {
    // The team's own key only: a key moved to another team (it cannot be) would not be used.
    const key = await ctx.db.selectFrom('private_keys').select('private_key').where('id', '=', source.private_key_id).where('team_id', '=', r.team_id).executeTakeFirst();
    if (key) {
      ssh = {
        privateKey: key.private_key,
        pinHostKey: async (keys) => {
          source.git_host_key = keys;
          await atomically(ctx.db, async (db) => {
            const now = await db.selectFrom('resources').select('config').where('id', '=', d.resource_id).executeTakeFirstOrThrow();
            const fresh = JSON.parse(now.config) as ApplicationConfig;
            if (fresh.source && 'git_repository' in fresh.source && !fresh.source.git_host_key) fresh.source.git_host_key = keys;
            await db
              .updateTable('resources')
              .set({ config: JSON.stringify(fresh), updated_at: nowIso() })
              .where('id', '=', d.resource_id)
              .execute();
          });
        },
      };
    }
  }
  const context = await prepareBuildContext(source, parts.outbound, ctx.log, ssh, { pack: c.build_pack as BuildPack, port: c.ports_exposes, images: parts.buildpackImages });
  try {
    if (context.commit) await ctx.log(`building commit ${context.commit}`);
    if (c.build_pack === 'dockercompose' && 'git_repository' in source) {
      const { buildComposeApplication } = await import('./compose-app.js');
      const engine = await parts.engineFor(await serverOfResource(parts.db, d.resource_id));
      return await buildComposeApplication({ db: ctx.db, resourceId: d.resource_id, uuid: r.uuid, deploymentUuid: d.uuid, source, context, engine, log: ctx.log, signal: ctx.signal });
    }
    // The Dockerfile berth wrote is kept whole in the log: a person reads what ran.
    if (context.generated) await ctx.log(`${c.build_pack} detected ${context.generated.stack}; generated Dockerfile:\n${context.generated.dockerfile.trimEnd()}`);
    const image = pr ? previewImage(r.uuid, pr) : `localhost/berth-app-${r.uuid}`;
    const engine = await parts.engineFor(await serverOfResource(parts.db, d.resource_id));
    // Build output comes line by line; it reaches the deployment's log in batches.
    let pending: string[] = [];
    let writing = Promise.resolve();
    const flush = () => {
      const lines = pending;
      pending = [];
      if (lines.length) writing = writing.then(() => ctx.log(lines.join('\n')));
    };
    try {
      await engine.build(context.tar(), { tag: `${image}:${d.uuid}`, dockerfile: context.dockerfile, signal: ctx.signal, onLine: (l) => (pending.push(l), pending.length >= 25 && flush()) });
    } finally {
      flush();
      await writing;
    }
    await ctx.log(`built ${image}:${d.uuid}`);
    if (pr) {
      await ctx.db.updateTable('application_previews').set({ image_tag: d.uuid, updated_at: nowIso() }).where('resource_id', '=', d.resource_id).where('pull_request_id', '=', pr).execute();
      return;
    }
    await ctx.db
      .updateTable('resources')
      .set({ config: JSON.stringify({ ...c, docker_registry_image_name: image, docker_registry_image_tag: d.uuid }), updated_at: nowIso() })
      .where('id', '=', d.resource_id)
      .execute();
  } finally {
    await context.cleanup();
  }
}

/** The repository tags of an application's image on an engine, newest first. */
async function imagesOf(engine: EngineClient, repository: string, signal?: AbortSignal): Promise<ApplicationImage[]> {
  // The engine may name a short reference in full (busybox → docker.io/library/busybox).
  const names = new Set([repository, `localhost/${repository}`, `docker.io/${repository}`, `docker.io/library/${repository}`]);
  const seen = new Map<string, ApplicationImage & { at: number }>();
  for (const img of await engine.listImages(repository, { signal })) {
    for (const ref of img.RepoTags ?? []) {
      const i = ref.lastIndexOf(':');
      if (i < 0 || !names.has(ref.slice(0, i))) continue;
      const tag = ref.slice(i + 1);
      if (!seen.has(tag)) seen.set(tag, { tag, created_at: new Date(img.Created * 1000).toISOString(), at: img.Created });
    }
  }
  return [...seen.values()].sort((a, b) => b.at - a.at || b.tag.localeCompare(a.tag)).map(({ tag, created_at }) => ({ tag, created_at }));
}

/** An application's kept images on its engine, newest first; null when its server is record-only. */
export async function applicationImages(parts: RuntimeParts, resourceId: number): Promise<ApplicationImage[] | null> {
  const engine = await parts.liveEngineOfResource(resourceId);
  if (!engine) return null;
  const r = await parts.db.selectFrom('resources').select('config').where('id', '=', resourceId).executeTakeFirstOrThrow();
  return imagesOf(engine, (JSON.parse(r.config) as ApplicationConfig).docker_registry_image_name);
}

/**
 * A rollback runs a kept image instead of building or pulling: checked on the engine first (a
 * tag removed meanwhile fails the deployment and leaves the record as it was), then recorded as
 * the application's image, then deployed as any deploy.
 */
export async function useRollbackImage(parts: RuntimeParts, resourceId: number, tag: string, ctx: RuntimeJobContext): Promise<void> {
  const engine = await parts.engineFor(await serverOfResource(parts.db, resourceId));
  const r = await ctx.db.selectFrom('resources').select('config').where('id', '=', resourceId).executeTakeFirstOrThrow();
  const ref = `${(JSON.parse(r.config) as ApplicationConfig).docker_registry_image_name}:${tag}`;
  await engine.inspectImage(ref, { signal: ctx.signal }).catch((err) => {
    throw err instanceof NotFoundError ? new Error(`The image ${ref} is no longer on the server's engine; list_application_rollback_images shows what is kept.`) : err;
  });
  await ctx.log(`rolling back to ${ref}`);
  // Only the tag changes: other fields patched meanwhile stay.
  await atomically(ctx.db, async (db) => {
    const now = await db.selectFrom('resources').select('config').where('id', '=', resourceId).executeTakeFirstOrThrow();
    await db
      .updateTable('resources')
      .set({ config: JSON.stringify({ ...(JSON.parse(now.config) as ApplicationConfig), docker_registry_image_tag: tag }), updated_at: nowIso() })
      .where('id', '=', resourceId)
      .execute();
  });
}

/**
 * Bounds a built application's kept images (Coolify's docker_images_to_keep, default 2): the one
 * it runs stays, and the newest others up to the bound; older ones are removed from the engine.
 * Images berth did not build (a registry image's other tags) are never removed.
 */
export async function pruneImages(engine: EngineClient, resourceId: number, ctx: RuntimeJobContext): Promise<void> {
  const r = await ctx.db.selectFrom('resources').select(['uuid', 'kind', 'config']).where('id', '=', resourceId).executeTakeFirstOrThrow();
  if (r.kind !== 'application') return;
  const c = JSON.parse(r.config) as ApplicationConfig;
  if (!isBuilt(c) || c.docker_registry_image_name !== `localhost/berth-app-${r.uuid}`) return;
  const keep = c.docker_images_to_keep ?? DEFAULT_IMAGES_TO_KEEP;
  const older = (await imagesOf(engine, c.docker_registry_image_name, ctx.signal)).filter((i) => i.tag !== c.docker_registry_image_tag).slice(keep);
  for (const i of older) {
    const ref = `${c.docker_registry_image_name}:${i.tag}`;
    try {
      if (await engine.removeImage(ref, { signal: ctx.signal })) await ctx.log(`removed old image ${ref} (keeping ${keep} for rollback)`);
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }
}
