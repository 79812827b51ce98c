import { z } from 'zod';

/** Coolify's docker cleanup settings of a server, with its defaults. */
export const cleanupSettingsSchema = z.object({
  docker_cleanup_frequency: z.string(),
  docker_cleanup_threshold: z.number().int(),
  force_docker_cleanup: z.boolean(),
  delete_unused_volumes: z.boolean(),
  delete_unused_networks: z.boolean(),
  disable_application_image_retention: z.boolean(),
});
export type CleanupSettings = z.infer<typeof cleanupSettingsSchema>;

export const CLEANUP_DEFAULTS: CleanupSettings = {
  docker_cleanup_frequency: '0 0 * * *',
  docker_cleanup_threshold: 80,
  force_docker_cleanup: false,
  delete_unused_volumes: false,
  delete_unused_networks: false,
  disable_application_image_retention: false,
};

export const cleanupSettingsOf = (s: { docker_cleanup: string | null }): CleanupSettings => ({
  ...CLEANUP_DEFAULTS,
  ...(s.docker_cleanup ? (JSON.parse(s.docker_cleanup) as Partial<CleanupSettings>) : {}),
});
