/**
 * One tool table, two executors: every tool, called through `berth mcp --data` (in-process core)
 * and through `berth mcp --api-url` (the same tools over HTTP against a real berth), gives the
 * same result for the same data.
 *
 * - Read-only and instance-wide tools run in both modes on one shared world (the root team) and
 *   must match exactly.
 * - Tools that change data run on two identical worlds, one per mode, each in its own team (so
 *   names and keys may repeat); the step sequence is the same. Their results are compared after
 *   putting symbolic names in place of each world's own uuids and team, and placeholders in place
 *   of what is new on every run: freshly minted uuids, numeric row ids and timestamps.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../../src/core/operations/index.js';
import { stdioClient, type AnyClient, type ToolResult } from '../../helpers/mcp.js';
import { call, OFFLINE_CLOUD, startTestServer, type TestServer } from '../../helpers/server.js';
import { partUuid } from '../../../src/core/operations/service-parts.js';
import { buildWorld, COMPOSE, S3_SAMPLE, type World } from '../../helpers/world.js';
import { remoteClient, type RemoteClient } from './helpers.js';

let s: TestServer;
let w: World;
let local: AnyClient;
let remote: RemoteClient;

/** What a tool call gave, in a comparable form. */
const outcome = (r: ToolResult) => (r.isError ? { error: JSON.parse(r.content[0]!.text!) } : { ok: r.structuredContent });

