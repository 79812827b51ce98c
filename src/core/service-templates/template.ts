/** One one-click service template: Coolify's service-templates.json entry, its compose decoded. */
export interface ServiceTemplate {
  /** Coolify's template name, the `type` of POST /services ("uptime-kuma", "n8n-with-postgresql"). */
  type: string;
  /** Coolify's `slogan`: one line about the software. */
  slogan: string;
  tags: string[];
  documentation: string | null;
  /** The port its web interface listens on inside the container, as Coolify records it. */
  port: string | null;
  /** The compose file, YAML, with Coolify's magic variables (SERVICE_PASSWORD_*, SERVICE_URL_*, ...). */
  compose: string;
  /** Where it came from: berth's own catalog, or the operator's BERTH_SERVICE_TEMPLATES. */
  source: 'builtin' | 'operator';
}

export type BuiltinTemplate = Omit<ServiceTemplate, 'source' | 'documentation' | 'port'> & { documentation?: string; port?: string };

/**
 * A PostgreSQL container for a template: user and password generated per service
 * (SERVICE_USER_POSTGRES, SERVICE_PASSWORD_POSTGRES), its data in `volume`.
 */
export const postgres = (volume: string, db: string, image = 'postgres:16-alpine') => `  postgresql:
    image: ${image}
    environment:
      - POSTGRES_USER=$SERVICE_USER_POSTGRES
      - POSTGRES_PASSWORD=$SERVICE_PASSWORD_POSTGRES
      - POSTGRES_DB=${db}
    volumes:
      - ${volume}:/var/lib/postgresql/data
    healthcheck:
      test: ["CMD-SHELL", "pg_isready -U $$POSTGRES_USER -d $$POSTGRES_DB"]
      interval: 5s
      timeout: 10s
      retries: 10
`;

/** A MariaDB container for a template: root and user passwords generated per service. */
export const mariadb = (volume: string, db: string) => `  mariadb:
    image: mariadb:11
    environment:
      - MARIADB_ROOT_PASSWORD=$SERVICE_PASSWORD_MARIADBROOT
      - MARIADB_DATABASE=${db}
      - MARIADB_USER=$SERVICE_USER_MARIADB
      - MARIADB_PASSWORD=$SERVICE_PASSWORD_MARIADB
    volumes:
      - ${volume}:/var/lib/mysql
    healthcheck:
      test: ["CMD", "healthcheck.sh", "--connect", "--innodb_initialized"]
      interval: 5s
      timeout: 10s
      retries: 10
`;

/** depends_on a database container that answers its health check. */
export const needsHealthy = (service: string) => `    depends_on:
      ${service}:
        condition: service_healthy
`;
