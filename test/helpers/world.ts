import { generateKeyPairSync } from 'node:crypto';
import type { Operation } from '../../src/core/operation.js';
import { partUuid } from '../../src/core/operations/service-parts.js';
import { newUuid } from '../../src/ids.js';
import { call, type TestServer } from './server.js';

/** One of everything a team can own, created through the REST API with a root token. */
export interface World {
  token: string;
  keyUuid: string;
  serverUuid: string;
  server2Uuid: string;
  destinationUuid: string;
  destination2Uuid: string;
  projectUuid: string;
  environmentUuid: string;
  appUuid: string;
  appEnvUuid: string;
  appStorageUuid: string;
  databaseUuid: string;
  databaseEnvUuid: string;
  databaseStorageUuid: string;
  serviceUuid: string;
  serviceEnvUuid: string;
  deploymentUuid: string;
  migrationUuid: string;
  s3StorageUuid: string;
  cloudInitScriptUuid: string;
  /** A GitHub app record (Coolify addresses it by numeric id) and a cloud provider token. */
  githubAppId: string;
  gitlabAppId: string;
  githubAppUuid: string;
  cloudTokenUuid: string;
  /** Shared variables (ids, as Coolify's {env_id}) of the team, the project, its production environment and the first server. */
  teamEnvId: string;
  projectEnvId: string;
  environmentEnvId: string;
  serverEnvId: string;
  /** A volume of the service (from its compose file); the app's, the database's and this one have backup schedules. */
  serviceStorageUuid: string;
  /** A volume added to the service through the API (a compose file's own volumes are read-only). */
  serviceApiStorageUuid: string;
  /** The record of the app's tag "web". */
  tagUuid: string;
  /** A second environment of the project (where move sends a resource). */
  stagingUuid: string;
  backupUuid: string;
  backupExecutionUuid: string;
  /** A scheduled task of the app, and of the service's web container. */
  appTaskUuid: string;
  serviceTaskUuid: string;
  /** A call held for a person (approvals). */
  approvalUuid: string;
  /** export_server's bundle of the first server, with its secrets (what import_server takes). */
  serverBundle: Record<string, unknown>;
}

export const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEICQoNB7XUAbZAk8sqCmpVae3Ht7afwkmFD6cCql5q3bz
-----END PRIVATE KEY-----

`;

export const COMPOSE = `services:
  web:
    image: nginx:1.27
    environment:
      GREETING: hello
    volumes:
      - web-data:/usr/share/nginx/html
  cache:
    image: redis:7
    volumes:
      - cache-data:/data
volumes:
  web-data:
  cache-data:
