import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classesOf, writePolicy } from '../../src/core/approvals.js';
import { operations } from '../../src/core/operations/index.js';
import { errorBody, httpClient, type AnyClient } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { buildWorld, type World } from '../helpers/world.js';

/**
 * The `delete` approval class holds every call that destroys data (issue 39, item 3): each
 * DELETE, and the calls declared `destroysData` (a restore over a database, a Docker cleanup).
 * The lists below are by name, so a new operation that destroys data, or a new destructive one
 * that does not, is classed on purpose. Holds checked over REST and MCP (a real SDK client) on
 * the store BERTH_TEST_STORE names.
 */

const names = (f: (o: (typeof operations)[number]) => boolean) =>
  operations
    .filter(f)
    .map((o) => o.name)
    .sort();

describe('what the delete class holds', () => {
  it('every DELETE, and by name the other calls that destroy data', () => {
    expect(names((o) => o.http.method === 'DELETE' && !classesOf(o).includes('delete'))).toEqual([]);
    expect(names((o) => o.http.method !== 'DELETE' && classesOf(o).includes('delete'))).toEqual(['restore_database_backup_execution', 'run_server_docker_cleanup']);
  });

  it('destructive in MCP terms but keeping the data: not in it (stop, migrate and cancel have their own names)', () => {
    expect(names((o) => o.annotations.destructive && !classesOf(o).includes('delete'))).toEqual([
      'cancel_deployment',
      'complete_server_transfer',
      'disable_api',
      'disable_mcp',
      'migrate_application',
      'migrate_database',
      'migrate_server',
      'migrate_service',
      'stop_application',
      'stop_database',
      'stop_service',
      'stop_service_application',
      'stop_service_database',
    ]);
  });
});

describe('the delete class holds a restore and a Docker cleanup', { timeout: 60_000 }, () => {
  let s: TestServer;
  let w: World;
  let mcp: AnyClient;
  let agent: string;
  const restorePath = () => `/api/v1/databases/${w.databaseUuid}/backups/${w.backupUuid}/executions/${w.backupExecutionUuid}/restore`;

  beforeAll(async () => {
    s = await startTestServer();
    w = await buildWorld(s);
    // The world's backup run failed (a record-only server): arranged as a kept, successful one.
    await s.db
      .updateTable('scheduled_database_backup_executions')
      .set({ status: 'success', filename: '/backups/dump.sql', local_storage_deleted: 0 })
      .where('uuid', '=', w.backupExecutionUuid)
      .execute();
    await writePolicy(s.db, s.rootTeamId, { rules: ['delete'], expiresInSeconds: 3600 });
    agent = (await s.token({ permissions: ['read', 'write', 'deploy'] })).token;
    mcp = await httpClient('v2-modern', s.url, agent);
  }, 60_000);
  afterAll(async () => {
    await mcp?.close();
    await s?.stop();
  });

  const pending = async (operation: string) =>
    (await call(s.url, 'GET', '/api/v1/approvals?status=pending', { token: s.rootToken })).json.filter((a: { operation: string }) => a.operation === operation) as Array<{
      rule: string;
      target: string;
    }>;

  it('over REST: 202, pending under the delete rule, nothing ran', async () => {
    const restore = await call(s.url, 'POST', restorePath(), { token: agent });
    expect(restore.status, restore.text).toBe(202);
    expect(restore.json.approval).toMatchObject({ operation: 'restore_database_backup_execution', rule: 'delete', target: w.databaseUuid });
    const cleanup = await call(s.url, 'POST', `/api/v1/servers/${w.serverUuid}/docker-cleanup/run`, { token: agent, body: { delete_unused_volumes: true } });
    expect(cleanup.status, cleanup.text).toBe(202);
    expect(cleanup.json.approval).toMatchObject({ operation: 'run_server_docker_cleanup', rule: 'delete', target: w.serverUuid });
    // No cleanup execution was started.
    const runs = await call(s.url, 'GET', `/api/v1/servers/${w.serverUuid}/docker-cleanup/executions`, { token: s.rootToken });
    expect(runs.status).toBe(200);
    expect(runs.json).toEqual([]);
  });

  it('over MCP: the same holds, as pending tool results', async () => {
    const before = (await pending('restore_database_backup_execution')).length;
    const r = await mcp.callTool('restore_database_backup_execution', { uuid: w.databaseUuid, scheduled_backup_uuid: w.backupUuid, execution_uuid: w.backupExecutionUuid });
    expect(errorBody(r)).toMatchObject({ approval: { operation: 'restore_database_backup_execution', rule: 'delete', status: 'pending' } });
    const c = await mcp.callTool('run_server_docker_cleanup', { uuid: w.serverUuid });
    expect(errorBody(c)).toMatchObject({ approval: { operation: 'run_server_docker_cleanup', rule: 'delete', status: 'pending' } });
    expect((await pending('restore_database_backup_execution')).length).toBe(before + 1);
  });

  it('a stop is not data destruction: the delete class lets it run', async () => {
    const r = await call(s.url, 'POST', `/api/v1/applications/${w.appUuid}/stop`, { token: agent });
    expect(r.status, r.text).toBe(200);
  });
});
