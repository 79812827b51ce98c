import type { ComposeContainer } from '../compose.js';

/** A service: its compose file and the containers and volumes berth derived from it. */
export interface ServiceConfig {
  /** Names and descriptions given to the service's containers (by compose service name). */
  parts?: Record<string, { human_name: string | null; description: string | null; fqdn?: string | null }>;
  docker_compose_raw: string;
  containers: ComposeContainer[];
  volumes: string[];
}