`;

/** An S3 storage whose endpoint never resolves (.invalid): validating it fails at once, offline. */
export const S3_SAMPLE = { endpoint: 'https://s3.invalid', bucket: 'berth-backups', region: 'us-east-1', key: 'AKIDSAMPLE', secret: 'sample-secret' };

/** A GitHub app record's fields (the key is the world's); its secrets are what redaction must hide. */
export const GITHUB_APP_SAMPLE = {
  // GitHub's API at an .invalid address: a call through the app fails at once, offline (502).
  api_url: 'https://api.github.invalid',
  html_url: 'https://github.com',
  app_id: 101,
  installation_id: 202,
  client_id: 'Iv1.sample',
  client_secret: 'github-client-secret-value',
  webhook_secret: 'github-webhook-secret-value',
};
export const CLOUD_TOKEN_SAMPLE = { provider: 'hetzner', token: 'cloud-token-secret-value' };

async function ok(s: TestServer, token: string, method: string, path: string, body?: unknown) {
  const r = await call(s.url, method, path, { token, body });
  if (r.status >= 300) throw new Error(`${method} ${path} → ${r.status} ${r.text}`);
  return r.json;
}

/** Builds a world for a team whose root token is given (default: the instance's root team). */
export async function buildWorld(s: TestServer, token = s.rootToken, tag = 'w'): Promise<World> {
  const keyUuid = (await ok(s, token, 'POST', '/api/v1/security/keys', { name: `${tag}-key`, private_key: TEST_KEY })).uuid;
  const serverUuid = (await ok(s, token, 'POST', '/api/v1/servers', { name: `${tag}-one`, ip: '10.0.0.1', private_key_uuid: keyUuid })).uuid;
  const server2Uuid = (await ok(s, token, 'POST', '/api/v1/servers', { name: `${tag}-two`, ip: '10.0.0.2' })).uuid;
  const destinationUuid = (await ok(s, token, 'GET', `/api/v1/servers/${serverUuid}/destinations`))[0].uuid;
  const destination2Uuid = (await ok(s, token, 'GET', `/api/v1/servers/${server2Uuid}/destinations`))[0].uuid;
  const projectUuid = (await ok(s, token, 'POST', '/api/v1/projects', { name: `${tag} project` })).uuid;
  const environmentUuid = (await ok(s, token, 'GET', `/api/v1/projects/${projectUuid}/environments`))[0].uuid;
  const place = { project_uuid: projectUuid, server_uuid: serverUuid, environment_name: 'production' };
  const appUuid = (
    await ok(s, token, 'POST', '/api/v1/applications/dockerimage', { ...place, docker_registry_image_name: 'nginx', docker_registry_image_tag: '1.27', ports_exposes: '80', tags: ['web'] })
  ).uuid;
  await arrangePreview(s, appUuid, WORLD_PREVIEW);
  const appEnvUuid = (await ok(s, token, 'POST', `/api/v1/applications/${appUuid}/envs`, { key: 'API_KEY', value: 'app-secret-value' })).uuid;
  const appStorageUuid = (await ok(s, token, 'POST', `/api/v1/applications/${appUuid}/storages`, { type: 'persistent', name: 'data', mount_path: '/data' })).uuid;
  const databaseUuid = (await ok(s, token, 'POST', '/api/v1/databases/postgresql', { ...place, postgres_password: 'db-secret-password' })).uuid;
  const databaseEnvUuid = (await ok(s, token, 'POST', `/api/v1/databases/${databaseUuid}/envs`, { key: 'PGTZ', value: 'UTC' })).uuid;
  const databaseStorageUuid = (await ok(s, token, 'GET', `/api/v1/databases/${databaseUuid}/storages`)).persistent_storages[0].uuid;
  const serviceUuid = (await ok(s, token, 'POST', '/api/v1/services', { ...place, docker_compose_raw: Buffer.from(COMPOSE).toString('base64') })).uuid;
  const serviceEnvUuid = (await ok(s, token, 'POST', `/api/v1/services/${serviceUuid}/envs`, { key: 'MODE', value: 'service-secret' })).uuid;
  const deploymentUuid = (await ok(s, token, 'POST', `/api/v1/deploy?uuid=${appUuid}`)).deployments[0].deployment_uuid;
  // A finished migration record: the database moves to the second server and back.
  const migrationUuid = (await ok(s, token, 'POST', `/api/v1/databases/${databaseUuid}/migrate`, { destination_uuid: destination2Uuid })).migration_uuid;
  await ok(s, token, 'POST', `/api/v1/databases/${databaseUuid}/migrate`, { destination_uuid: destinationUuid });
  const cloudInitScriptUuid = (await ok(s, token, 'POST', '/api/v1/cloud-init-scripts', { name: `${tag} init`, script: '#!/bin/sh\necho hello\n' })).uuid;
  const s3StorageUuid = (await ok(s, token, 'POST', '/api/v1/s3-storages', { ...S3_SAMPLE, name: `${tag}-s3` })).uuid;
  const shared = async (base: string, key: string) => String((await ok(s, token, 'POST', `/api/v1${base}/envs`, { key, value: `${key.toLowerCase()}-secret-value` })).id);
  const teamEnvId = await shared('/team', 'TEAM_SHARED');
  const projectEnvId = await shared(`/projects/${projectUuid}`, 'PROJECT_SHARED');
  const environmentEnvId = await shared(`/projects/${projectUuid}/environments/${environmentUuid}`, 'ENVIRONMENT_SHARED');
  const serverEnvId = await shared(`/servers/${serverUuid}`, 'SERVER_SHARED');
  // A yearly backup with one on-demand run (it fails at once: the server is record-only).
  const backup = await ok(s, token, 'POST', `/api/v1/databases/${databaseUuid}/backups`, { frequency: 'yearly', backup_now: true });
  const backupUuid = backup.uuid as string;
  const backupExecutionUuid = backup.execution_uuid as string;
  const serviceStorageUuid = (await ok(s, token, 'GET', `/api/v1/services/${serviceUuid}/storages`)).persistent_storages[0].uuid;
  for (const [collection, uuid, storage] of [
    ['applications', appUuid, appStorageUuid],
    ['databases', databaseUuid, databaseStorageUuid],
    ['services', serviceUuid, serviceStorageUuid],
  ]) {
    await ok(s, token, 'PUT', `/api/v1/${collection}/${uuid}/storages/${storage}/backups`, { frequency: 'weekly' });
  }
  const serviceApiStorageUuid = (
    await ok(s, token, 'POST', `/api/v1/services/${serviceUuid}/storages`, { type: 'persistent', name: 'api-vol', mount_path: '/api-vol', resource_uuid: partUuid(serviceUuid, 'web') })
  ).uuid;
  const stagingUuid = (await ok(s, token, 'POST', `/api/v1/projects/${projectUuid}/environments`, { name: 'elsewhere' })).uuid;
  const githubApp = await ok(s, token, 'POST', '/api/v1/github-apps', { ...GITHUB_APP_SAMPLE, name: `${tag} gh`, private_key_uuid: keyUuid });
  const gitlabAppId = String((await ok(s, token, 'POST', '/api/v1/gitlab-apps', { name: `${tag} gl`, html_url: 'https://gitlab.example.test' })).id);
  const cloudTokenUuid = (await ok(s, token, 'POST', '/api/v1/cloud-tokens', { ...CLOUD_TOKEN_SAMPLE, name: `${tag} cloud` })).uuid;
  const tagUuid = (await ok(s, token, 'GET', '/api/v1/tags')).find((t: { name: string }) => t.name === 'web').uuid;
  const appTaskUuid = (await ok(s, token, 'POST', `/api/v1/applications/${appUuid}/scheduled-tasks`, { name: 'nightly', command: 'echo nightly', frequency: 'daily' })).uuid;
  const serviceTaskUuid = (await ok(s, token, 'POST', `/api/v1/services/${serviceUuid}/scheduled-tasks`, { name: 'flush', command: 'echo flush', frequency: '0 3 * * *', container: 'web' })).uuid;
  const approvalUuid = await heldCall(s, token, projectUuid);
  const serverBundle = await ok(s, token, 'GET', `/api/v1/servers/${serverUuid}/export`);
  return {
    serverBundle,
    approvalUuid,
    appTaskUuid,
    serviceTaskUuid,
    backupUuid,
    backupExecutionUuid,
    serviceStorageUuid,
    serviceApiStorageUuid,
    tagUuid,
    stagingUuid,
    githubAppId: String(githubApp.id),
    gitlabAppId,
    githubAppUuid: githubApp.uuid,
    cloudTokenUuid,
    token,
    keyUuid,
    serverUuid,
    server2Uuid,
    destinationUuid,
    destination2Uuid,
    projectUuid,
    environmentUuid,
    appUuid,
    appEnvUuid,
    appStorageUuid,
    databaseUuid,
    databaseEnvUuid,
    databaseStorageUuid,
    serviceUuid,
    serviceEnvUuid,
    deploymentUuid,
    migrationUuid,
    s3StorageUuid,
    cloudInitScriptUuid,
    teamEnvId,
    projectEnvId,
    environmentEnvId,
    serverEnvId,
  };
}

/** The pull request of the world application's preview. */
export const WORLD_PREVIEW = 7;

/**
 * A pull request's preview of an application, arranged in the store as a deploy with pr makes it
 * (the world's application runs an image, which has no previews through the API; a record-only
 * server runs nothing of it). The pull request id, as a path takes it.
 */
export async function arrangePreview(s: TestServer, appUuid: string, pr: number): Promise<string> {
  const r = await s.db.selectFrom('resources').select('id').where('uuid', '=', appUuid).executeTakeFirstOrThrow();
  const now = new Date().toISOString();
  await s.db
    .insertInto('application_previews')
    .values({ uuid: newUuid(), resource_id: r.id, pull_request_id: pr, fqdn: `http://${pr}.app.example.test`, created_at: now, updated_at: now })
    .execute();
  return String(pr);
}