async function settle(token: string) {
  // Deployments of the world run (and fail: its servers have no engine) in the server's worker;
  // wait until none is queued or running so both modes read the same state.
  for (let i = 0; i < 100; i++) {
    const r = await call(s.url, 'GET', '/api/v1/deployments', { token });
    if (r.status === 200 && Array.isArray(r.json) && r.json.length === 0) return;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('deployments did not settle');
}

beforeAll(async () => {
  // The console's address in approve_url: what a stdio berth mcp with no BERTH_PUBLIC_URL assumes (port 8000).
  s = await startTestServer({ apiRateLimit: 0, publicUrl: 'http://localhost:8000' });
  w = await buildWorld(s);
  await settle(s.rootToken);
  [local, remote] = await Promise.all([stdioClient('v2-modern', s.dataDir, s.rootToken, [], OFFLINE_CLOUD), remoteClient('v2-modern', s.url, s.rootToken)]);
}, 60_000);
afterAll(async () => {
  await Promise.all([local?.close(), remote?.close()]);
  await s?.stop();
});

describe('remote mode lists the same tools as local mode', () => {
  it('same names, schemas, annotations and descriptions for a root token of the root team', async () => {
    const [l, r] = await Promise.all([local.listTools(), remote.listTools()]);
    expect(r.tools.map((t) => t.name)).toEqual(l.tools.map((t) => t.name));
    expect(r.tools.map((t) => t.name).sort()).toEqual(operations.map((o) => o.name).sort());
    expect(r.tools).toEqual(l.tools);
  });
});

/** Tools whose every answer here is an error: what needs a provider's network, and rollback (a record-only world keeps no images; test/e2e/deploy-key-rollback.test.ts runs it). */
// approve_approval: refused for every token (a person approves in the console or the CLI).
// The cloud providers' catalogues and validate_cloud_token: their APIs are .invalid here; migrate_server: its target is.
const CLOUD_LISTINGS = operations.filter((o) => /^list_(hetzner|digitalocean|vultr)_/.test(o.name)).map((o) => o.name);
const ERROR_ONLY = [
  'list_github_app_repositories',
  'list_github_app_branches',
  'validate_cloud_token',
  'create_private_github_app_application',
  'rollback_application',
  'approve_approval',
  'migrate_server',
  // A record-only world's servers have no engine for a proxy (test/e2e/domains.test.ts restarts one).
  'restart_server_proxy',
  ...CLOUD_LISTINGS,
];

describe('read-only and instance-wide tools: identical structured output on one world', () => {
  const extra = {
    get githubAppId() {
      return Number(w.githubAppId);
    },
    get githubAppUuid() {
      return w.githubAppUuid;
    },
    get cloudTokenUuid() {
      return w.cloudTokenUuid;
    },
  };

  it("tools that need a provider's network (and rollback without kept images) answer the same error in both modes", async () => {
    const calls: Array<[string, Record<string, unknown>]> = [
      ['list_github_app_repositories', { github_app_id: extra.githubAppId }],
      ['list_github_app_branches', { github_app_id: extra.githubAppId, owner: 'octo', repo: 'hello' }],
      ['validate_cloud_token', { uuid: extra.cloudTokenUuid }],
      [
        'create_private_github_app_application',
        {
          project_uuid: w.projectUuid,
          server_uuid: w.serverUuid,
          environment_name: 'production',
          ports_exposes: '80',
          github_app_uuid: extra.githubAppUuid,
          git_repository: 'octo/hello',
          git_branch: 'main',
          build_pack: 'dockerfile',
        },
      ],
      ['rollback_application', { uuid: w.appUuid, commit: 'v1' }],
      ['approve_approval', { uuid: w.approvalUuid }],
      ['migrate_server', { uuid: w.serverUuid, target_url: 'https://berth.invalid', target_token: 'not-a-token' }],
      ['restart_server_proxy', { uuid: w.serverUuid }],
      ...CLOUD_LISTINGS.map((name): [string, Record<string, unknown>] => [name, { cloud_provider_token_uuid: extra.cloudTokenUuid }]),
    ];
    expect(calls.map(([t]) => t).sort()).toEqual([...ERROR_ONLY].sort());
    for (const [tool, args] of calls) {
      const l = await local.callTool(tool, args);
      const r = await remote.callTool(tool, args);
      expect({ tool, isError: l.isError }).toEqual({ tool, isError: true });
      expect({ tool, ...outcome(r) }).toEqual({ tool, ...outcome(l) });
    }
  });

  const readArgs = (): Array<[string, Record<string, unknown>]> => [
    ['list_github_apps', {}],
    ['list_cloud_tokens', {}],
    ['get_cloud_token', { uuid: extra.cloudTokenUuid }],
    ['list_application_rollback_images', { uuid: w.appUuid }],
    ['list_application_destinations', { uuid: w.appUuid }],
    ['get_settings', {}],
    ['update_settings', { allowed_ips: '' }],
    ['enable_api', {}],
    ['list_teams', {}],
    ['get_current_team', {}],
    ['get_current_token', {}],
    ['list_current_team_members', {}],
    ['get_team', { id: s.rootTeamId }],
    ['list_team_members', { id: s.rootTeamId }],
    ['get_version', {}],
    ['list_resources', {}],
    ['list_resources', { page: 2, per_page: 2 }],
    ['list_private_keys', {}],
    ['get_private_key', { uuid: w.keyUuid }],
    ['list_servers', {}],
    ['get_server', { uuid: w.serverUuid }],
    ['list_server_destinations', { uuid: w.serverUuid }],
    ['list_server_resources', { uuid: w.serverUuid }],
    ['list_server_orphans', { uuid: w.serverUuid }],
    ['get_server_domains', { uuid: w.serverUuid }],
    ['get_server_docker_cleanup', { uuid: w.serverUuid }],
    ['get_server_log_drains', { uuid: w.serverUuid }],
    ['list_s3_storages', {}],
    ['list_tags', {}],
    ['list_application_tags', { uuid: w.appUuid }],
    ['list_database_tags', { uuid: w.databaseUuid }],
    ['list_service_tags', { uuid: w.serviceUuid }],
    ['get_service_application', { uuid: w.serviceUuid, app_uuid: partUuid(w.serviceUuid, 'web') }],
    ['get_service_database', { uuid: w.serviceUuid, database_uuid: partUuid(w.serviceUuid, 'cache') }],
    ['get_service_application_logs', { uuid: w.serviceUuid, app_uuid: partUuid(w.serviceUuid, 'web') }],
    ['get_service_database_logs', { uuid: w.serviceUuid, database_uuid: partUuid(w.serviceUuid, 'cache'), lines: 5 }],
    ['get_application_storage_backup', { uuid: w.appUuid, storage_uuid: w.appStorageUuid }],
    ['get_database_storage_backup', { uuid: w.databaseUuid, storage_uuid: w.databaseStorageUuid }],
    ['get_service_storage_backup', { uuid: w.serviceUuid, storage_uuid: w.serviceStorageUuid }],
    ['list_cloud_init_scripts', {}],
    ['list_gitlab_apps', {}],
    ['get_cloud_init_script', { uuid: w.cloudInitScriptUuid }],
    ['get_s3_storage', { uuid: w.s3StorageUuid }],
    ['list_server_docker_cleanup_executions', { uuid: w.serverUuid }],
    ['get_email_notifications', {}],
    ['get_discord_notifications', {}],
    ['get_slack_notifications', {}],
    ['get_telegram_notifications', {}],
    ['get_pushover_notifications', {}],
    ['get_webhook_notifications', {}],
    ['list_destinations', {}],
    ['get_destination', { uuid: w.destinationUuid }],
    ['list_projects', {}],
    ['get_project', { uuid: w.projectUuid }],
    ['list_environments', { uuid: w.projectUuid }],
    ['list_applications', {}],
    ['list_applications', { tag: 'web' }],
    ['get_application', { uuid: w.appUuid }],
    ['list_application_envs', { uuid: w.appUuid }],
    ['list_application_storages', { uuid: w.appUuid }],
    ['get_application_logs', { uuid: w.appUuid }],
    ['list_databases', {}],
    ['get_database', { uuid: w.databaseUuid }],
    ['list_database_envs', { uuid: w.databaseUuid }],
    ['list_database_storages', { uuid: w.databaseUuid }],
    ['get_database_logs', { uuid: w.databaseUuid, lines: 10 }],
    ['list_services', {}],
    ['list_service_templates', { search: 'postgresql' }],
    ['get_service', { uuid: w.serviceUuid }],
    ['list_service_envs', { uuid: w.serviceUuid }],
    ['list_service_storages', { uuid: w.serviceUuid }],
    ['get_service_logs', { uuid: w.serviceUuid }],
    ['list_service_applications', { uuid: w.serviceUuid }],
    ['list_service_databases', { uuid: w.serviceUuid }],
    ['list_deployments', {}],
    ['get_deployment', { uuid: w.deploymentUuid }],
    ['get_deployment', { uuid: w.deploymentUuid, full: 'true' }],
    ['list_application_deployments', { uuid: w.appUuid }],
    ['list_migrations', {}],
    ['get_migration', { uuid: w.migrationUuid }],
    ['list_team_shared_envs', {}],
    ['list_project_shared_envs', { uuid: w.projectUuid }],
    ['list_environment_shared_envs', { uuid: w.projectUuid, environment_name_or_uuid: 'production' }],
    ['list_server_shared_envs', { uuid: w.serverUuid }],
    ['get_environment', { uuid: w.projectUuid, environment_name_or_uuid: 'production' }],
    ['list_database_backups', { uuid: w.databaseUuid }],
    ['list_database_backup_executions', { uuid: w.databaseUuid, scheduled_backup_uuid: w.backupUuid }],
    ['list_application_scheduled_tasks', { uuid: w.appUuid }],
    ['list_application_scheduled_task_executions', { uuid: w.appUuid, task_uuid: w.appTaskUuid }],
    ['list_service_scheduled_tasks', { uuid: w.serviceUuid }],
    ['list_service_scheduled_task_executions', { uuid: w.serviceUuid, task_uuid: w.serviceTaskUuid }],
    ['list_audit_entries', {}],
    ['list_approvals', {}],
    ['get_approval', { uuid: w.approvalUuid }],
    ['get_approval_policy', {}],
    ['get_server_proxy', { uuid: w.serverUuid }],
  ];

  it('every read-only tool (and the idempotent settings tools) gives the same result in both modes', async () => {
    const covered = new Set<string>();
    for (const [tool, args] of readArgs()) {
      covered.add(tool);
      const l = await local.callTool(tool, args);
      const r = await remote.callTool(tool, args);
      expect({ tool, error: l.isError ? l.content[0]?.text : undefined }).toEqual({ tool, error: undefined });
      expect({ tool, args, ...outcome(r) }).toEqual({ tool, args, ...outcome(l) });
      if (!l.isError) expect(r.content).toEqual(l.content);
    }
    // export_server: a fresh export_id and time per call (compared below without them).
    const readOnly = operations.filter((o) => o.annotations.readOnly && !ERROR_ONLY.includes(o.name) && o.name !== 'export_server').map((o) => o.name);
    expect(readOnly.filter((n) => !covered.has(n))).toEqual([]);
  });

  it('export_server: the same bundle in both modes, but for its export_id and time', async () => {
    const strip = (x: { structuredContent?: Record<string, unknown> }) => ({ ...x.structuredContent, export_id: '<id>', exported_at: '<time>' });
    const l = await local.callTool('export_server', { uuid: w.serverUuid });
    const r = await remote.callTool('export_server', { uuid: w.serverUuid });
    expect(l.isError).toBeFalsy();
    expect(strip(r)).toEqual(strip(l));
  });

  it('disable_api then enable_api: same answers, and the disabled API answers the same refusal', async () => {
    for (const c of [local, remote]) {
      expect(outcome(await c.callTool('disable_api'))).toEqual({ ok: { message: 'API disabled.' } });
      expect(outcome(await c.callTool('get_current_team'))).toEqual({ error: { message: 'API is disabled.', hint: expect.stringContaining('enable_api') } });
      expect(outcome(await c.callTool('enable_api'))).toEqual({ ok: { message: 'API enabled.' } });
    }
  });

  it('disable_mcp then enable_mcp: same answers in both modes', async () => {
    for (const c of [local, remote]) {
      expect(outcome(await c.callTool('disable_mcp'))).toEqual({ ok: { message: 'MCP server disabled.' } });
      expect(outcome(await c.callTool('enable_mcp'))).toEqual({ ok: { message: 'MCP server enabled.' } });
    }
  });

  it('errors carry the same bodies: not found, validation (checked before any request), wrong team', async () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      ['get_application', { uuid: 'nosuchapplication' }],
      ['get_team', { id: 99_999 }],
      ['send_feedback', { content: 'short', extra: 1 }],
      ['create_project', {}],
      ['list_resources', { page: 0 }],
      ['delete_destination', { uuid: w.destinationUuid }],
    ];
    for (const [tool, args] of cases) {
      const l = await local.callTool(tool, args);
      const r = await remote.callTool(tool, args);
      expect(l.isError).toBe(true);
      expect({ tool, ...outcome(r) }).toEqual({ tool, ...outcome(l) });
    }
  });
});

