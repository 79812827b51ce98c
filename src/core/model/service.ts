import type { ComposeContainer } from '../compose.js';

/** A service: its compose file and the containers and volumes berth derived from it. */
export interface ServiceConfig {
  /** Names and descriptions given to the service's containers (by compose service name). */
  parts?: Record<string, { human_name: string | null; description: string | null; fqdn?: string | null; is_gzip_enabled?: boolean; is_stripprefix_enabled?: boolean }>;
  docker_compose_raw: string;
  containers: ComposeContainer[];
  volumes: string[];
  /**
   * Coolify's switch: true (absent) puts the containers on the destination's network beside the
   * other resources there; false gives the service a network of its own (named by its uuid).
   */
  connect_to_docker_network?: boolean;
  /**
   * The one-click template it was made from (Coolify's service_type). Such a service keeps
   * Coolify's compose semantics at deploy: `${VAR}` in environment values, command, entrypoint
   * and health check reads the service's variables (core/compose-variables.ts).
   */
  template?: string;
}