/**
 * A pending approval of a delete_project by this token, arranged in the store (a policy would hold
 * the table-driven tests' own calls too). What the approvals operations read and decide.
 */
export async function heldCall(s: TestServer, token: string, projectUuid: string): Promise<string> {
  const t = await s.db
    .selectFrom('api_tokens')
    .select(['id', 'team_id', 'user_id'])
    .where('id', '=', Number(token.split('|')[0]))
    .executeTakeFirstOrThrow();
  const uuid = newUuid();
  const now = new Date();
  await s.db
    .insertInto('approvals')
    .values({
      uuid,
      team_id: t.team_id,
      token_id: t.id,
      user_id: t.user_id,
      oauth_client_id: null,
      operation: 'delete_project',
      rule: 'delete',
      target: projectUuid,
      input: JSON.stringify({ uuid: projectUuid }),
      shown_input: JSON.stringify({ uuid: projectUuid }),
      permissions: JSON.stringify(['root']),
      source_ip: '127.0.0.1',
      status: 'pending',
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + 86_400_000).toISOString(),
    })
    .execute();
  return uuid;
}

// ---- sample path parameters for operation-table-driven tests ----------------------------------

export type Singular = 'application' | 'database' | 'service';
export type Params = Record<string, string | undefined>;

/** Per collection: the world's resource, one of its env vars and storages, and an env key. */
export function partsOf(x: World): Record<Singular, { uuid: string; env_uuid: string; storage_uuid?: string; tag_uuid: string; task_uuid?: string; envKey: string }> {
  return {
    application: { uuid: x.appUuid, env_uuid: x.appEnvUuid, storage_uuid: x.appStorageUuid, tag_uuid: x.tagUuid, task_uuid: x.appTaskUuid, envKey: 'API_KEY' },
    database: { uuid: x.databaseUuid, env_uuid: x.databaseEnvUuid, storage_uuid: x.databaseStorageUuid, tag_uuid: x.tagUuid, envKey: 'PGTZ' },
    service: { uuid: x.serviceUuid, env_uuid: x.serviceEnvUuid, storage_uuid: x.serviceStorageUuid, tag_uuid: x.tagUuid, task_uuid: x.serviceTaskUuid, envKey: 'MODE' },
  };
}

