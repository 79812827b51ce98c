import type { ComposeContainer } from '../compose.js';
import type { HealthCheckFields, LimitsFields } from '../runtime-fields.js';
import type { SwarmFields } from '../swarm-fields.js';

/** The image tag of a dockerfile application before its first build. */
export const UNBUILT_TAG = 'unbuilt';

/** Coolify's default for docker_images_to_keep: built images kept for rollback besides the one running. */
export const DEFAULT_IMAGES_TO_KEEP = 2;

/** Build packs that build from source at each deploy (dockerimage pulls one instead); dockercompose runs the repository's compose file. */
export const BUILD_PACKS = ['dockerfile', 'nixpacks', 'static', 'dockercompose'] as const;
export type BuildPack = (typeof BUILD_PACKS)[number];

/** The base images of the generated builds, declared with the settings (BERTH_BUILDPACK_IMAGES). */
export type { BuildpackImages } from '../../config/config.js';

/** Coolify's steps of a generated build: each replaces the detected one (one shell line each). */
export interface BuildSteps {
  install_command?: string | null;
  build_command?: string | null;
  start_command?: string | null;
  /** Where a static site's files are after the build (static), relative to base_directory. */
  publish_directory?: string | null;
}

/** Where a built application's image comes from (every build pack but dockerimage). */
export type BuildSource =
  | { dockerfile: string }
  | {
      git_repository: string;
      git_branch: string;
      base_directory: string;
      dockerfile_location: string;
      /** A private repository over SSH (deploy key): the team's private key used to clone. */
      private_key_id?: number;
      /** A private repository through a GitHub app (git_repository is owner/repo): the team's app, its id. */
      github_app_id?: number;
      /** The git host's key(s), "type base64" lines: given at create, or pinned at the first clone. */
      git_host_key?: string | null;
      /** nixpacks and static: the steps given in place of the detected ones. */
      steps?: BuildSteps;
      /** dockercompose: the compose file, relative to base_directory (Coolify's default /docker-compose.yaml). */
      docker_compose_location?: string;
      /** A pull request's preview: the ref fetched in place of git_branch (refs/pull/N/head); given per build, never stored. */
      git_ref?: string;
    };

/** Coolify's default docker_compose_location. */
export const DEFAULT_COMPOSE_LOCATION = '/docker-compose.yaml';

/**
 * A dockercompose application's compose file as read from the repository at its last successful
 * build: planned as a service's containers (`<uuid>-<name>`), a `build:` service's image being
 * the one built then (localhost/berth-app-<uuid>-<name>:<deployment uuid>).
 */
export interface ComposeApplication {
  docker_compose_raw: string;
  containers: ComposeContainer[];
  volumes: string[];
  /** The commit it was read and built from. */
  commit: string | null;
}

/** Coolify's runtime fields are stored only when set (see runtime-fields.ts for their defaults). */
export interface ApplicationConfig extends Partial<HealthCheckFields>, Partial<LimitsFields>, SwarmFields {
  /** dockerimage: run a registry image; the others: build it on the server's engine at each deploy. */
  build_pack: 'dockerimage' | BuildPack;
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
  /** dockercompose: what the last build read from the repository (absent before the first). */
  compose?: ComposeApplication;
  /** dockercompose: Coolify's docker_compose_domains, the domains (fqdn) of each compose service by name. */
  compose_domains?: Record<string, string>;
  /** Coolify's: how a pull request's preview domain is made from the first domain (absent: {{pr_id}}.{{domain}}). */
  preview_url_template?: string;
}

/** Whether an application's image is built by berth (from a Dockerfile, written or generated) rather than pulled. */
export const isBuilt = (c: Pick<ApplicationConfig, 'build_pack'>): boolean => c.build_pack !== 'dockerimage';