// ------------------------------------------------------------------------------------------------
// Tools that change data: two identical worlds, the same steps in both modes.

interface Ctx {
  w: World;
  /** uuids this mode created in earlier steps, by symbolic name. */
  made: Record<string, string>;
  /** value → symbolic name, for normalizing this mode's answers. */
  names: Map<string, string>;
}

interface Step {
  tool: string;
  args: (c: Ctx) => Record<string, unknown>;
  /** Name the uuid an answer carries, for later steps. */
  save?: (out: Record<string, any>) => Record<string, string>;
}

const KEY2 = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const place = (c: Ctx) => ({ project_uuid: c.w.projectUuid, server_uuid: c.w.serverUuid, environment_name: 'production' });
const uuidOf = (name: string) => (out: Record<string, any>) => ({ [name]: String(out.uuid) });
const deploymentOf = (name: string) => (out: Record<string, any>) => ({ [name]: String(out.deployment_uuid ?? out.deployments?.[0]?.deployment_uuid) });

const steps: Step[] = [
  { tool: 'create_private_key', args: () => ({ name: 'second key', private_key: KEY2 }), save: uuidOf('key2') },
  { tool: 'update_private_key', args: (c) => ({ uuid: c.made.key2, description: 'changed' }) },
  { tool: 'create_server', args: (c) => ({ name: 'three', ip: '10.0.0.3', private_key_uuid: c.made.key2 }), save: uuidOf('server3') },
  { tool: 'update_server', args: (c) => ({ uuid: c.made.server3, description: 'changed', port: 2222 }) },
  { tool: 'validate_server', args: (c) => ({ uuid: c.made.server3 }) },
  { tool: 'update_server_docker_cleanup', args: (c) => ({ uuid: c.made.server3, docker_cleanup_frequency: '0 3 * * *', delete_unused_networks: true }) },
  { tool: 'run_server_docker_cleanup', args: (c) => ({ uuid: c.made.server3 }) },
  { tool: 'update_server_log_drains', args: (c) => ({ uuid: c.made.server3, logdrain_axiom_dataset_name: 'parity', logdrain_axiom_api_key: 'xaat-parity' }) },
  { tool: 'update_server_proxy', args: (c) => ({ uuid: c.made.server3, redirect_enabled: false }) },
  { tool: 'save_server_proxy_configuration', args: (c) => ({ uuid: c.made.server3, configuration: "services:\n  caddy:\n    image: 'caddy:2-alpine'\n    ports:\n      - '127.0.0.1:18080:80'\n" }) },
  { tool: 'import_server', args: (c) => ({ bundle: c.w.serverBundle, preserve_uuids: false, dry_run: true }) },
  { tool: 'complete_server_transfer', args: (c) => ({ uuid: c.made.server3, target_instance_url: 'https://other.example.test' }) },
  { tool: 'claim_server', args: (c) => ({ uuid: c.made.server3 }) },
  { tool: 'create_server_destination', args: (c) => ({ uuid: c.made.server3, network: 'extra', name: 'extra net' }), save: uuidOf('dest3') },
  { tool: 'update_destination', args: (c) => ({ uuid: c.made.dest3, name: 'renamed' }) },
  { tool: 'delete_destination', args: (c) => ({ uuid: c.made.dest3 }) },
  // A policy that holds nothing: the steps after it are not held for a person.
  { tool: 'update_approval_policy', args: () => ({ rules: [], expires_in_seconds: 600 }) },
  { tool: 'deny_approval', args: (c) => ({ uuid: c.w.approvalUuid }) },
  { tool: 'create_project', args: () => ({ name: 'second project', description: 'for parity' }), save: uuidOf('project2') },
  { tool: 'update_project', args: (c) => ({ uuid: c.made.project2, description: 'changed' }) },
  { tool: 'create_environment', args: (c) => ({ uuid: c.made.project2, name: 'staging' }), save: uuidOf('env2') },
  {
    tool: 'create_application',
    args: (c) => ({ ...place(c), docker_registry_image_name: 'nginx', docker_registry_image_tag: '1.27', ports_exposes: '80', name: 'app two', tags: ['two'] }),
    save: uuidOf('app2'),
  },
  { tool: 'create_dockerfile_application', args: (c) => ({ ...place(c), name: 'built', ports_exposes: '8080', dockerfile: Buffer.from('FROM busybox\n').toString('base64') }) },
  {
    tool: 'create_public_application',
    args: (c) => ({
      ...place(c),
      name: 'from git',
      ports_exposes: '8080',
      git_repository: 'https://git.example.test/team/app.git',
      git_branch: 'main',
      build_pack: 'dockerfile',
      base_directory: '/app',
    }),
  },
  { tool: 'update_application', args: (c) => ({ uuid: c.made.app2, description: 'changed', ports_exposes: '80,443' }) },
  { tool: 'create_application_env', args: (c) => ({ uuid: c.made.app2, key: 'TWO', value: 'value-two' }), save: uuidOf('appEnv2') },
  { tool: 'update_application_env', args: (c) => ({ uuid: c.made.app2, key: 'TWO', value: 'value-2' }) },
  { tool: 'update_application_envs_bulk', args: (c) => ({ uuid: c.made.app2, data: [{ key: 'TWO', value: 'bulk-2', is_literal: true }] }) },
  { tool: 'delete_application_env', args: (c) => ({ uuid: c.made.app2, env_uuid: c.made.appEnv2 }) },
  { tool: 'create_application_storage', args: (c) => ({ uuid: c.made.app2, type: 'persistent', name: 'two', mount_path: '/two' }), save: uuidOf('appStorage2') },
  { tool: 'update_application_storage', args: (c) => ({ uuid: c.made.app2, storage_uuid: c.made.appStorage2, mount_path: '/two-moved' }) },
  { tool: 'delete_application_storage', args: (c) => ({ uuid: c.made.app2, storage_uuid: c.made.appStorage2 }) },
  { tool: 'start_application', args: (c) => ({ uuid: c.made.app2 }), save: deploymentOf('appStart') },
  { tool: 'stop_application', args: (c) => ({ uuid: c.made.app2 }), save: deploymentOf('appStop') },
  { tool: 'restart_application', args: (c) => ({ uuid: c.made.app2 }), save: deploymentOf('appRestart') },
  { tool: 'deploy', args: (c) => ({ uuid: c.w.appUuid }), save: deploymentOf('deploy2') },
  { tool: 'create_postgresql_database', args: (c) => ({ ...place(c), name: 'pg two', postgres_password: 'pg-secret' }), save: uuidOf('db2') },
  { tool: 'create_mysql_database', args: (c) => ({ ...place(c), name: 'my two', mysql_password: 'my-secret', mysql_root_password: 'my-root-secret' }), save: uuidOf('mysql2') },
  { tool: 'create_mariadb_database', args: (c) => ({ ...place(c), name: 'maria two', mariadb_password: 'ma-secret', mariadb_root_password: 'ma-root-secret' }), save: uuidOf('maria2') },
  { tool: 'create_redis_database', args: (c) => ({ ...place(c), name: 'redis two', redis_password: 'redis-secret' }), save: uuidOf('redis2') },
  { tool: 'create_mongodb_database', args: (c) => ({ ...place(c), name: 'mongo two', mongo_initdb_root_password: 'mongo-secret' }), save: uuidOf('mongo2') },
  { tool: 'update_database', args: (c) => ({ uuid: c.made.db2, description: 'changed' }) },
  { tool: 'create_database_env', args: (c) => ({ uuid: c.made.db2, key: 'TWO', value: 'db-two' }), save: uuidOf('dbEnv2') },
  { tool: 'update_database_env', args: (c) => ({ uuid: c.made.db2, key: 'TWO', value: 'db-2' }) },
  { tool: 'update_database_envs_bulk', args: (c) => ({ uuid: c.made.db2, data: [{ key: 'TWO', value: 'bulk-2', is_literal: true }] }) },
  { tool: 'delete_database_env', args: (c) => ({ uuid: c.made.db2, env_uuid: c.made.dbEnv2 }) },
  { tool: 'create_database_storage', args: (c) => ({ uuid: c.made.db2, type: 'persistent', name: 'extra', mount_path: '/extra' }), save: uuidOf('dbStorage2') },
  { tool: 'update_database_storage', args: (c) => ({ uuid: c.made.db2, storage_uuid: c.made.dbStorage2, mount_path: '/extra-moved' }) },
  { tool: 'delete_database_storage', args: (c) => ({ uuid: c.made.db2, storage_uuid: c.made.dbStorage2 }) },
  { tool: 'start_database', args: (c) => ({ uuid: c.made.db2 }), save: deploymentOf('dbStart') },
  { tool: 'stop_database', args: (c) => ({ uuid: c.made.db2 }), save: deploymentOf('dbStop') },
  { tool: 'restart_database', args: (c) => ({ uuid: c.made.db2 }), save: deploymentOf('dbRestart') },
  { tool: 'delete_database', args: (c) => ({ uuid: c.made.redis2 }) },
  { tool: 'create_service', args: (c) => ({ ...place(c), name: 'svc two', docker_compose_raw: COMPOSE }), save: uuidOf('svc2') },
  { tool: 'update_service', args: (c) => ({ uuid: c.made.svc2, description: 'changed' }) },
  { tool: 'create_service_env', args: (c) => ({ uuid: c.made.svc2, key: 'TWO', value: 'svc-two' }), save: uuidOf('svcEnv2') },
  {
    tool: 'create_service_storage',
    args: (c) => ({ uuid: c.made.svc2, type: 'persistent', resource_uuid: partUuid(c.made.svc2!, 'web'), name: 'extra', mount_path: '/extra' }),
    save: uuidOf('svcStorage2'),
  },
  { tool: 'update_service_storage', args: (c) => ({ uuid: c.made.svc2, storage_uuid: c.made.svcStorage2, type: 'persistent', mount_path: '/extra2' }) },
  { tool: 'delete_service_storage', args: (c) => ({ uuid: c.made.svc2, storage_uuid: c.made.svcStorage2 }) },
  { tool: 'update_service_env', args: (c) => ({ uuid: c.made.svc2, key: 'TWO', value: 'svc-2' }) },
  { tool: 'update_service_envs_bulk', args: (c) => ({ uuid: c.made.svc2, data: [{ key: 'TWO', value: 'bulk-2', is_literal: true }] }) },
  { tool: 'delete_service_env', args: (c) => ({ uuid: c.made.svc2, env_uuid: c.made.svcEnv2 }) },
  { tool: 'start_service', args: (c) => ({ uuid: c.made.svc2 }), save: deploymentOf('svcStart') },
  { tool: 'stop_service', args: (c) => ({ uuid: c.made.svc2 }), save: deploymentOf('svcStop') },
  { tool: 'restart_service', args: (c) => ({ uuid: c.made.svc2 }), save: deploymentOf('svcRestart') },
  { tool: 'migrate_application', args: (c) => ({ uuid: c.made.app2, destination_uuid: c.w.destination2Uuid }), save: (o) => ({ appMigration: String(o.migration_uuid) }) },
  { tool: 'migrate_database', args: (c) => ({ uuid: c.made.mysql2, destination_uuid: c.w.destination2Uuid, migrate_volumes: false }), save: (o) => ({ dbMigration: String(o.migration_uuid) }) },
  { tool: 'migrate_service', args: (c) => ({ uuid: c.made.svc2, destination_uuid: c.w.destination2Uuid }), save: (o) => ({ svcMigration: String(o.migration_uuid) }) },

  ...(['team', 'project', 'environment', 'server'] as const).flatMap((scope): Step[] => {
    const at = (c: Ctx): Record<string, unknown> =>
      ({ team: {}, project: { uuid: c.made.project2 }, environment: { uuid: c.made.project2, environment_name_or_uuid: 'staging' }, server: { uuid: c.made.server3 } })[scope];
    return [
      { tool: `create_${scope}_shared_env`, args: (c) => ({ ...at(c), key: 'SHARED_TWO', value: 'shared-two', comment: 'parity' }), save: (o) => ({ [`${scope}Shared`]: String(o.id) }) },
      { tool: `update_${scope}_shared_env`, args: (c) => ({ ...at(c), env_id: Number(c.made[`${scope}Shared`]), value: 'shared-2', is_literal: true }) },
      { tool: `delete_${scope}_shared_env`, args: (c) => ({ ...at(c), env_id: Number(c.made[`${scope}Shared`]) }) },
    ];
  }),
  { tool: 'update_environment', args: (c) => ({ uuid: c.made.project2, environment_name_or_uuid: 'staging', description: 'changed' }) },
  { tool: 'create_environment_shared_env', args: (c) => ({ uuid: c.made.project2, environment_name_or_uuid: 'staging', key: 'GOES_WITH_IT', value: 'x' }) },
  { tool: 'delete_environment', args: (c) => ({ uuid: c.made.project2, environment_name_or_uuid: c.made.env2 }) },

  // backup_now on a record-only server: its execution fails at once (the steps between give it time to end).
  {
    tool: 'create_database_backup',
    args: (c) => ({ uuid: c.made.db2, frequency: 'daily', database_backup_retention_amount_locally: 2, backup_now: true }),
    save: (o) => ({ backup2: String(o.uuid), backupRun2: String(o.execution_uuid) }),
  },
  { tool: 'update_database_backup', args: (c) => ({ uuid: c.made.db2, scheduled_backup_uuid: c.made.backup2, frequency: '15 3 * * 1', enabled: false }) },
  { tool: 'create_clickhouse_database', args: (c) => ({ ...place(c), name: 'ch two', clickhouse_admin_password: 'ch-secret-1' }), save: uuidOf('ch2') },
  { tool: 'create_dragonfly_database', args: (c) => ({ ...place(c), name: 'df two', dragonfly_password: 'df-secret-1' }), save: uuidOf('df2') },
  { tool: 'create_keydb_database', args: (c) => ({ ...place(c), name: 'keydb two', keydb_password: 'kdb-secret-1' }), save: uuidOf('kdb2') },
  { tool: 'delete_database_backup_execution', args: (c) => ({ uuid: c.made.db2, scheduled_backup_uuid: c.made.backup2, execution_uuid: c.made.backupRun2 }) },
  { tool: 'delete_database_backup', args: (c) => ({ uuid: c.made.db2, scheduled_backup_uuid: c.made.backup2 }) },

  { tool: 'update_application_storage_backup', args: (c) => ({ uuid: c.w.appUuid, storage_uuid: c.w.appStorageUuid, frequency: '0 4 * * *', retention_amount_locally: 2 }) },
  { tool: 'run_application_storage_backup', args: (c) => ({ uuid: c.w.appUuid, storage_uuid: c.w.appStorageUuid }) },
  { tool: 'delete_application_storage_backup', args: (c) => ({ uuid: c.w.appUuid, storage_uuid: c.w.appStorageUuid }) },
  { tool: 'update_database_storage_backup', args: (c) => ({ uuid: c.w.databaseUuid, storage_uuid: c.w.databaseStorageUuid, frequency: '0 4 * * *', retention_amount_locally: 2 }) },
  { tool: 'run_database_storage_backup', args: (c) => ({ uuid: c.w.databaseUuid, storage_uuid: c.w.databaseStorageUuid }) },
  { tool: 'delete_database_storage_backup', args: (c) => ({ uuid: c.w.databaseUuid, storage_uuid: c.w.databaseStorageUuid }) },
  { tool: 'update_service_storage_backup', args: (c) => ({ uuid: c.w.serviceUuid, storage_uuid: c.w.serviceStorageUuid, frequency: '0 4 * * *', retention_amount_locally: 2 }) },
  { tool: 'run_service_storage_backup', args: (c) => ({ uuid: c.w.serviceUuid, storage_uuid: c.w.serviceStorageUuid }) },
  { tool: 'delete_service_storage_backup', args: (c) => ({ uuid: c.w.serviceUuid, storage_uuid: c.w.serviceStorageUuid }) },
  { tool: 'update_service_application', args: (c) => ({ uuid: c.w.serviceUuid, app_uuid: partUuid(c.w.serviceUuid, 'web'), human_name: 'the web' }) },
  { tool: 'start_service_application', args: (c) => ({ uuid: c.w.serviceUuid, app_uuid: partUuid(c.w.serviceUuid, 'web') }) },
  { tool: 'stop_service_application', args: (c) => ({ uuid: c.w.serviceUuid, app_uuid: partUuid(c.w.serviceUuid, 'web') }) },
  { tool: 'restart_service_application', args: (c) => ({ uuid: c.w.serviceUuid, app_uuid: partUuid(c.w.serviceUuid, 'web') }) },
  { tool: 'update_service_database', args: (c) => ({ uuid: c.w.serviceUuid, database_uuid: partUuid(c.w.serviceUuid, 'cache'), human_name: 'the cache' }) },
  { tool: 'start_service_database', args: (c) => ({ uuid: c.w.serviceUuid, database_uuid: partUuid(c.w.serviceUuid, 'cache') }) },
  { tool: 'stop_service_database', args: (c) => ({ uuid: c.w.serviceUuid, database_uuid: partUuid(c.w.serviceUuid, 'cache') }) },
  { tool: 'restart_service_database', args: (c) => ({ uuid: c.w.serviceUuid, database_uuid: partUuid(c.w.serviceUuid, 'cache') }) },
  { tool: 'create_tag', args: () => ({ name: 'Parity-Tag' }), save: uuidOf('tag2') },
  { tool: 'update_tag', args: (c) => ({ uuid: c.made.tag2, name: 'parity-renamed' }) },
  { tool: 'add_application_tags', args: (c) => ({ uuid: c.w.appUuid, tag_names: ['parity-renamed', 'extra'] }) },
  { tool: 'add_application_destination', args: (c) => ({ uuid: c.w.appUuid, destination_uuid: c.w.destination2Uuid }) },
  { tool: 'remove_application_destination', args: (c) => ({ uuid: c.w.appUuid, destination_uuid: c.w.destination2Uuid }) },
  // The world's preview (pull request 7, arranged as a deploy with pr makes it).
  { tool: 'delete_application_preview', args: (c) => ({ uuid: c.w.appUuid, pull_request_id: 7 }) },
  { tool: 'add_database_tags', args: (c) => ({ uuid: c.w.databaseUuid, tag_name: 'parity-renamed' }) },
  { tool: 'add_service_tags', args: (c) => ({ uuid: c.w.serviceUuid, tag_name: 'svc-only' }) },
  { tool: 'remove_application_tag', args: (c) => ({ uuid: c.w.appUuid, tag_uuid: c.made.tag2 }) },
  { tool: 'remove_database_tag', args: (c) => ({ uuid: c.w.databaseUuid, tag_uuid: c.made.tag2 }) },
  { tool: 'create_tag', args: () => ({ name: 'to-delete' }), save: uuidOf('tag3') },
  { tool: 'add_service_tags', args: (c) => ({ uuid: c.w.serviceUuid, tag_name: 'to-delete' }) },
  { tool: 'remove_service_tag', args: (c) => ({ uuid: c.w.serviceUuid, tag_uuid: c.made.tag3 }) },
  { tool: 'create_tag', args: () => ({ name: 'unused' }), save: uuidOf('tag4') },
  { tool: 'delete_tag', args: (c) => ({ uuid: c.made.tag4 }) },
  { tool: 'clone_application', args: (c) => ({ uuid: c.made.app2, destination_uuid: c.w.destination2Uuid, name: 'app copy' }), save: uuidOf('appClone') },
  { tool: 'clone_database', args: (c) => ({ uuid: c.made.db2, destination_uuid: c.w.destinationUuid }), save: uuidOf('dbClone') },
  { tool: 'clone_service', args: (c) => ({ uuid: c.made.svc2, destination_uuid: c.w.destination2Uuid }), save: uuidOf('svcClone') },
  { tool: 'move_application', args: (c) => ({ uuid: c.made.app2, environment_uuid: c.w.stagingUuid }) },
  { tool: 'move_database', args: (c) => ({ uuid: c.made.db2, environment_uuid: c.w.stagingUuid }) },
  { tool: 'move_service', args: (c) => ({ uuid: c.made.svc2, environment_uuid: c.w.stagingUuid }) },
  { tool: 'create_application_scheduled_task', args: (c) => ({ uuid: c.w.appUuid, name: 'parity', command: 'echo parity', frequency: 'hourly', timeout: 60 }), save: uuidOf('task2') },
  { tool: 'update_application_scheduled_task', args: (c) => ({ uuid: c.w.appUuid, task_uuid: c.made.task2, enabled: false, frequency: '@daily' }) },
  { tool: 'execute_application_scheduled_task', args: (c) => ({ uuid: c.w.appUuid, task_uuid: c.made.task2 }) },
  { tool: 'delete_application_scheduled_task', args: (c) => ({ uuid: c.w.appUuid, task_uuid: c.made.task2 }) },
  { tool: 'create_service_scheduled_task', args: (c) => ({ uuid: c.w.serviceUuid, name: 'parity', command: 'echo parity', frequency: '*/5 * * * *', container: 'cache' }), save: uuidOf('task3') },
  { tool: 'update_service_scheduled_task', args: (c) => ({ uuid: c.w.serviceUuid, task_uuid: c.made.task3, container: 'web' }) },
  { tool: 'execute_service_scheduled_task', args: (c) => ({ uuid: c.w.serviceUuid, task_uuid: c.made.task3 }) },
  { tool: 'delete_service_scheduled_task', args: (c) => ({ uuid: c.w.serviceUuid, task_uuid: c.made.task3 }) },
  { tool: 'delete_service', args: (c) => ({ uuid: c.w.serviceUuid }) },
  { tool: 'delete_application', args: (c) => ({ uuid: c.w.appUuid }) },
  { tool: 'delete_server', args: (c) => ({ uuid: c.made.server3 }) },
  { tool: 'delete_private_key', args: (c) => ({ uuid: c.made.key2 }) },
  { tool: 'delete_project', args: (c) => ({ uuid: c.made.project2 }) },
  { tool: 'update_email_notifications', args: () => ({ deployment_success_email_notifications: true, backup_failure_email_notifications: false }) },
  { tool: 'update_discord_notifications', args: () => ({ deployment_success_discord_notifications: true, backup_failure_discord_notifications: false }) },
  { tool: 'update_slack_notifications', args: () => ({ deployment_success_slack_notifications: true, backup_failure_slack_notifications: false }) },
  { tool: 'update_telegram_notifications', args: () => ({ deployment_success_telegram_notifications: true, backup_failure_telegram_notifications: false }) },
  { tool: 'update_pushover_notifications', args: () => ({ deployment_success_pushover_notifications: true, backup_failure_pushover_notifications: false }) },
  { tool: 'update_webhook_notifications', args: () => ({ deployment_success_webhook_notifications: true, backup_failure_webhook_notifications: false }) },
  { tool: 'create_cloud_init_script', args: () => ({ name: 'second init', script: '#cloud-config\nruncmd:\n  - echo hi\n' }), save: uuidOf('init2') },
  { tool: 'update_cloud_init_script', args: (c) => ({ uuid: c.made.init2, name: 'renamed init' }) },
  { tool: 'delete_cloud_init_script', args: (c) => ({ uuid: c.made.init2 }) },
  {
    tool: 'create_gitlab_app',
    args: () => ({ name: 'gl', html_url: 'https://gitlab.example.com', webhook_token: 'parity-token', client_secret: 'parity-secret' }),
    save: (o) => ({ gitlab: String(o.id) }),
  },
  { tool: 'update_gitlab_app', args: (c) => ({ gitlab_app_id: Number(c.made.gitlab), html_url: 'https://gitlab.example.org' }) },
  { tool: 'delete_gitlab_app', args: (c) => ({ gitlab_app_id: Number(c.made.gitlab) }) },
  { tool: 'create_s3_storage', args: () => ({ ...S3_SAMPLE, name: 'second s3' }), save: uuidOf('s3b') },
  { tool: 'update_s3_storage', args: (c) => ({ uuid: c.made.s3b, description: 'changed', bucket: 'other-bucket' }) },
  { tool: 'validate_s3_storage', args: (c) => ({ uuid: c.made.s3b }) },
  { tool: 'delete_s3_storage', args: (c) => ({ uuid: c.made.s3b }) },
  {
    tool: 'create_github_app',
    args: (c) => ({ name: 'gh two', html_url: 'https://github.com', app_id: 3, installation_id: 4, client_id: 'cid', client_secret: 'csecret', private_key_uuid: c.w.keyUuid }),
    save: (out) => ({ gh2: String(out.id) }),
  },
  { tool: 'update_github_app', args: (c) => ({ github_app_id: Number(c.made.gh2), name: 'gh renamed', custom_port: 2222 }) },
  { tool: 'delete_github_app', args: (c) => ({ github_app_id: Number(c.made.gh2) }) },
  { tool: 'create_cloud_token', args: () => ({ provider: 'vultr', token: 'vultr-secret', name: 'vultr one' }), save: uuidOf('cloud2') },
  { tool: 'update_cloud_token', args: (c) => ({ uuid: c.made.cloud2, name: 'vultr renamed' }) },
  { tool: 'delete_cloud_token', args: (c) => ({ uuid: c.made.cloud2 }) },
  {
    tool: 'create_private_deploy_key_application',
    args: (c) => ({
      ...place(c),
      name: 'by deploy key',
      ports_exposes: '8080',
      private_key_uuid: c.w.keyUuid,
      git_repository: 'git@git.example.test:team/app.git',
      git_branch: 'main',
      build_pack: 'dockerfile',
    }),
  },
  { tool: 'send_feedback', args: () => ({ content: 'Remote mode parity check: the same tool in both modes.' }) },
];