/** The world's object for each path parameter, chosen by the path's prefix. */
export function worldParams(path: string, x: World, teamId: number): Params {
  const rest = path.replace(/^\/api\/v1\//, '');
  if (rest.startsWith('deployments/applications/')) return { uuid: x.appUuid };
  const parts = partsOf(x);
  switch (rest.split('/')[0]) {
    case 'teams':
      return { id: String(teamId) };
    case 'security':
      return { uuid: x.keyUuid };
    case 'servers':
      return { uuid: x.serverUuid, env_id: x.serverEnvId };
    case 'team':
      return { env_id: x.teamEnvId };
    case 'destinations':
      return { uuid: x.destinationUuid };
    case 'projects':
      return { uuid: x.projectUuid, environment_name_or_uuid: x.environmentUuid, env_id: rest.includes('/environments/') ? x.environmentEnvId : x.projectEnvId };
    case 'deployments':
      return { uuid: x.deploymentUuid };
    case 'migrations':
      return { uuid: x.migrationUuid };
    case 's3-storages':
      return { uuid: x.s3StorageUuid };
    case 'tags':
      return { uuid: x.tagUuid };
    case 'cloud-init-scripts':
      return { uuid: x.cloudInitScriptUuid };
    case 'github-apps':
      return { github_app_id: x.githubAppId, owner: 'octo', repo: 'hello' };
    case 'gitlab-apps':
      return { gitlab_app_id: x.gitlabAppId };
    case 'cloud-tokens':
      return { uuid: x.cloudTokenUuid };
    case 'approvals':
      return { uuid: x.approvalUuid };
    case 'applications':
      // An additional destination: the world's second server's.
      return { ...parts.application, destination_uuid: x.destination2Uuid, pull_request_id: String(WORLD_PREVIEW) };
    case 'databases':
      return { ...parts.database, scheduled_backup_uuid: x.backupUuid, execution_uuid: x.backupExecutionUuid };
    case 'services':
      return { ...parts.service, app_uuid: partUuid(x.serviceUuid, 'web'), database_uuid: partUuid(x.serviceUuid, 'cache') };
  }
  return {};
}

/** An operation's path with its parameters filled in. */
export function fillPath(op: Operation, params: Params): string {
  return op.http.path.replace(/\{(\w+)\}/g, (_, k: string) => {
    const v = params[k];
    if (v === undefined) throw new Error(`no sample value for {${k}} of ${op.name} (${op.http.path}): extend worldParams`);
    return encodeURIComponent(v);
  });
}

let seq = 0;

/** A new private key, so key fingerprints never collide. */
export function freshKey(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** A valid body (or query, for GET) for an operation, by its name. */
/** A valid body (or query, for GET) for an operation, by its name, in a team's world. */
export function sampleBody(name: string, x: World): Record<string, unknown> | undefined {
  const place = { project_uuid: x.projectUuid, server_uuid: x.serverUuid, destination_uuid: x.destinationUuid, environment_name: 'production' };
  const i = ++seq;
  switch (name) {
    case 'update_settings':
      return { api_enabled: true };
    case 'update_server_proxy':
      return { redirect_enabled: false };
    case 'save_server_proxy_configuration':
      return { configuration: "services:\n  caddy:\n    image: 'caddy:2-alpine'\n    ports:\n      - '127.0.0.1:18080:80'\n" };
    case 'send_feedback':
      return { content: 'A useful remark about berth from an operation-table test.' };
    case 'create_private_key':
      return { name: `key-${i}`, private_key: freshKey() };
    case 'create_server':
      return { name: `server-${i}`, ip: '10.20.0.1' };
    case 'create_server_destination':
      return { network: `net-${i}` };
    case 'update_destination':
      return { name: `destination-${i}` };
    case 'create_project':
      return { name: `project ${i}` };
    case 'create_environment':
      return { name: `env-${i}` };
    case 'create_application':
      return { ...place, docker_registry_image_name: 'nginx', docker_registry_image_tag: '1.27', ports_exposes: '80' };
    case 'create_service':
      return { ...place, docker_compose_raw: Buffer.from(COMPOSE).toString('base64') };
    case 'deploy':
      return { uuid: x.appUuid };
    case 'update_approval_policy':
      return { expires_in_seconds: 3600 };
  }
  let m: RegExpExecArray | null;
  if (/^create_\w+_database$/.test(name)) return place;
  if (/^create_(application|database|service)_env$/.test(name)) return { key: `KEY_${i}`, value: 'value' };
  if ((m = /^update_(application|database|service)_env$/.exec(name))) return { key: partsOf(x)[m[1] as Singular].envKey, value: `changed-${i}` };
  if ((m = /^update_(application|database|service)_envs_bulk$/.exec(name)))
    return {
      data: [
        { key: partsOf(x)[m[1] as Singular].envKey, value: `bulk-${i}` },
        { key: `BULK_${i}`, value: 'new' },
      ],
    };
  if ((m = /^update_(application|database)_storage$/.exec(name))) return { storage_uuid: m[1] === 'application' ? x.appStorageUuid : x.databaseStorageUuid, mount_path: `/moved-${i}` };
  if (name === 'create_service_storage') return { type: 'persistent', name: `vol-${i}`, mount_path: `/mnt/vol-${i}`, resource_uuid: partUuid(x.serviceUuid, 'web') };
  if (name === 'update_service_storage') return { type: 'persistent', storage_uuid: x.serviceApiStorageUuid, mount_path: `/moved-${i}` };
  if (name === 'create_gitlab_app') return { name: `gl ${i}`, html_url: 'https://gitlab.example.test' };
  if (name === 'update_gitlab_app') return { name: `gl changed ${i}` };
  if (/^create_(application|database|service)_storage$/.test(name)) return { type: 'persistent', name: `vol-${i}`, mount_path: `/mnt/vol-${i}` };
  if (name === 'create_dockerfile_application') return { ...place, ports_exposes: '80', dockerfile: Buffer.from('FROM busybox\nCMD ["sleep", "3600"]\n').toString('base64') };
  if (name === 'create_public_application') return { ...place, ports_exposes: '80', git_repository: 'https://git.example.test/team/app.git', git_branch: 'main', build_pack: 'dockerfile' };
  if (name === 'create_private_deploy_key_application')
    return { ...place, ports_exposes: '80', private_key_uuid: x.keyUuid, git_repository: 'git@git.example.test:team/app.git', git_branch: 'main', build_pack: 'dockerfile' };
  if (name === 'create_private_github_app_application')
    return { ...place, ports_exposes: '80', github_app_uuid: x.githubAppUuid, git_repository: 'team/app', git_branch: 'main', build_pack: 'dockerfile' };
  if (name === 'create_github_app') return { ...GITHUB_APP_SAMPLE, name: `gh ${i}`, private_key_uuid: x.keyUuid };
  if (name === 'update_github_app') return { name: `gh changed ${i}` };
  if (name === 'create_cloud_token') return { ...CLOUD_TOKEN_SAMPLE, name: `cloud ${i}` };
  if (name === 'update_cloud_token') return { name: `cloud changed ${i}` };
  if (name === 'rollback_application') return { commit: 'v1' };
  if (name === 'add_application_destination') return { destination_uuid: x.destination2Uuid };
  // A dry run with new uuids: it checks everything, answers 201 and writes nothing, each time.
  if (name === 'import_server') return { bundle: x.serverBundle, preserve_uuids: false, dry_run: true };
  if (name === 'migrate_server') return { target_url: 'https://berth.invalid', target_token: 'not-a-token' };
  if (/^list_(hetzner|digitalocean|vultr)_/.test(name)) return { cloud_provider_token_uuid: x.cloudTokenUuid };
  if (name === 'create_cloud_init_script') return { name: `init ${i}`, script: '#cloud-config\npackages:\n  - curl\n' };
  if (name === 'update_cloud_init_script') return { name: `init changed ${i}` };
  if (/^update_(application|database|service)_storage_backup$/.test(name)) return { frequency: 'daily', retention_amount_locally: 3 };
  if ((m = /^create_(application|service)_scheduled_task$/.exec(name))) return { name: `task ${i}`, command: 'echo hi', frequency: 'hourly', ...(m[1] === 'service' ? { container: 'web' } : {}) };
  if (/^update_(application|service)_scheduled_task$/.test(name)) return { frequency: 'weekly', timeout: 60 };
  if (/^update_service_(application|database)$/.test(name)) return { human_name: `part ${i}`, description: 'a part' };
  if (/^clone_(application|database|service)$/.test(name)) return { destination_uuid: x.destination2Uuid, name: `copy-${i}` };
  if (/^move_(application|database|service)$/.test(name)) return { environment_uuid: x.stagingUuid };
  if (name === 'create_tag' || name === 'update_tag') return { name: `tag-${i}` };
  if (/^add_(application|database|service)_tags$/.test(name)) return { tag_names: [`t-${i}`, 'web'] };
  if (name === 'create_s3_storage') return { ...S3_SAMPLE, name: `s3-${i}` };
  if (name === 'update_server_docker_cleanup') return { docker_cleanup_frequency: 'weekly' };
  // Keys saved, no drain turned on: nothing ships from a sample call.
  if (name === 'update_server_log_drains') return { logdrain_axiom_dataset_name: `ds-${i}`, logdrain_axiom_api_key: 'xaat-sample-key' };
  if ((m = /^update_(\w+)_notifications$/.exec(name))) return { [`deployment_success_${m[1]}_notifications`]: true };
  if (/^migrate_/.test(name)) return { destination_uuid: x.destination2Uuid };

  if (/^create_(team|project|environment|server)_shared_env$/.test(name)) return { key: `SHARED_${i}`, value: 'shared' };
  if (/^update_(team|project|environment|server)_shared_env$/.test(name)) return { value: `changed-${i}` };

  if (name === 'create_database_backup') return { frequency: 'daily', database_backup_retention_amount_locally: 3 };
  if (name === 'update_database_backup') return { frequency: '30 2 * * *', enabled: true };

  if (/^update_/.test(name)) return { description: `changed ${i}` };
  return undefined;
}
