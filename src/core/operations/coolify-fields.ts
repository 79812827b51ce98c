import type { DatabaseKind } from '../model/kinds.js';
import type { CoolifyField } from '../operation.js';

/**
 * Coolify 4.3.11 fields berth knows but does not apply (its controllers' `$allowedFields`), per
 * operation family, declared once for every door: a value that asks for what berth does anyway
 * is accepted (`accepts`), any other is refused by name with what to do instead. A field berth
 * would accept and then ignore is never in `accepts`.
 */
const field = (hint: string, ...accepts: CoolifyField['accepts']): CoolifyField => ({ hint, accepts });
/** Values that ask for nothing. */
const NONE = [null, ''] as const;

const NO_BUILD_SERVERS = 'berth has no build servers: an application is built on the server that runs it';
const NO_PROXY = "berth's proxy does not do this yet; configure it in your own proxy in front of berth's";
const NO_WEBHOOKS = 'berth has no git webhooks: deploy with POST /deploy (deploy) after a push';
const GIT_BUILDS_ONLY = 'the build steps apply to an application built from a git repository with build_pack "nixpacks" or "static" (POST /applications/public or /applications/private-deploy-key)';
const STATIC_PACK = 'a static site is build_pack "static" of a git application (its files served on port 80); berth has no static switch or nginx configuration';
const NO_HOOKS = "berth runs no commands around a deployment: run it in the image's entrypoint, or as a scheduled task";
const COMPOSE =
  'a repository\'s compose file is build_pack "dockercompose" of a git application (POST /applications/public or /applications/private-deploy-key); an inline compose file is a service: POST /services with docker_compose_raw';
const COMPOSE_COMMANDS = "berth starts and builds a dockercompose application's services as its compose file says: change the compose file in the repository";

export const SERVER_FIELDS: Readonly<Record<string, CoolifyField>> = {
  is_build_server: field(NO_BUILD_SERVERS, false),
  instant_validate: field('validate it with POST /servers/{uuid}/validate (validate_server) once it is registered', false),
};

export const APPLICATION_FIELDS: Readonly<Record<string, CoolifyField>> = {
  git_commit_sha: field('berth builds the head of git_branch at each deploy and cannot pin a commit yet', 'HEAD', ...NONE),
  is_static: field(STATIC_PACK, false),
  is_spa: field(STATIC_PACK, false),
  static_image: field(STATIC_PACK, ...NONE),
  custom_nginx_configuration: field(STATIC_PACK, ...NONE),
  install_command: field(GIT_BUILDS_ONLY, ...NONE),
  build_command: field(GIT_BUILDS_ONLY, ...NONE),
  start_command: field(GIT_BUILDS_ONLY, ...NONE),
  publish_directory: field(GIT_BUILDS_ONLY, ...NONE),
  pre_deployment_command: field(NO_HOOKS, ...NONE),
  pre_deployment_command_container: field(NO_HOOKS, ...NONE),
  post_deployment_command: field(NO_HOOKS, ...NONE),
  post_deployment_command_container: field(NO_HOOKS, ...NONE),
  is_auto_deploy_enabled: field(NO_WEBHOOKS, false),
  watch_paths: field(NO_WEBHOOKS, ...NONE),
  manual_webhook_secret_github: field(NO_WEBHOOKS, ...NONE),
  manual_webhook_secret_gitlab: field(NO_WEBHOOKS, ...NONE),
  manual_webhook_secret_bitbucket: field(NO_WEBHOOKS, ...NONE),
  manual_webhook_secret_gitea: field(NO_WEBHOOKS, ...NONE),
  use_build_server: field(NO_BUILD_SERVERS, false, null),
  is_force_https_enabled: field(NO_PROXY, false),
  // "both" answers on www and non-www alike: no redirect, which is what berth does.
  redirect: field(NO_PROXY, 'both'),
  is_http_basic_auth_enabled: field(NO_PROXY, false),
  http_basic_auth_username: field(NO_PROXY, ...NONE),
  http_basic_auth_password: field(NO_PROXY, ...NONE),
  autogenerate_domain: field('berth generates no domains: send domains yourself', false),
  // As on services: a berth application always joins its destination's network, so only true says what it does.
  connect_to_docker_network: field("an application always joins its destination's network: send true or leave it out", true),
  // berth keeps every label literal (no $ interpolation), Coolify's true.
  is_container_label_escape_enabled: field('berth keeps every label literal (no $ interpolation)', true),
  is_preserve_repository_enabled: field('berth keeps no copy of the repository in the container', false),
  custom_network_aliases: field("berth gives a container no network aliases yet: other containers reach it by the application's uuid", ...NONE),
  health_check_type: field('berth checks health over HTTP only (health_check_path, health_check_port, ...)', 'http'),
  health_check_command: field('berth checks health over HTTP only (health_check_path, health_check_port, ...)', ...NONE),
  docker_compose_location: field(COMPOSE, ...NONE),
  docker_compose_raw: field(COMPOSE, ...NONE),
  docker_compose_domains: field(COMPOSE, null),
  docker_compose_custom_start_command: field(COMPOSE_COMMANDS, ...NONE),
  docker_compose_custom_build_command: field(COMPOSE_COMMANDS, ...NONE),
};

