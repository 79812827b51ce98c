import { previewImage, previewName, previewVolume } from '../core/model/preview.js';
import type { RuntimeJobContext } from '../core/runtime.js';
import { nowIso, type Db } from '../store/db.js';
import type { EngineClient } from './engine-client.js';
import { ConflictError } from './engine-errors.js';
import type { KindContext } from './kind.js';
import { kindFor } from './kinds.js';
import { planResource, type Plan } from './plan.js';
import { serverOfResource, type RuntimeParts } from './runtime-rows.js';
import { resolveSharedReferences } from './shared-references.js';
import { buildIfNeeded } from './builds.js';

/**
 * A pull request's preview of an application (docs/decisions/previews.md), on the engine: the
 * application's own plan under the preview's names (Coolify's `-pr-<N>` on the container and
 * every volume), its image the one the preview's deploy built, no host ports (the application
 * holds them), and the application's environment with its preview variables (is_preview) over it.
 * It runs on the application's destination and network; its domain is routed by the server's proxy
 * beside the application's (proxy.ts).
 */

/** A preview's row: its pull request and the image its last deploy built. */
async function previewRow(db: Db, resourceId: number, pr: number) {
  const p = await db.selectFrom('application_previews').select(['pull_request_id', 'image_tag']).where('resource_id', '=', resourceId).where('pull_request_id', '=', pr).executeTakeFirst();
  // Deleted while its deployment waited in the queue: nothing of it is to run.
  if (!p) throw new Error(`There is no longer a preview of pull request #${pr}; nothing was done.`);
  return p;
}

/** The plan of a preview, from the application's. */
export async function previewPlan(db: Db, resourceId: number, pr: number, imageTag: string | null): Promise<Plan> {
  const plan = await planResource(db, resourceId);
  const r = await db.selectFrom('resources').select(['uuid', 'team_id', 'environment_id']).where('id', '=', resourceId).executeTakeFirstOrThrow();
  const rows = await db.selectFrom('environment_variables').select(['key', 'value']).where('resource_id', '=', resourceId).where('is_preview', '=', 1).execute();
  const { env: previewEnv, notes } = await resolveSharedReferences(db, r, plan.serverId, Object.fromEntries(rows.map((e) => [e.key, e.value ?? ''])));
  const containers = plan.containers.map((c) => {
    const env = Object.fromEntries((c.spec.env ?? []).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    Object.assign(env, previewEnv);
    return {
      ...c,
      name: previewName(r.uuid, pr),
      spec: {
        ...c.spec,
        image: `${previewImage(r.uuid, pr)}:${imageTag ?? 'unbuilt'}`,
        env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
        ports: [],
        volumes: (c.spec.volumes ?? []).map((v) => ({ ...v, volume: previewVolume(v.volume, pr) })),
        labels: { ...c.spec.labels, 'berth.preview': String(pr) },
      },
    };
  });
  return { ...plan, containers, volumes: plan.volumes.map((v) => previewVolume(v, pr)), notes: [...plan.notes, ...notes] };
}

/**
 * A preview's deployment: builds the pull request's head (refs/pull/N/head), runs it as the
 * application's kind deploys, records what the engine then says on the preview's row, and
 * routes its domain. Old images of the preview go (it is not rolled back).
 */
export async function runPreviewDeployment(
  parts: RuntimeParts,
  d: { uuid: string; kind: string; resource_id: number; pull_request_id: number },
  ctx: RuntimeJobContext,
  kctx: KindContext,
): Promise<'finished'> {
  await previewRow(ctx.db, d.resource_id, d.pull_request_id);
  await ctx.log(`preview of pull request #${d.pull_request_id}`);
  await buildIfNeeded(parts, d, ctx);
  const p = await previewRow(ctx.db, d.resource_id, d.pull_request_id);
  const plan = await previewPlan(ctx.db, d.resource_id, d.pull_request_id, p.image_tag);
  const engine = await parts.engineFor(await serverOfResource(parts.db, d.resource_id));
  const kind = kindFor(plan.engineKind);
  try {
    await kind.deploy(engine, plan, kctx);
    await pruneOlder(engine, plan, p.image_tag, ctx);
    return 'finished';
  } finally {
    try {
      const seen = await kind.observe(engine, plan, 'running', ctx.signal);
      await ctx.db
        .updateTable('application_previews')
        .set({ observed_status: seen.status, observed_at: nowIso(), updated_at: nowIso() })
        .where('resource_id', '=', d.resource_id)
        .where('pull_request_id', '=', d.pull_request_id)
        .execute();
    } catch (err) {
      parts.logger.debug({ err: (err as Error).message }, 'could not observe a preview');
    }
    await parts.routeProxy(plan.serverId, ctx.log);
  }
}

/** The preview's images but the one it runs: a preview has no rollback. */
async function pruneOlder(engine: EngineClient, plan: Plan, tag: string | null, ctx: RuntimeJobContext): Promise<void> {
  const running = plan.containers[0]?.spec.image;
  const repo = running?.slice(0, running.lastIndexOf(':'));
  if (!repo || !tag) return;
  for (const ref of await imageRefs(engine, repo, ctx.signal)) {
    if (ref === running) continue;
    try {
      if (await engine.removeImage(ref, { signal: ctx.signal })) await ctx.log(`removed the preview's old image ${ref}`);
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }
}

/** The tags of an image repository on an engine, as full references. */
async function imageRefs(engine: EngineClient, repo: string, signal?: AbortSignal): Promise<string[]> {
  const names = new Set([repo, repo.replace(/^localhost\//, '')]);
  const out: string[] = [];
  for (const img of await engine.listImages(repo, { signal })) {
    for (const ref of img.RepoTags ?? []) {
      const i = ref.lastIndexOf(':');
      if (i > 0 && names.has(ref.slice(0, i))) out.push(`${repo}:${ref.slice(i + 1)}`);
    }
  }
  return out;
}

/**
 * Removes a preview from its application's engine: its container, its images, and its volumes
 * when asked. The log lines; nothing when the server is record-only; throws when the engine
 * cannot be reached.
 */
export async function removePreview(parts: RuntimeParts, resourceId: number, pr: number, opts: { volumes: boolean }): Promise<string[]> {
  const engine = await parts.liveEngineOfResource(resourceId);
  if (!engine) return [];
  const plan = await previewPlan(parts.db, resourceId, pr, null);
  const signal = AbortSignal.timeout(120_000);
  const out: string[] = [];
  // By name: the kind's remove takes every container labelled with the application, its own too.
  for (const c of plan.containers) {
    for (const name of [c.name, `${c.name}-next`]) if (await engine.removeContainer(name, { force: true, removeVolumes: false, signal })) out.push(`removed container ${name}`);
  }
  if (opts.volumes) for (const v of plan.volumes) if (await engine.removeVolume(v, { force: true, signal })) out.push(`removed volume ${v}`);
  const repo = previewImage(plan.resourceUuid, pr);
  for (const ref of await imageRefs(engine, repo, signal)) {
    try {
      if (await engine.removeImage(ref, { signal })) out.push(`removed image ${ref}`);
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }
  return out;
}
