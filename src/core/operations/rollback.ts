import { z } from 'zod';
import { validationError } from '../../errors.js';
import { ownedResource } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { RECORD_ONLY_NOTE } from '../runtime.js';
import { imageTag, uuidParam } from '../validators.js';
import { ENGINE, READ } from './common.js';
import { config } from './resource-common.js';
import type { ApplicationConfig } from '../model/application.js';
import { queueDeployment } from './deployments.js';

/**
 * Coolify's rollback: each deploy of a built application leaves an image tagged with its
 * deployment uuid on the server's engine (a bounded number are kept: docker_images_to_keep), and a
 * rollback is a deployment that runs one of them again instead of building. What can be rolled
 * back to is what the engine holds, not what the records remember.
 */
export const rollbackOperations = [
  defineOperation({
    name: 'list_application_rollback_images',
    title: 'List rollback images',
    description:
      "The images of an application its server's engine still holds (one per earlier build, up to docker_images_to_keep besides the running one), newest first, with the running one marked. Pass a tag to rollback_application.",
    summary: "The images of an application its server's engine keeps (what rollback can run), newest first.",
    permission: 'read',
    toolset: 'deployments',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () =>
      z.object({
        current: z.string().nullable(),
        images: z.array(z.object({ tag: z.string(), created_at: z.string(), is_current: z.boolean() })),
      }),
    annotations: { ...READ, openWorld: true },
    http: { method: 'GET', path: '/api/v1/applications/{uuid}/rollback-images' },
    async run({ db, caller, runtime }, { uuid }) {
      const r = await ownedResource(db, uuid, caller.teamId, ['application']);
      const current = config<ApplicationConfig>(r).docker_registry_image_tag;
      // As Coolify: a server berth cannot reach lists nothing.
      const images = (await runtime.applicationImages(r.id).catch(() => null)) ?? [];
      return { current: images.some((i) => i.tag === current) ? current : null, images: images.map((i) => ({ ...i, is_current: i.tag === current })) };
    },
  }),
  defineOperation({
    name: 'rollback_application',
    title: 'Roll an application back',
    description: 'Queue a deployment that runs a kept image again (commit: a tag from list_application_rollback_images) without building. Follow it with get_deployment.',
    summary: 'Queue a deployment that runs a kept image of the application again (commit: its tag from list_application_rollback_images).',
    permission: 'deploy',
    toolset: 'deployments',
    input: () => z.strictObject({ uuid: uuidParam, commit: imageTag.max(128) }),
    output: () => z.object({ message: z.string(), deployment_uuid: z.string() }),
    annotations: ENGINE,
    http: { method: 'POST', path: '/api/v1/applications/{uuid}/rollback' },
    async run(ctx, { uuid, commit }) {
      const r = await ownedResource(ctx.db, uuid, ctx.caller.teamId, ['application']);
      const images = await ctx.runtime.applicationImages(r.id);
      if (images === null) throw validationError({ commit: [RECORD_ONLY_NOTE] });
      if (!images.some((i) => i.tag === commit)) {
        throw validationError({ commit: [`The server's engine keeps no image of this application tagged ${commit}; list_application_rollback_images shows the kept ones (${images.length}).`] });
      }
      const d = await queueDeployment(ctx, r, 'deploy', false, { rollbackTag: commit });
      return { message: `Rollback to ${commit} queued.`, deployment_uuid: d.uuid };
    },
  }),
];