/** Symbolic names for this mode's own values; placeholders for what differs on every run. */
function normalize(value: unknown, names: Map<string, string>, key?: string): unknown {
  // A token's deny records the door it came through: stdio locally, REST at the upstream in remote mode.
  if (key === 'decided_via' && (value === 'mcp-stdio' || value === 'rest')) return '<token door>';
  if (typeof value === 'string') {
    if (names.has(value)) return names.get(value);
    if (/^\d{4}-\d\d-\d\d[T ]\d\d:\d\d/.test(value)) return '<time>';
    if (/^[a-z0-9]{24}$/.test(value)) return '<new uuid>';
    let out = value;
    for (const [v, n] of names) if (v.length >= 8) out = out.split(v).join(n);
    return out.replace(/\b[a-z0-9]{24}\b/g, '<new uuid>');
  }
  if (typeof value === 'number' && key !== undefined && /(^id$|_id$)/.test(key)) return '<id>';
  if (Array.isArray(value)) return value.map((v) => normalize(v, names));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v, names, k)]));
  return value;
}

describe('tools that change data: the same answers on two identical worlds', () => {
  let ctxL: Ctx;
  let ctxR: Ctx;
  let l: AnyClient;
  let r: RemoteClient;

  beforeAll(async () => {
    const [tl, tr] = await Promise.all([s.team('Mirror L'), s.team('Mirror R')]);
    const [wl, wr] = [await buildWorld(s, tl.rootToken, 'm'), await buildWorld(s, tr.rootToken, 'm')];
    await Promise.all([settle(tl.rootToken), settle(tr.rootToken)]);
    const namesOf = (wd: World, team: { id: number; ownerEmail: string }, label: string) =>
      new Map<string, string>([
        ...Object.entries(wd)
          .filter(([k]) => k !== 'token')
          .map(([k, v]) => [String(v), `<${k}>`] as [string, string]),
        [team.ownerEmail, '<owner email>'],
        [`Mirror ${label}`, '<team name>'],
      ]);
    ctxL = { w: wl, made: {}, names: namesOf(wl, tl, 'L') };
    ctxR = { w: wr, made: {}, names: namesOf(wr, tr, 'R') };
    [l, r] = await Promise.all([stdioClient('v2-modern', s.dataDir, tl.rootToken), remoteClient('v2-legacy', s.url, tr.rootToken)]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([l?.close(), r?.close()]);
  });

  it('every tool that changes data gives the same (normalized) answer in both modes', async () => {
    const covered = new Set<string>();
    for (const step of steps) {
      covered.add(step.tool);
      const argsL = step.args(ctxL);
      const argsR = step.args(ctxR);
      const rl = await l.callTool(step.tool, argsL);
      const rr = await r.callTool(step.tool, argsR);
      for (const [c, res] of [
        [ctxL, rl],
        [ctxR, rr],
      ] as const) {
        if (step.save && !res.isError) {
          for (const [name, v] of Object.entries(step.save(res.structuredContent!))) {
            c.made[name] = v;
            c.names.set(v, `<${name}>`);
          }
        }
      }
      const nl = normalize(outcome(rl), ctxL.names);
      const nr = normalize(outcome(rr), ctxR.names);
      // Each step is a happy path: a failing step would compare two errors and prove little.
      expect({ tool: step.tool, error: rl.isError ? rl.content[0]?.text : undefined }).toEqual({ tool: step.tool, error: undefined });
      expect({ tool: step.tool, ...(nr as object) }).toEqual({ tool: step.tool, ...(nl as object) });
    }
    const changing = operations.filter((o) => !o.annotations.readOnly && !o.access?.rootTeamOnly).map((o) => o.name);
    // restore's happy path needs a successful backup, which only a live engine makes (test/e2e/backups.test.ts).
    expect(changing.filter((n) => !covered.has(n) && n !== 'cancel_deployment' && n !== 'cancel_migration' && n !== 'restore_database_backup_execution' && !ERROR_ONLY.includes(n))).toEqual([]);
  }, 120_000);

  it("cancel_migration: same answer for a migration in the same state (the world's finished one)", async () => {
    const rl = await l.callTool('cancel_migration', { uuid: ctxL.w.migrationUuid });
    const rr = await r.callTool('cancel_migration', { uuid: ctxR.w.migrationUuid });
    expect(rl.isError).toBe(true);
    expect(normalize(outcome(rr), ctxR.names)).toEqual(normalize(outcome(rl), ctxL.names));
  });

  it('cancel_deployment: same answer for a deployment in the same state', async () => {
    // The world's deployments are settled (they fail: no engine), so both answer the same refusal.
    const rl = await l.callTool('cancel_deployment', { uuid: ctxL.w.deploymentUuid });
    const rr = await r.callTool('cancel_deployment', { uuid: ctxR.w.deploymentUuid });
    expect(normalize(outcome(rr), ctxR.names)).toEqual(normalize(outcome(rl), ctxL.names));
  });
});
