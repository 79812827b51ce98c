import { needsHealthy, postgres, type BuiltinTemplate } from './template.js';

/** berth's own one-click templates, part two: data, messaging, media, security and utilities (see builtin-apps.ts). */
export const BUILTIN_TOOLS: BuiltinTemplate[] = [
  {
    type: 'vaultwarden',
    slogan: 'Bitwarden-compatible password manager server.',
    tags: ['password manager', 'security', 'bitwarden'],
    documentation: 'https://github.com/dani-garcia/vaultwarden/wiki',
    port: '80',
    compose: `services:
  vaultwarden:
    image: vaultwarden/server:latest
    environment:
      - SERVICE_URL_VAULTWARDEN_80
      - DOMAIN=$SERVICE_URL_VAULTWARDEN
      - ADMIN_TOKEN=$SERVICE_PASSWORD_64_ADMIN
      - SIGNUPS_ALLOWED=true
    volumes:
      - vaultwarden-data:/data
`,
  },
  {
    type: 'minio',
    slogan: 'S3-compatible object storage.',
    tags: ['object storage', 's3', 'storage'],
    documentation: 'https://min.io/docs/minio/container/index.html',
    port: '9001',
    compose: `services:
  minio:
    image: quay.io/minio/minio:latest
    command: server /data --console-address ":9001"
    environment:
      - SERVICE_URL_MINIO_9000
      - SERVICE_URL_MINIOCONSOLE_9001
      - MINIO_ROOT_USER=$SERVICE_USER_MINIO
      - MINIO_ROOT_PASSWORD=$SERVICE_PASSWORD_MINIO
    volumes:
      - minio-data:/data
`,
  },
  {
    type: 'mosquitto',
    slogan: 'Eclipse Mosquitto, a lightweight MQTT broker.',
    tags: ['mqtt', 'messaging', 'iot'],
    documentation: 'https://mosquitto.org/documentation',
    port: '1883',
    // The broker's user and password come from the generated variables; the password file is
    // written at each start, so changing SERVICE_PASSWORD_MOSQUITTO and redeploying changes it.
    compose: `services:
  mosquitto:
    image: eclipse-mosquitto:2
    environment:
      - SERVICE_URL_MOSQUITTO_1883
      - MQTT_USERNAME=$SERVICE_USER_MOSQUITTO
      - MQTT_PASSWORD=$SERVICE_PASSWORD_MOSQUITTO
    entrypoint:
      - sh
      - -c
      - |
        printf 'listener 1883\\nallow_anonymous false\\npassword_file /mosquitto/config/passwords\\npersistence true\\npersistence_location /mosquitto/data/\\n' > /mosquitto/config/mosquitto.conf
        mosquitto_passwd -b -c /mosquitto/config/passwords "$$MQTT_USERNAME" "$$MQTT_PASSWORD"
        chown -R mosquitto:mosquitto /mosquitto/config /mosquitto/data
        exec mosquitto -c /mosquitto/config/mosquitto.conf
    volumes:
      - mosquitto-data:/mosquitto/data
`,
  },
  {
    type: 'rabbitmq',
    slogan: 'Message broker with a management interface.',
    tags: ['messaging', 'queue', 'amqp'],
    documentation: 'https://www.rabbitmq.com/docs',
    port: '15672',
    compose: `services:
  rabbitmq:
    image: rabbitmq:3-management
    environment:
      - SERVICE_URL_RABBITMQ_15672
      - RABBITMQ_DEFAULT_USER=$SERVICE_USER_RABBITMQ
      - RABBITMQ_DEFAULT_PASS=$SERVICE_PASSWORD_RABBITMQ
    volumes:
      - rabbitmq-data:/var/lib/rabbitmq
`,
  },
  {
    type: 'ntfy',
    slogan: 'Push notifications to phones and desktops over simple HTTP.',
    tags: ['notifications', 'push', 'messaging'],
    documentation: 'https://docs.ntfy.sh',
    port: '80',
    compose: `services:
  ntfy:
    image: binwiederhier/ntfy:latest
    command: [serve]
    environment:
      - SERVICE_URL_NTFY_80
      - NTFY_BASE_URL=$SERVICE_URL_NTFY
      - NTFY_CACHE_FILE=/var/cache/ntfy/cache.db
      - NTFY_AUTH_FILE=/var/lib/ntfy/auth.db
      - TZ=UTC
    volumes:
      - ntfy-cache:/var/cache/ntfy
      - ntfy-data:/var/lib/ntfy
`,
  },
  {
    type: 'gotify',
    slogan: 'A simple server for sending and receiving messages.',
    tags: ['notifications', 'push', 'messaging'],
    documentation: 'https://gotify.net/docs',
    port: '80',
    compose: `services:
  gotify:
    image: gotify/server:latest
    environment:
      - SERVICE_URL_GOTIFY_80
      - GOTIFY_DEFAULTUSER_NAME=$SERVICE_USER_GOTIFY
      - GOTIFY_DEFAULTUSER_PASS=$SERVICE_PASSWORD_GOTIFY
      - TZ=UTC
    volumes:
      - gotify-data:/app/data
`,
  },
  {
    type: 'meilisearch',
    slogan: 'Fast, typo-tolerant search engine with a RESTful API.',
    tags: ['search', 'search engine', 'api'],
    documentation: 'https://www.meilisearch.com/docs',
    port: '7700',
    compose: `services:
  meilisearch:
    image: getmeili/meilisearch:latest
    environment:
      - SERVICE_URL_MEILISEARCH_7700
      - MEILI_MASTER_KEY=$SERVICE_PASSWORD_MEILISEARCH
      - MEILI_ENV=production
      - MEILI_NO_ANALYTICS=true
    volumes:
      - meilisearch-data:/meili_data
`,
  },
  {
    type: 'typesense',
    slogan: 'Open source, typo-tolerant search engine.',
    tags: ['search', 'search engine', 'api'],
    documentation: 'https://typesense.org/docs',
    port: '8108',
    compose: `services:
  typesense:
    image: typesense/typesense:27.1
    environment:
      - SERVICE_URL_TYPESENSE_8108
      - TYPESENSE_API_KEY=$SERVICE_PASSWORD_TYPESENSE
      - TYPESENSE_DATA_DIR=/data
    volumes:
      - typesense-data:/data
`,
  },
  {
    type: 'qdrant',
    slogan: 'Vector database and similarity search engine.',
    tags: ['vector database', 'ai', 'search'],
    documentation: 'https://qdrant.tech/documentation',
    port: '6333',
    compose: `services:
  qdrant:
    image: qdrant/qdrant:latest
    environment:
      - SERVICE_URL_QDRANT_6333
      - QDRANT__SERVICE__API_KEY=$SERVICE_PASSWORD_QDRANTAPIKEY
    volumes:
      - qdrant-storage:/qdrant/storage
`,
  },
  {
    type: 'open-webui',
    slogan: 'A user-friendly web interface for LLMs (Ollama, OpenAI-compatible APIs).',
    tags: ['ai', 'llm', 'chat', 'ollama'],
    documentation: 'https://docs.openwebui.com',
    port: '8080',
    compose: `services:
  open-webui:
    image: ghcr.io/open-webui/open-webui:main
    environment:
      - SERVICE_URL_OPENWEBUI_8080
      - WEBUI_SECRET_KEY=$SERVICE_PASSWORD_64_WEBUI
    volumes:
      - open-webui-data:/app/backend/data
`,
  },
  {
    type: 'pgadmin',
    slogan: 'Administration and development platform for PostgreSQL.',
    tags: ['postgresql', 'database', 'admin'],
    documentation: 'https://www.pgadmin.org/docs',
    port: '80',
    compose: `services:
  pgadmin:
    image: dpage/pgadmin4:latest
    environment:
      - SERVICE_URL_PGADMIN_80
      - PGADMIN_DEFAULT_EMAIL=admin@example.com
      - PGADMIN_DEFAULT_PASSWORD=$SERVICE_PASSWORD_PGADMIN
    volumes:
      - pgadmin-data:/var/lib/pgadmin
`,
  },
  {
    type: 'changedetection',
    slogan: 'Website change detection and monitoring.',
    tags: ['monitoring', 'web', 'notifications'],
    documentation: 'https://github.com/dgtlmoon/changedetection.io/wiki',
    port: '5000',
    compose: `services:
  changedetection:
    image: ghcr.io/dgtlmoon/changedetection.io:latest
    environment:
      - SERVICE_URL_CHANGEDETECTION_5000
      - BASE_URL=$SERVICE_URL_CHANGEDETECTION
    volumes:
      - changedetection-data:/datastore
`,
  },
  {
    type: 'miniflux',
    slogan: 'Minimalist and opinionated feed reader.',
    tags: ['rss', 'reader', 'news', 'postgresql'],
    documentation: 'https://miniflux.app/docs',
    port: '8080',
    compose: `services:
  miniflux:
    image: miniflux/miniflux:latest
    environment:
      - SERVICE_URL_MINIFLUX_8080
      - BASE_URL=$SERVICE_URL_MINIFLUX
      - DATABASE_URL=postgres://$SERVICE_USER_POSTGRES:$SERVICE_PASSWORD_POSTGRES@postgresql/miniflux?sslmode=disable
      - RUN_MIGRATIONS=1
      - CREATE_ADMIN=1
      - ADMIN_USERNAME=$SERVICE_USER_MINIFLUX
      - ADMIN_PASSWORD=$SERVICE_PASSWORD_MINIFLUX
${needsHealthy('postgresql')}${postgres('miniflux-postgresql-data', 'miniflux')}`,
  },
  {
    type: 'freshrss',
    slogan: 'A free, self-hostable feed aggregator.',
    tags: ['rss', 'reader', 'news'],
    documentation: 'https://freshrss.github.io/FreshRSS',
    port: '80',
    compose: `services:
  freshrss:
    image: freshrss/freshrss:latest
    environment:
      - SERVICE_URL_FRESHRSS_80
      - CRON_MIN=1,31
      - TZ=UTC
    volumes:
      - freshrss-data:/var/www/FreshRSS/data
      - freshrss-extensions:/var/www/FreshRSS/extensions
`,
  },
  {
    type: 'linkding',
    slogan: 'A minimal, fast bookmark manager.',
    tags: ['bookmarks', 'links', 'productivity'],
    documentation: 'https://linkding.link',
    port: '9090',
    compose: `services:
  linkding:
    image: sissbruecker/linkding:latest
    environment:
      - SERVICE_URL_LINKDING_9090
      - LD_SUPERUSER_NAME=$SERVICE_USER_LINKDING
      - LD_SUPERUSER_PASSWORD=$SERVICE_PASSWORD_LINKDING
    volumes:
      - linkding-data:/etc/linkding/data
`,
  },
  {
    type: 'mealie',
    slogan: 'Recipe manager and meal planner.',
    tags: ['recipes', 'meal planning', 'food'],
    documentation: 'https://docs.mealie.io',
    port: '9000',
    compose: `services:
  mealie:
    image: ghcr.io/mealie-recipes/mealie:latest
    environment:
      - SERVICE_URL_MEALIE_9000
      - BASE_URL=$SERVICE_URL_MEALIE
      - ALLOW_SIGNUP=false
      - TZ=UTC
    volumes:
      - mealie-data:/app/data
`,
  },
  {
    type: 'memos',
    slogan: 'Lightweight, self-hosted note taking.',
    tags: ['notes', 'memo', 'productivity'],
    documentation: 'https://www.usememos.com/docs',
    port: '5230',
    compose: `services:
  memos:
    image: neosmemo/memos:stable
    environment:
      - SERVICE_URL_MEMOS_5230
    volumes:
      - memos-data:/var/opt/memos
`,
  },
  {
    type: 'jellyfin',
    slogan: 'The free software media system.',
    tags: ['media', 'streaming', 'video', 'music'],
    documentation: 'https://jellyfin.org/docs',
    port: '8096',
    compose: `services:
  jellyfin:
    image: jellyfin/jellyfin:latest
    environment:
      - SERVICE_URL_JELLYFIN_8096
      - JELLYFIN_PublishedServerUrl=$SERVICE_URL_JELLYFIN
    volumes:
      - jellyfin-config:/config
      - jellyfin-cache:/cache
      - jellyfin-media:/media
`,
  },
  {
    type: 'actualbudget',
    slogan: 'Local-first personal finance and budgeting.',
    tags: ['finance', 'budget', 'money'],
    documentation: 'https://actualbudget.org/docs',
    port: '5006',
    compose: `services:
  actual-server:
    image: actualbudget/actual-server:latest
    environment:
      - SERVICE_URL_ACTUAL_5006
    volumes:
      - actual-data:/data
`,
  },
  {
    type: 'searxng',
    slogan: 'A privacy-respecting metasearch engine.',
    tags: ['search', 'privacy', 'metasearch'],
    documentation: 'https://docs.searxng.org',
    port: '8080',
    compose: `services:
  searxng:
    image: searxng/searxng:latest
    environment:
      - SERVICE_URL_SEARXNG_8080
      - SEARXNG_BASE_URL=$SERVICE_URL_SEARXNG
      - SEARXNG_SECRET=$SERVICE_PASSWORD_SEARXNG
    volumes:
      - searxng-config:/etc/searxng
`,
  },
  {
    type: 'privatebin',
    slogan: 'Minimalist, encrypted pastebin.',
    tags: ['pastebin', 'privacy', 'encryption'],
    documentation: 'https://privatebin.info',
    port: '8080',
    compose: `services:
  privatebin:
    image: privatebin/nginx-fpm-alpine:latest
    environment:
      - SERVICE_URL_PRIVATEBIN_8080
    volumes:
      - privatebin-data:/srv/data
`,
  },
  {
    type: 'filebrowser',
    slogan: 'A web file manager for the files in a volume.',
    tags: ['files', 'file manager', 'storage'],
    documentation: 'https://filebrowser.org',
    port: '80',
    compose: `services:
  filebrowser:
    image: filebrowser/filebrowser:latest
    environment:
      - SERVICE_URL_FILEBROWSER_80
    volumes:
      - filebrowser-files:/srv
      - filebrowser-database:/database
`,
  },
  {
    type: 'it-tools',
    slogan: 'Handy online tools for developers.',
    tags: ['developer', 'tools', 'utilities'],
    documentation: 'https://github.com/CorentinTh/it-tools',
    port: '80',
    compose: `services:
  it-tools:
    image: corentinth/it-tools:latest
    environment:
      - SERVICE_URL_ITTOOLS_80
`,
  },
  {
    type: 'excalidraw',
    slogan: 'Virtual whiteboard for sketching hand-drawn diagrams.',
    tags: ['whiteboard', 'drawing', 'diagrams'],
    documentation: 'https://docs.excalidraw.com',
    port: '80',
    compose: `services:
  excalidraw:
    image: excalidraw/excalidraw:latest
    environment:
      - SERVICE_URL_EXCALIDRAW_80
`,
  },
  {
    type: 'stirling-pdf',
    slogan: 'Locally hosted web tools for PDF files.',
    tags: ['pdf', 'documents', 'tools'],
    documentation: 'https://docs.stirlingpdf.com',
    port: '8080',
    compose: `services:
  stirling-pdf:
    image: frooodle/s-pdf:latest
    environment:
      - SERVICE_URL_SPDF_8080
      - DOCKER_ENABLE_SECURITY=false
    volumes:
      - stirling-pdf-training-data:/usr/share/tessdata
      - stirling-pdf-configs:/configs
`,
  },
  {
    type: 'pocketbase',
    slogan: 'Open source backend in one file: database, auth, files and an admin UI.',
    tags: ['backend', 'database', 'auth', 'api'],
    documentation: 'https://pocketbase.io/docs',
    port: '8090',
    compose: `services:
  pocketbase:
    image: ghcr.io/muchobien/pocketbase:latest
    environment:
      - SERVICE_URL_POCKETBASE_8090
    volumes:
      - pocketbase-data:/pb_data
`,
  },
  {
    type: 'nextcloud',
    slogan: 'Files, calendars, contacts and collaboration on your own server.',
    tags: ['files', 'collaboration', 'cloud', 'storage'],
    documentation: 'https://docs.nextcloud.com',
    port: '80',
    compose: `services:
  nextcloud:
    image: lscr.io/linuxserver/nextcloud:latest
    environment:
      - SERVICE_URL_NEXTCLOUD_80
      - PUID=1000
      - PGID=1000
      - TZ=UTC
    volumes:
      - nextcloud-config:/config
      - nextcloud-data:/data
`,
  },
  {
    type: 'syncthing',
    slogan: 'Continuous file synchronization between devices.',
    tags: ['sync', 'files', 'backup'],
    documentation: 'https://docs.syncthing.net',
    port: '8384',
    compose: `services:
  syncthing:
    image: syncthing/syncthing:latest
    environment:
      - SERVICE_URL_SYNCTHING_8384
    volumes:
      - syncthing-data:/var/syncthing
`,
  },
  {
    type: 'listmonk',
    slogan: 'Self-hosted newsletter and mailing list manager.',
    tags: ['newsletter', 'email', 'mailing list', 'postgresql'],
    documentation: 'https://listmonk.app/docs',
    port: '9000',
    // --install --idempotent creates the schema on the first start and does nothing later.
    compose: `services:
  listmonk:
    image: listmonk/listmonk:latest
    command: [sh, -c, "./listmonk --install --idempotent --yes && exec ./listmonk"]
    environment:
      - SERVICE_URL_LISTMONK_9000
      - LISTMONK_app__address=0.0.0.0:9000
      - LISTMONK_db__host=postgresql
      - LISTMONK_db__port=5432
      - LISTMONK_db__database=listmonk
      - LISTMONK_db__user=$SERVICE_USER_POSTGRES
      - LISTMONK_db__password=$SERVICE_PASSWORD_POSTGRES
      - LISTMONK_db__ssl_mode=disable
      - LISTMONK_ADMIN_USER=$SERVICE_USER_LISTMONK
      - LISTMONK_ADMIN_PASSWORD=$SERVICE_PASSWORD_LISTMONK
    volumes:
      - listmonk-uploads:/listmonk/uploads
${needsHealthy('postgresql')}${postgres('listmonk-postgresql-data', 'listmonk')}`,
  },
];