/** The fields of a git application's build, real fields of the creates from a repository and of PATCH. */
const BUILD_KEYS = ['install_command', 'build_command', 'start_command', 'publish_directory', 'docker_compose_location', 'docker_compose_domains'];

/** Creates from a git repository: the build steps are fields of theirs. */
export const GIT_APPLICATION_FIELDS: Readonly<Record<string, CoolifyField>> = Object.fromEntries(Object.entries(APPLICATION_FIELDS).filter(([k]) => !BUILD_KEYS.includes(k)));

/** PATCH /applications/{uuid}: the same, and a deploy asked for with the change. */
export const APPLICATION_UPDATE_FIELDS: Readonly<Record<string, CoolifyField>> = {
  ...GIT_APPLICATION_FIELDS,
  instant_deploy: field('deploy with POST /deploy (deploy) after the change', false, null),
};

const initdbEnv = (name: string) => field(`set ${name} with POST /databases/{uuid}/envs before its first start (create it with instant_deploy false)`, ...NONE);
const confFile = (what: string) => field(`berth cannot install a ${what} yet`, ...NONE);
const mysqlConf = field('mount it as a file storage: POST /databases/{uuid}/storages with type "file", mount_path /etc/mysql/conf.d/custom.cnf and its content', ...NONE);

/** Each database kind's own configuration fields (Coolify allows every kind's on every create). */
const DATABASE_FIELDS = {
  postgresql: { postgres_initdb_args: initdbEnv('POSTGRES_INITDB_ARGS'), postgres_host_auth_method: initdbEnv('POSTGRES_HOST_AUTH_METHOD'), postgres_conf: confFile('postgresql.conf') },
  mysql: { mysql_conf: mysqlConf },
  mariadb: { mariadb_conf: mysqlConf },
  redis: { redis_conf: confFile('redis.conf') },
  keydb: { keydb_conf: confFile('keydb.conf') },
  mongodb: { mongo_conf: confFile('mongod.conf') },
  clickhouse: {},
  dragonfly: {},
} as const satisfies Record<DatabaseKind, Record<string, CoolifyField>>;

/** Every create takes every kind's configuration fields, as Coolify's do (a client sends `postgres_conf: null` to any). */
export const DATABASE_CREATE_FIELDS: Readonly<Record<string, CoolifyField>> = Object.assign({}, ...Object.values(DATABASE_FIELDS));

/** PATCH /databases/{uuid}: every kind's configuration fields, and a restart asked for with the change. */
export const DATABASE_UPDATE_FIELDS: Readonly<Record<string, CoolifyField>> = {
  ...DATABASE_CREATE_FIELDS,
  instant_deploy: field('restart it with POST /databases/{uuid}/restart after the change', false, null),
};

const NO_SENTINEL = 'berth runs no Sentinel agent on a server: there is nothing to rebind';
const NO_CLAIM_FILE = "berth writes no ownership file on the host: the claim is recorded in this instance's store";

/** Coolify's server transfer fields (ServerTransferController), per route. */
export const SERVER_TRANSFER_FIELDS = {
  import: {
    adopt_mode: field("berth takes over the server's containers whenever the uuids are kept (preserve_uuids, the default); there is no other mode", true),
    write_remote: field(NO_CLAIM_FILE, false),
    rebind_sentinel: field(NO_SENTINEL, false),
  },
  claim: { write_remote: field(NO_CLAIM_FILE, false), rebind_sentinel: field(NO_SENTINEL, false) },
} as const satisfies Record<string, Readonly<Record<string, CoolifyField>>>;
