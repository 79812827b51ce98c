import { mariadb, needsHealthy, postgres, type BuiltinTemplate } from './template.js';

/**
 * berth's own one-click templates, part one: automation, development, content and analytics.
 * Written for berth's compose rules (named volumes only, nothing that reaches into the host, no
 * published ports: put a port in the compose or a proxy on the network to reach one), with
 * Coolify's names and magic variables so Coolify clients and agents find what they ask for.
 */
export const BUILTIN_APPS: BuiltinTemplate[] = [
  {
    type: 'uptime-kuma',
    slogan: 'Self-hosted monitoring: uptime checks, status pages and notifications.',
    tags: ['monitoring', 'status', 'uptime'],
    documentation: 'https://github.com/louislam/uptime-kuma',
    port: '3001',
    compose: `services:
  uptime-kuma:
    image: louislam/uptime-kuma:1
    environment:
      - SERVICE_URL_UPTIMEKUMA_3001
    volumes:
      - uptime-kuma-data:/app/data
`,
  },
  {
    type: 'n8n',
    slogan: 'Workflow automation with a visual editor and hundreds of integrations.',
    tags: ['workflow', 'automation', 'no-code'],
    documentation: 'https://docs.n8n.io',
    port: '5678',
    compose: `services:
  n8n:
    image: n8nio/n8n:latest
    environment:
      - SERVICE_URL_N8N_5678
      - N8N_EDITOR_BASE_URL=$SERVICE_URL_N8N
      - WEBHOOK_URL=$SERVICE_URL_N8N
      - N8N_HOST=$SERVICE_FQDN_N8N
      - N8N_ENCRYPTION_KEY=$SERVICE_PASSWORD_64_N8N
      - GENERIC_TIMEZONE=UTC
      - TZ=UTC
    volumes:
      - n8n-data:/home/node/.n8n
`,
  },
  {
    type: 'n8n-with-postgresql',
    slogan: 'Workflow automation with a visual editor, its data in PostgreSQL.',
    tags: ['workflow', 'automation', 'no-code', 'postgresql'],
    documentation: 'https://docs.n8n.io',
    port: '5678',
    compose: `services:
  n8n:
    image: n8nio/n8n:latest
    environment:
      - SERVICE_URL_N8N_5678
      - N8N_EDITOR_BASE_URL=$SERVICE_URL_N8N
      - WEBHOOK_URL=$SERVICE_URL_N8N
      - N8N_HOST=$SERVICE_FQDN_N8N
      - N8N_ENCRYPTION_KEY=$SERVICE_PASSWORD_64_N8N
      - GENERIC_TIMEZONE=UTC
      - TZ=UTC
      - DB_TYPE=postgresdb
      - DB_POSTGRESDB_HOST=postgresql
      - DB_POSTGRESDB_PORT=5432
      - DB_POSTGRESDB_DATABASE=n8n
      - DB_POSTGRESDB_USER=$SERVICE_USER_POSTGRES
      - DB_POSTGRESDB_PASSWORD=$SERVICE_PASSWORD_POSTGRES
    volumes:
      - n8n-data:/home/node/.n8n
${needsHealthy('postgresql')}${postgres('n8n-postgresql-data', 'n8n')}`,
  },
  {
    type: 'activepieces',
    slogan: 'Open source no-code business automation.',
    tags: ['workflow', 'automation', 'no-code'],
    documentation: 'https://www.activepieces.com/docs',
    port: '80',
    compose: `services:
  activepieces:
    image: ghcr.io/activepieces/activepieces:latest
    environment:
      - SERVICE_URL_ACTIVEPIECES_80
      - AP_FRONTEND_URL=$SERVICE_URL_ACTIVEPIECES
      - AP_API_KEY=$SERVICE_PASSWORD_64_APIKEY
      - AP_ENCRYPTION_KEY=$SERVICE_HEX_32_ENCRYPTIONKEY
      - AP_JWT_SECRET=$SERVICE_PASSWORD_64_JWT
      - AP_ENGINE_EXECUTABLE_PATH=dist/packages/engine/main.js
      - AP_ENVIRONMENT=prod
      - AP_EXECUTION_MODE=UNSANDBOXED
      - AP_TELEMETRY_ENABLED=false
      - AP_POSTGRES_HOST=postgresql
      - AP_POSTGRES_PORT=5432
      - AP_POSTGRES_DATABASE=activepieces
      - AP_POSTGRES_USERNAME=$SERVICE_USER_POSTGRES
      - AP_POSTGRES_PASSWORD=$SERVICE_PASSWORD_POSTGRES
      - AP_REDIS_HOST=redis
      - AP_REDIS_PORT=6379
    depends_on:
      postgresql:
        condition: service_healthy
      redis:
        condition: service_started
${postgres('activepieces-postgresql-data', 'activepieces')}  redis:
    image: redis:7-alpine
    volumes:
      - activepieces-redis-data:/data
`,
  },
  {
    type: 'gitea',
    slogan: 'A painless self-hosted Git service.',
    tags: ['git', 'version control', 'code'],
    documentation: 'https://docs.gitea.com',
    port: '3000',
    compose: `services:
  gitea:
    image: gitea/gitea:1
    environment:
      - SERVICE_URL_GITEA_3000
      - USER_UID=1000
      - USER_GID=1000
      - GITEA__server__ROOT_URL=$SERVICE_URL_GITEA
    volumes:
      - gitea-data:/data
`,
  },
  {
    type: 'gitea-with-postgresql',
    slogan: 'A painless self-hosted Git service, its data in PostgreSQL.',
    tags: ['git', 'version control', 'code', 'postgresql'],
    documentation: 'https://docs.gitea.com',
    port: '3000',
    compose: `services:
  gitea:
    image: gitea/gitea:1
    environment:
      - SERVICE_URL_GITEA_3000
      - USER_UID=1000
      - USER_GID=1000
      - GITEA__server__ROOT_URL=$SERVICE_URL_GITEA
      - GITEA__database__DB_TYPE=postgres
      - GITEA__database__HOST=postgresql:5432
      - GITEA__database__NAME=gitea
      - GITEA__database__USER=$SERVICE_USER_POSTGRES
      - GITEA__database__PASSWD=$SERVICE_PASSWORD_POSTGRES
    volumes:
      - gitea-data:/data
${needsHealthy('postgresql')}${postgres('gitea-postgresql-data', 'gitea')}`,
  },
  {
    type: 'code-server',
    slogan: 'VS Code in the browser.',
    tags: ['code', 'editor', 'ide', 'development'],
    documentation: 'https://coder.com/docs/code-server',
    port: '8443',
    compose: `services:
  code-server:
    image: lscr.io/linuxserver/code-server:latest
    environment:
      - SERVICE_URL_CODESERVER_8443
      - PUID=1000
      - PGID=1000
      - TZ=UTC
      - PASSWORD=$SERVICE_PASSWORD_64_PASSWORDCODESERVER
      - SUDO_PASSWORD=$SERVICE_PASSWORD_SUDOCODESERVER
      - DEFAULT_WORKSPACE=/config/workspace
    volumes:
      - code-server-config:/config
`,
  },
  {
    type: 'umami',
    slogan: 'Simple, privacy-focused web analytics.',
    tags: ['analytics', 'privacy', 'web'],
    documentation: 'https://umami.is/docs',
    port: '3000',
    compose: `services:
  umami:
    image: ghcr.io/umami-software/umami:postgresql-latest
    environment:
      - SERVICE_URL_UMAMI_3000
      - DATABASE_URL=postgres://$SERVICE_USER_POSTGRES:$SERVICE_PASSWORD_POSTGRES@postgresql:5432/umami
      - DATABASE_TYPE=postgresql
      - APP_SECRET=$SERVICE_PASSWORD_64_UMAMI
${needsHealthy('postgresql')}${postgres('umami-postgresql-data', 'umami')}`,
  },
  {
    type: 'ghost',
    slogan: 'Publishing platform for blogs and newsletters.',
    tags: ['cms', 'blog', 'publishing', 'newsletter'],
    documentation: 'https://ghost.org/docs',
    port: '2368',
    compose: `services:
  ghost:
    image: ghost:5
    environment:
      - SERVICE_URL_GHOST_2368
      - url=$SERVICE_URL_GHOST_2368
      - database__client=mysql
      - database__connection__host=mysql
      - database__connection__user=$SERVICE_USER_MYSQL
      - database__connection__password=$SERVICE_PASSWORD_MYSQL
      - database__connection__database=ghost
    volumes:
      - ghost-content-data:/var/lib/ghost/content
${needsHealthy('mysql')}  mysql:
    image: mysql:8.0
    environment:
      - MYSQL_USER=$SERVICE_USER_MYSQL
      - MYSQL_PASSWORD=$SERVICE_PASSWORD_MYSQL
      - MYSQL_DATABASE=ghost
      - MYSQL_ROOT_PASSWORD=$SERVICE_PASSWORD_MYSQLROOT
    volumes:
      - ghost-mysql-data:/var/lib/mysql
    healthcheck:
      test: ["CMD", "mysqladmin", "ping", "-h", "127.0.0.1"]
      interval: 5s
      timeout: 10s
      retries: 10
`,
  },
  {
    type: 'wordpress-with-mariadb',
    slogan: 'The most popular CMS, with a MariaDB database.',
    tags: ['cms', 'blog', 'wordpress', 'mariadb'],
    documentation: 'https://wordpress.org/documentation',
    port: '80',
    compose: `services:
  wordpress:
    image: wordpress:latest
    environment:
      - SERVICE_URL_WORDPRESS_80
      - WORDPRESS_DB_HOST=mariadb
      - WORDPRESS_DB_USER=$SERVICE_USER_MARIADB
      - WORDPRESS_DB_PASSWORD=$SERVICE_PASSWORD_MARIADB
      - WORDPRESS_DB_NAME=wordpress
    volumes:
      - wordpress-files:/var/www/html
${needsHealthy('mariadb')}${mariadb('wordpress-mariadb-data', 'wordpress')}`,
  },
  {
    type: 'wordpress-without-database',
    slogan: 'The most popular CMS; bring your own MySQL or MariaDB.',
    tags: ['cms', 'blog', 'wordpress'],
    documentation: 'https://wordpress.org/documentation',
    port: '80',
    compose: `services:
  wordpress:
    image: wordpress:latest
    environment:
      - SERVICE_URL_WORDPRESS_80
    volumes:
      - wordpress-files:/var/www/html
`,
  },
  {
    type: 'directus',
    slogan: 'Headless CMS and data platform over any SQL database.',
    tags: ['cms', 'headless', 'api', 'database'],
    documentation: 'https://docs.directus.io',
    port: '8055',
    compose: `services:
  directus:
    image: directus/directus:11
    environment:
      - SERVICE_URL_DIRECTUS_8055
      - PUBLIC_URL=$SERVICE_URL_DIRECTUS
      - SECRET=$SERVICE_PASSWORD_64_SECRET
      - ADMIN_EMAIL=admin@example.com
      - ADMIN_PASSWORD=$SERVICE_PASSWORD_ADMIN
      - DB_CLIENT=sqlite3
      - DB_FILENAME=/directus/database/data.db
    volumes:
      - directus-database:/directus/database
      - directus-uploads:/directus/uploads
`,
  },
  {
    type: 'metabase',
    slogan: 'Business intelligence: questions, dashboards and charts over your data.',
    tags: ['analytics', 'bi', 'dashboard', 'postgresql'],
    documentation: 'https://www.metabase.com/docs',
    port: '3000',
    compose: `services:
  metabase:
    image: metabase/metabase:latest
    environment:
      - SERVICE_URL_METABASE_3000
      - MB_SITE_URL=$SERVICE_URL_METABASE
      - MB_DB_TYPE=postgres
      - MB_DB_HOST=postgresql
      - MB_DB_PORT=5432
      - MB_DB_DBNAME=metabase
      - MB_DB_USER=$SERVICE_USER_POSTGRES
      - MB_DB_PASS=$SERVICE_PASSWORD_POSTGRES
${needsHealthy('postgresql')}${postgres('metabase-postgresql-data', 'metabase')}`,
  },
  {
    type: 'grafana',
    slogan: 'Dashboards and alerts for metrics, logs and traces.',
    tags: ['monitoring', 'dashboard', 'metrics', 'observability'],
    documentation: 'https://grafana.com/docs/grafana/latest',
    port: '3000',
    compose: `services:
  grafana:
    image: grafana/grafana-oss:latest
    environment:
      - SERVICE_URL_GRAFANA_3000
      - GF_SERVER_ROOT_URL=$SERVICE_URL_GRAFANA
      - GF_SERVER_DOMAIN=$SERVICE_FQDN_GRAFANA
      - GF_SECURITY_ADMIN_USER=$SERVICE_USER_GRAFANA
      - GF_SECURITY_ADMIN_PASSWORD=$SERVICE_PASSWORD_GRAFANA
    volumes:
      - grafana-data:/var/lib/grafana
`,
  },
  {
    type: 'appsmith',
    slogan: 'Low-code platform for building internal tools.',
    tags: ['low-code', 'internal tools', 'no-code'],
    documentation: 'https://docs.appsmith.com',
    port: '80',
    compose: `services:
  appsmith:
    image: index.docker.io/appsmith/appsmith-ce:latest
    environment:
      - SERVICE_URL_APPSMITH_80
      - APPSMITH_DISABLE_TELEMETRY=true
    volumes:
      - appsmith-stacks:/appsmith-stacks
`,
  },
  {
    type: 'nocodb',
    slogan: 'Turns a database into a smart spreadsheet (an Airtable alternative).',
    tags: ['no-code', 'spreadsheet', 'database', 'postgresql'],
    documentation: 'https://docs.nocodb.com',
    port: '8080',
    compose: `services:
  nocodb:
    image: nocodb/nocodb:latest
    environment:
      - SERVICE_URL_NOCODB_8080
      - NC_PUBLIC_URL=$SERVICE_URL_NOCODB
      - NC_DB=pg://postgresql:5432?u=$SERVICE_USER_POSTGRES&p=$SERVICE_PASSWORD_POSTGRES&d=nocodb
      - NC_AUTH_JWT_SECRET=$SERVICE_PASSWORD_64_JWT
    volumes:
      - nocodb-data:/usr/app/data
${needsHealthy('postgresql')}${postgres('nocodb-postgresql-data', 'nocodb')}`,
  },
  {
    type: 'wikijs',
    slogan: 'A modern wiki on Node.js.',
    tags: ['wiki', 'documentation', 'knowledge base', 'postgresql'],
    documentation: 'https://docs.requarks.io',
    port: '3000',
    compose: `services:
  wikijs:
    image: ghcr.io/requarks/wiki:2
    environment:
      - SERVICE_URL_WIKIJS_3000
      - DB_TYPE=postgres
      - DB_HOST=postgresql
      - DB_PORT=5432
      - DB_NAME=wiki
      - DB_USER=$SERVICE_USER_POSTGRES
      - DB_PASS=$SERVICE_PASSWORD_POSTGRES
${needsHealthy('postgresql')}${postgres('wikijs-postgresql-data', 'wiki')}`,
  },
  {
    type: 'keycloak-with-postgres',
    slogan: 'Identity and access management: single sign-on, OpenID Connect, SAML.',
    tags: ['auth', 'sso', 'identity', 'oidc', 'postgresql'],
    documentation: 'https://www.keycloak.org/documentation',
    port: '8080',
    compose: `services:
  keycloak:
    image: quay.io/keycloak/keycloak:26.0
    command: [start]
    environment:
      - SERVICE_URL_KEYCLOAK_8080
      - KC_HOSTNAME=$SERVICE_URL_KEYCLOAK
      - KC_HTTP_ENABLED=true
      - KC_PROXY_HEADERS=xforwarded
      - KC_HEALTH_ENABLED=true
      - KC_BOOTSTRAP_ADMIN_USERNAME=$SERVICE_USER_ADMIN
      - KC_BOOTSTRAP_ADMIN_PASSWORD=$SERVICE_PASSWORD_ADMIN
      - KC_DB=postgres
      - KC_DB_URL=jdbc:postgresql://postgresql:5432/keycloak
      - KC_DB_USERNAME=$SERVICE_USER_POSTGRES
      - KC_DB_PASSWORD=$SERVICE_PASSWORD_POSTGRES
${needsHealthy('postgresql')}${postgres('keycloak-postgresql-data', 'keycloak')}`,
  },
];
