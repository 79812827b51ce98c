import type { HealthCheckFields, LimitsFields } from '../runtime-fields.js';

/** The image tag of a dockerfile application before its first build. */
export const UNBUILT_TAG = 'unbuilt';

/** Coolify's default for docker_images_to_keep: built images kept for rollback besides the one running. */
export const DEFAULT_IMAGES_TO_KEEP = 2;

/** Where a built application's image comes from (build_pack dockerfile). */
export type BuildSource =
  | { dockerfile: string }
  | {
      git_repository: string;
      git_branch: string;
      base_directory: string;
      dockerfile_location: string;
      /** A private repository over SSH (deploy key): the team's private key used to clone. */
      private_key_id?: number;
      /** The git host's key(s), "type base64" lines: given at create, or pinned at the first clone. */
      git_host_key?: string | null;
    };

/** Coolify's runtime fields are stored only when set (see runtime-fields.ts for their defaults). */
export interface ApplicationConfig extends Partial<HealthCheckFields>, Partial<LimitsFields> {
  /** dockerimage: run a registry image; dockerfile: build it on the server's engine at each deploy. */
  build_pack: 'dockerimage' | 'dockerfile';
  source?: BuildSource;
  docker_registry_image_name: string;
  docker_registry_image_tag: string;
  ports_exposes: string | null;
  ports_mappings: string | null;
  fqdn: string | null;
  /** Coolify's proxy switches (absent: on, Coolify's default): compress answers, strip a domain's path prefix. */
  is_gzip_enabled?: boolean;
  is_stripprefix_enabled?: boolean;
  /** The label lines (key=value), decoded; shown base64 as Coolify does. */
  custom_labels?: string | null;
  /** `docker run` options as given, checked by core/run-options.ts. */
  custom_docker_run_options?: string | null;
  /** Built images kept for rollback besides the running one (older ones are removed after a deploy). */
  docker_images_to_keep?: number;
}
