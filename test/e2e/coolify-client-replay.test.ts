/**
 * A real Coolify client, unchanged, against berth: @masonator/coolify-mcp (the most used Coolify
 * MCP server on npm, a dev dependency) runs over stdio as it would for a user, with
 * COOLIFY_BASE_URL pointed at a real `berth serve` on two real engines and a root token. A real
 * MCP client (@modelcontextprotocol/sdk) calls every one of its tools and actions with realistic
 * arguments, on a world it builds first (servers, project, environments, applications, a
 * PostgreSQL database, a compose service).
 *
 * Every HTTP exchange between the client and berth passes a recording relay in this process. The
 * test fails on any berth answer of 4xx/5xx that Coolify would not give for the same call, and on
 * any tool answer that reports an error. GitHub is a stand-in that speaks its API (an app's JWT,
 * installation tokens, repositories, branches; test/helpers/github.ts), and a cloud token is
 * validated against a stand-in that speaks Hetzner's API. The one call that needs a cloud
 * provider's machines is listed in OUT_OF_SCOPE below and never made.
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { openStore } from '../../src/store/db.js';
import { ENGINES_SCRIPT, enginesAvailable, useEngines } from '../helpers/engines.js';
import { fakeGithub } from '../helpers/github.js';
import { spawnServe, type ServeProcess } from '../helpers/process.js';
import { tempDir } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';
import { Api, ensureSleeperImage, registerEngines, SLEEPER_IMAGE, until, type Platform } from './support.js';

const CLIENT_BIN = path.resolve(import.meta.dirname, '../../node_modules/@masonator/coolify-mcp/dist/index.js');
const PG_IMAGE = 'localhost/berth-postgres:15';

/**
 * Tool actions never called here: they reach a third party's network, which this suite has not
 * got (and Coolify itself answers them only with that network).
 */
const OUT_OF_SCOPE = [
  'hetzner.*', // Hetzner's API (locations, types, images, keys, server creation)
];

/**
 * Calls that fail today because their work is on another branch (issue 27), marked at the call
 * with `awaiting`. Each must still fail until that branch is merged; once one passes, the last
 * test says to remove its mark, so no mark can hide a regression after the merge.
 */
type Branch = 'h/fields' | 'h/tasks' | 'h/deploykey';

interface Exchange {
  method: string;
  url: string;
  status: number;
  body: string;
}

/** A relay in front of berth that records every exchange (the client never talks to berth directly). */
function recordingRelay(target: string, log: Exchange[]): Promise<{ url: string; close(): Promise<void> }> {
  const t = new URL(target);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: { ...req.headers, host: t.host } }, (r) => {
        const out: Buffer[] = [];
        r.on('data', (c: Buffer) => out.push(c));
        r.on('end', () => {
          const body = Buffer.concat(out);
          log.push({ method: req.method!, url: req.url!, status: r.statusCode!, body: body.toString('utf8').slice(0, 2000) });
          res.writeHead(r.statusCode!, r.headers);
          res.end(body);
        });
      });
      up.on('error', (e) => {
        log.push({ method: req.method!, url: req.url!, status: 599, body: String(e) });
        res.writeHead(502).end();
      });
      up.end(Buffer.concat(chunks));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) });
    }),
  );
}

describe.skipIf(!enginesAvailable)('a real Coolify MCP client against berth', { timeout: 240_000 }, () => {
  const engines = useEngines();
  let dataDir: string;
  let token: string;
  let serve: ServeProcess;
  let api: Api;
  let p: Platform;
  let relay: { url: string; close(): Promise<void> };
  let hetzner: http.Server;
  let client: Client;
  let clientErr = '';
  const log: Exchange[] = [];
  /** Berth failures not expected: filled by every call, checked by each test. */
  const failures: string[] = [];
  const awaitingFailed = new Map<string, string>();
  const awaitingPassed: string[] = [];
  const called = new Set<string>();

  beforeAll(async () => {
    ensureSleeperImage(engines);
    execFileSync('bash', [ENGINES_SCRIPT, 'pg-image', engines.dir], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
    dataDir = tempDir('berth-e2e-replay-');
    const db = await openStore(dataDir, storeUrlFor(dataDir));
    token = (await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' })).token;
    await db.destroy();
    // Hetzner's API as far as validate asks it (its servers, with the bearer token): the real one cannot be reached here.
    hetzner = http.createServer((req, res) => {
      const ok = req.headers.authorization === 'Bearer replay-hetzner-token' && req.url?.startsWith('/v1/servers');
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' }).end(JSON.stringify(ok ? { servers: [], meta: { pagination: { next_page: null } } } : { error: { code: 'unauthorized' } }));
    });
    await new Promise<void>((r) => hetzner.listen(0, '127.0.0.1', () => r()));
    const hetznerUrl = `http://127.0.0.1:${(hetzner.address() as { port: number }).port}/v1`;
    // The private repository's git host and the Hetzner stand-in are on loopback, which the outbound guard refuses unless the operator allows it.
    serve = await spawnServe(dataDir, {
      BERTH_HELPER_IMAGE: 'localhost/berth-busybox:latest',
      LOG_LEVEL: 'warn',
      API_RATE_LIMIT: '0',
      BERTH_OUTBOUND_ALLOWED_TARGETS: '127.0.0.1',
      BERTH_HETZNER_API_URL: hetznerUrl,
    });
    api = new Api(serve.url, token);
    p = await registerEngines(api, engines);
    relay = await recordingRelay(serve.url, log);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLIENT_BIN],
      env: { PATH: process.env.PATH ?? '', COOLIFY_BASE_URL: relay.url, COOLIFY_ACCESS_TOKEN: token },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (d: Buffer) => (clientErr += d));
    client = new Client({ name: 'berth-replay', version: '1.0.0' });
    await client.connect(transport);
  }, 600_000);

  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') console.error(`client stderr:\n${clientErr.slice(-1500)}\nberth:\n${serve?.output().slice(-1500)}`);
  });

  afterAll(async () => {
    await client?.close();
    await relay?.close();
    await serve?.stop();
    await new Promise((r) => (hetzner ? hetzner.close(r) : r(undefined)));
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  interface CallOpts {
    /** Statuses berth may answer during this call because Coolify answers them too (each call says why). */
    allow?: number[];
    /** Fails until this branch is merged (see Branch). */
    awaiting?: Branch;
  }

  /**
   * Calls one tool action; returns its parsed answer. Records as a failure any berth answer of
   * 4xx/5xx during the call (unless allowed) and a tool answer starting with "Error:".
   */
  async function call(tool: string, args: Record<string, unknown> = {}, opts: CallOpts = {}): Promise<any> {
    const key = `${tool}.${(args.action as string | undefined) ?? ''}`.replace(/\.$/, '');
    called.add(key);
    const from = log.length;
    const r = (await client.callTool({ name: tool, arguments: args }, undefined, { timeout: 180_000 })) as { content: Array<{ text?: string }>; isError?: boolean };
    const text = r.content.map((c) => c.text ?? '').join('\n');
    const exchanges = log.slice(from);
    const bad = exchanges.filter((e) => e.status >= 400 && !(opts.allow ?? []).includes(e.status));
    const allowed = exchanges.some((e) => (opts.allow ?? []).includes(e.status));
    const problem =
      bad.length > 0
        ? bad.map((e) => `${e.method} ${e.url} → ${e.status} ${e.body.slice(0, 400)}`).join('\n')
        : !allowed && (r.isError || text.startsWith('Error:'))
          ? `tool error: ${text.slice(0, 600)}`
          : undefined;
    const label = `${key} ${JSON.stringify(args).slice(0, 160)}`;
    if (opts.awaiting) {
      if (problem) awaitingFailed.set(label, `${opts.awaiting}: ${problem}`);
      else awaitingPassed.push(`${opts.awaiting} ${label}`);
    } else if (problem) {
      failures.push(`${key} ${JSON.stringify(args).slice(0, 300)}\n  ${problem}`);
    }
    if (problem && process.env.REPLAY_REPORT) fs.appendFileSync(process.env.REPLAY_REPORT, `${opts.awaiting ?? 'berth'} ${key} ${JSON.stringify(args).slice(0, 200)}\n  ${problem}\n`);
    let parsed: any;
    try {
      parsed = JSON.parse(text);
    } catch {
      return text;
    }
    // Tools that suggest next steps wrap their answer: { data, _actions }.
    const envelope = parsed && typeof parsed === 'object' && 'data' in parsed && Object.keys(parsed).every((k) => ['data', '_actions', '_pagination'].includes(k));
    return envelope ? parsed.data : parsed;
  }

  function noFailures(): void {
    const now = failures.splice(0);
    expect(now, now.join('\n\n')).toEqual([]);
  }

  /** What the calls create, shared by the tests below (they run in order). */
  const w = {} as Record<string, string>;
  const COMPOSE = `services:\n  worker:\n    image: ${SLEEPER_IMAGE}\n    volumes:\n      - work:/work\nvolumes:\n  work: {}\n`;

  it('lists its tools and reads berth as a Coolify', async () => {
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThanOrEqual(44);
    expect(await call('get_version')).toMatchObject({ version: expect.stringMatching(/^4\./) });
    await call('get_mcp_version');
    await call('system', { action: 'health' });
    await call('search_docs', { query: 'deploy a docker image', limit: 2 });
    noFailures();
  });

  it('servers, destinations, keys and teams', async () => {
    const servers = await call('list_servers');
    expect(servers.map((s: { uuid: string }) => s.uuid)).toEqual(expect.arrayContaining([p.serverA, p.serverB]));
    expect(await call('get_server', { uuid: p.serverA })).toMatchObject({ uuid: p.serverA });
    await call('server_resources', { uuid: p.serverA });
    await call('server_domains', { uuid: p.serverA });
    expect(JSON.stringify(await call('list_destinations'))).toContain(p.destA);
    expect(JSON.stringify(await call('list_destinations', { server_uuid: p.serverB }))).toContain(p.destB);
    await call('validate_server', { uuid: p.serverB });
    await call('diagnose_server', { query: p.serverA });
    await call('diagnose_server', { query: 'engine-b' });

    const keyDir = tempDir('berth-replay-key-');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'replay', '-f', path.join(keyDir, 'id')]);
    const pem = fs.readFileSync(path.join(keyDir, 'id'), 'utf8');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'replay2', '-f', path.join(keyDir, 'id2')]);
    const pem2 = fs.readFileSync(path.join(keyDir, 'id2'), 'utf8');
    fs.rmSync(keyDir, { recursive: true, force: true });
    const key = await call('private_keys', { action: 'create', name: 'deploy', description: 'replay key', private_key: pem });
    w.key = key.uuid;
    expect(JSON.stringify(await call('private_keys', { action: 'list' }))).toContain(w.key);
    expect(await call('private_keys', { action: 'get', uuid: w.key })).toMatchObject({ uuid: w.key, name: 'deploy' });
    await call('private_keys', { action: 'update', uuid: w.key, name: 'deploy-renamed', description: 'renamed' });
    await call('private_keys', { action: 'update', uuid: w.key, private_key: pem2 });
    w.spareKey = (await call('private_keys', { action: 'create', name: 'spare', private_key: pem })).uuid;

    const teams = await call('teams', { action: 'list' });
    const teamId = (teams as Array<{ id: number }>)[0]!.id;
    await call('teams', { action: 'get', id: teamId });
    await call('teams', { action: 'get_members', id: teamId });
    expect(await call('teams', { action: 'get_current' })).toMatchObject({ id: teamId });
    await call('teams', { action: 'get_current_members' });
    noFailures();
  });

  it('projects and environments', async () => {
    w.project = (await call('projects', { action: 'create', name: 'replay', description: 'Coolify client replay' })).uuid;
    w.spareProject = (await call('projects', { action: 'create', name: 'spare' })).uuid;
    expect(JSON.stringify(await call('projects', { action: 'list' }))).toContain(w.project);
    expect(await call('projects', { action: 'get', uuid: w.project })).toMatchObject({ uuid: w.project });
    await call('projects', { action: 'update', uuid: w.project, description: 'renamed by the client' });
    const staging = await call('environments', { action: 'create', project_uuid: w.project, name: 'staging', description: 'staging' });
    w.staging = staging.uuid;
    await call('environments', { action: 'create', project_uuid: w.project, name: 'scratch' });
    expect(JSON.stringify(await call('environments', { action: 'list', project_uuid: w.project }))).toContain('staging');
    await call('environments', { action: 'get', project_uuid: w.project, name: 'staging' });
    await call('environments', { action: 'delete', project_uuid: w.project, name: 'scratch' });
    await call('projects', { action: 'delete', uuid: w.spareProject });
    noFailures();
  });

  it('applications', async () => {
    const base = { project_uuid: w.project, server_uuid: p.serverA, destination_uuid: p.destA, environment_name: 'production' };
    const app = await call('application', {
      action: 'create_dockerimage',
      ...base,
      name: 'web',
      description: 'a long-running worker',
      docker_registry_image_name: SLEEPER_IMAGE.split(':')[0],
      docker_registry_image_tag: 'latest',
      ports_exposes: '8080',
      instant_deploy: false,
    });
    w.app = app.uuid;
    w.app2 = (
      await call('application', {
        action: 'create_dockerfile',
        ...base,
        name: 'built',
        dockerfile: Buffer.from(`FROM ${SLEEPER_IMAGE}\nRUN echo built > /built\n`).toString('base64'),
        ports_exposes: '8080',
        instant_deploy: false,
      })
    ).uuid;
    w.app3 = (
      await call('application', {
        action: 'create_public',
        ...base,
        name: 'from-git',
        git_repository: 'https://github.com/coollabsio/coolify-examples',
        git_branch: 'main',
        build_pack: 'dockerfile',
        ports_exposes: '3000',
        instant_deploy: false,
      })
    ).uuid;
    w.app4 = (
      await call('application', {
        action: 'create_key',
        ...base,
        name: 'private-git',
        private_key_uuid: w.key,
        git_repository: 'git@127.0.0.1:team/app.git',
        git_branch: 'main',
        build_pack: 'dockerfile',
        ports_exposes: '8080',
        instant_deploy: false,
      })
    ).uuid;
    expect(JSON.stringify(await call('list_applications'))).toContain(w.app);
    expect(await call('get_application', { uuid: w.app })).toMatchObject({ uuid: w.app, name: 'web' });
    await call('get_application', { uuid: w.app, reveal: true });
    await call('application', {
      action: 'update',
      uuid: w.app,
      description: 'updated by the client',
      health_check_enabled: false,
      health_check_path: '/health',
      custom_docker_run_options: '--init',
      limits_memory: undefined,
    });
    await call('environments', { action: 'verify_app', project_uuid: w.project, name: 'production', application_uuid: w.app });
    await call('application', { action: 'move', uuid: w.app2, environment_uuid: w.staging });
    // No preview of pull request 1 was deployed here: a missing preview is a 404, in Coolify as in berth.
    await call('application', { action: 'delete_preview', uuid: w.app, pull_request_id: 1 }, { allow: [404] });
    noFailures();
  });

  it('deploys, controls and reads logs of an application', async () => {
    const d = await call('deploy', { tag_or_uuid: w.app, wait: true, timeout_seconds: 120 });
    expect(JSON.stringify(d)).toContain('finished');
    await call('control', { resource: 'application', action: 'restart', uuid: w.app });
    await call('control', { resource: 'application', action: 'stop', uuid: w.app });
    await call('control', { resource: 'application', action: 'start', uuid: w.app });
    const deployments = await call('list_deployments');
    expect(Array.isArray(deployments)).toBe(true);
    // Coolify answers {count, deployments}; a bare array reads as no deployments.
    const forApp = await call('deployment', { action: 'list_for_app', uuid: w.app });
    expect(forApp.count, JSON.stringify(forApp).slice(0, 300)).toBeGreaterThanOrEqual(1);
    await call('deployment', { action: 'list_for_app', uuid: w.app, page: 1, per_page: 2, include_logs: true });
    const depUuid = d.deployment_uuid as string;
    expect(depUuid).toBeTruthy();
    await call('deployment', { action: 'get', uuid: depUuid });
    await call('deployment', { action: 'get', uuid: depUuid, lines: 5 });
    // A deployment that is still queued is cancelled (a second deploy queues behind nothing, so cancel at once).
    const queued = await call('deploy', { tag_or_uuid: w.app, force: true });
    const queuedUuid = queued.deployments?.[0]?.deployment_uuid;
    expect(queuedUuid).toBeTruthy();
    await call('deployment', { action: 'cancel', uuid: queuedUuid }, { allow: [400] });
    await until('the app running', async () => ((await api.ok('GET', `/applications/${w.app}`)).status.startsWith('running') ? true : undefined), 60_000).catch(() => undefined);
    await call('logs', { resource: 'application', uuid: w.app, lines: 20 });
    await call('logs', { resource: 'application', uuid: w.app, lines: 20, show_timestamps: true });
    await call('application_logs', { uuid: w.app, lines: 10 });
    await call('diagnose_app', { query: w.app });
    await call('diagnose_app', { query: 'web' });
    noFailures();
  });

  it('databases', async () => {
    const base = { project_uuid: w.project, server_uuid: p.serverA, destination_uuid: p.destA, environment_name: 'production' };
    const db = await call('database', {
      action: 'create',
      type: 'postgresql',
      ...base,
      name: 'pg',
      image: PG_IMAGE,
      postgres_user: 'app',
      postgres_password: 'app-password-1',
      postgres_db: 'app',
      instant_deploy: true,
    });
    w.db = db.uuid;
    w.redis = (await call('database', { action: 'create', type: 'redis', ...base, name: 'cache', redis_password: 'short', instant_deploy: false })).uuid;
    expect(JSON.stringify(await call('list_databases'))).toContain(w.db);
    expect(await call('get_database', { uuid: w.db })).toMatchObject({ uuid: w.db });
    await call('get_database', { uuid: w.db, reveal: true });
    await call('database', { action: 'update', uuid: w.db, description: 'main store', limits_memory: '512m', limits_cpus: '1' });
    await call('database', { action: 'update', uuid: w.db, postgres_password: 'app-password-2' });
    await until('the database running', async () => ((await api.ok('GET', `/databases/${w.db}`)).status.startsWith('running') ? true : undefined), 60_000).catch(() => undefined);
    await call('control', { resource: 'database', action: 'restart', uuid: w.db });
    await call('control', { resource: 'database', action: 'stop', uuid: w.db });
    await call('control', { resource: 'database', action: 'start', uuid: w.db });
    await call('logs', { resource: 'database', uuid: w.db, lines: 20 });
    await call('logs', { resource: 'database', uuid: w.db, lines: 20, show_timestamps: true });
    await call('database', { action: 'move', uuid: w.redis ?? w.db, environment_uuid: w.staging });

    const backup = await call('database_backups', { action: 'create', database_uuid: w.db, frequency: '0 3 * * *', enabled: true, database_backup_retention_amount_locally: 3 });
    w.backup = backup.uuid;
    expect(JSON.stringify(await call('database_backups', { action: 'list_schedules', database_uuid: w.db }))).toContain(w.backup);
    // Coolify has no GET of one schedule (the client reads /databases/{uuid}/backups/{backup_uuid}): 405 there too.
    await call('database_backups', { action: 'get_schedule', database_uuid: w.db, backup_uuid: w.backup }, { allow: [405] });
    await call('database_backups', { action: 'update', database_uuid: w.db, backup_uuid: w.backup, frequency: 'daily', database_backup_retention_days_locally: 7 });
    await call('database_backups', { action: 'list_executions', database_uuid: w.db, backup_uuid: w.backup });
    // An execution to read: a schedule made over REST with Coolify's backup_now (the client's create has no such field).
    const now = await api.ok('POST', `/databases/${w.db}/backups`, { frequency: '0 4 * * *', backup_now: true });
    const ran = await until(
      'a backup execution',
      async () => {
        const r = await api.ok('GET', `/databases/${w.db}/backups/${now.uuid}/executions`);
        const e = (r.executions as Array<{ uuid: string; status: string }>)[0];
        return e && e.status !== 'running' ? e : undefined;
      },
      90_000,
    );
    const executions = await call('database_backups', { action: 'list_executions', database_uuid: w.db, backup_uuid: now.uuid });
    expect(JSON.stringify(executions)).toContain(ran.uuid);
    // Coolify serves only DELETE on one execution's path (the client GETs it): 405 there too.
    await call('database_backups', { action: 'get_execution', database_uuid: w.db, backup_uuid: now.uuid, execution_uuid: ran.uuid }, { allow: [405] });
    await call('database_backups', { action: 'delete_execution', database_uuid: w.db, backup_uuid: now.uuid, execution_uuid: ran.uuid });
    await call('database_backups', { action: 'delete', database_uuid: w.db, backup_uuid: now.uuid });
    noFailures();
  });

  it('services', async () => {
    const base = { project_uuid: w.project, server_uuid: p.serverA, destination_uuid: p.destA, environment_name: 'production' };
    const svc = await call('service', { action: 'create', ...base, name: 'stack', description: 'a compose stack', docker_compose_raw: COMPOSE, instant_deploy: true });
    w.svc = svc.uuid;
    w.svc2 = (await call('service', { action: 'create', ...base, name: 'spare-stack', docker_compose_raw: COMPOSE, instant_deploy: false })).uuid;
    expect(JSON.stringify(await call('list_services'))).toContain(w.svc);
    expect(await call('get_service', { uuid: w.svc })).toMatchObject({ uuid: w.svc });
    await call('get_service', { uuid: w.svc, reveal: true });
    await call('service', { action: 'update', uuid: w.svc, description: 'updated', is_container_label_escape_enabled: true });
    // Declared limitation (issue 27: a field berth cannot apply is refused by name): berth keeps
    // every label literal and does not interpolate `$`, so turning escaping off answers 422.
    await call('service', { action: 'update', uuid: w.svc, is_container_label_escape_enabled: false }, { allow: [422] });
    await call('service', { action: 'update', uuid: w.svc, connect_to_docker_network: false });
    const containers = await call('service', { action: 'list_containers', uuid: w.svc });
    w.svcApp = containers.applications[0].uuid;
    w.svcAppName = containers.applications[0].name;
    await call('service', { action: 'update_application', uuid: w.svc, app_uuid: w.svcApp, human_name: 'Worker', description: 'the worker', exclude_from_status: false });
    await call('service', { action: 'update_application', uuid: w.svc, app_uuid: w.svcApp, url: 'http://worker.replay.test', force_domain_override: true });
    await call('service', { action: 'restart_application', uuid: w.svc, app_uuid: w.svcApp });
    await call('service', { action: 'stop_application', uuid: w.svc, app_uuid: w.svcApp });
    await call('service', { action: 'start_application', uuid: w.svc, app_uuid: w.svcApp });
    await call('control', { resource: 'service', action: 'restart', uuid: w.svc });
    await call('control', { resource: 'service', action: 'restart', uuid: w.svc, pull_latest: true });
    await call('control', { resource: 'service', action: 'stop', uuid: w.svc });
    await call('control', { resource: 'service', action: 'start', uuid: w.svc });
    await call('logs', { resource: 'service', uuid: w.svc, container: w.svcAppName, lines: 10 });
    await call('service', { action: 'move', uuid: w.svc2, environment_uuid: w.staging });
    noFailures();
  });

  it('environment variables of each kind of resource', async () => {
    for (const [resource, uuid] of [
      ['application', w.app],
      ['service', w.svc],
      ['database', w.db],
    ] as const) {
      await call('env_vars', { resource, action: 'create', uuid, key: 'REPLAY_KEY', value: 'one', is_runtime: true });
      await call('env_vars', { resource, action: 'update', uuid, key: 'REPLAY_KEY', value: 'two' });
      await call('env_vars', {
        resource,
        action: 'bulk_update',
        uuid,
        data: [
          { key: 'BULK_A', value: 'a' },
          { key: 'BULK_B', value: 'b', is_literal: true },
        ],
      });
      const list = await call('env_vars', { resource, action: 'list', uuid });
      await call('env_vars', { resource, action: 'list', uuid, key: 'REPLAY_KEY', reveal: true });
      const env = (list as Array<{ key: string; uuid: string }>).find((e) => e.key === 'BULK_B');
      expect(env, `${resource} env list ${JSON.stringify(list)}`).toBeTruthy();
      await call('env_vars', { resource, action: 'delete', uuid, env_uuid: env!.uuid });
    }
    // Like Coolify, a PATCH of envs changes a key the application has (a missing one is a 404 there too).
    for (const uuid of [w.app, w.app2]) await call('env_vars', { resource: 'application', action: 'create', uuid, key: 'SHARED', value: 'no' });
    await call('bulk_env_update', { app_uuids: [w.app!, w.app2!], key: 'SHARED', value: 'yes', is_runtime: true });
    noFailures();
  });

  it('storages of each kind of resource, with volume backups', async () => {
    for (const [resource, uuid] of [
      ['application', w.app],
      ['database', w.db],
    ] as const) {
      const created = await call('storages', { resource, action: 'create', uuid, type: 'persistent', name: `${resource}-data`, mount_path: '/replay-data' });
      await call('storages', { resource, action: 'create', uuid, type: 'file', mount_path: '/etc/replay.conf', content: 'key=value\n' });
      const list = await call('storages', { resource, action: 'list', uuid });
      const storage = created?.uuid ?? (list.persistent_storages as Array<{ uuid: string; mount_path: string }>).find((s) => s.mount_path === '/replay-data')?.uuid;
      expect(storage, `${resource} storages ${JSON.stringify(list)}`).toBeTruthy();
      await call('storages', { resource, action: 'update', uuid, storage_uuid: storage, type: 'persistent', mount_path: '/replay-data2' });
      await call('storages', { resource, action: 'backup_set', uuid, storage_uuid: storage, frequency: '0 2 * * *', enabled: true, retention_amount_locally: 2 });
      await call('storages', { resource, action: 'backup_run', uuid, storage_uuid: storage });
      await call('storages', { resource, action: 'backup_delete', uuid, storage_uuid: storage });
      await call('storages', { resource, action: 'delete', uuid, storage_uuid: storage });
    }
    // A service's storages belong to its containers: Coolify requires resource_uuid (which of them),
    // which this client never sends, so Coolify answers its create with 422 too; and Coolify keeps
    // every service volume read-only (update and delete answer 422), as berth does for volumes
    // written in the compose file. Volume backups work on them as on any storage.
    await call('storages', { resource: 'service', action: 'create', uuid: w.svc, type: 'persistent', name: 'extra', mount_path: '/extra' }, { allow: [422] });
    const list = await call('storages', { resource: 'service', action: 'list', uuid: w.svc });
    const work = (list.persistent_storages as Array<{ uuid: string; name: string }>).find((s) => s.name === 'work')!.uuid;
    await call('storages', { resource: 'service', action: 'update', uuid: w.svc, storage_uuid: work, type: 'persistent', mount_path: '/elsewhere' }, { allow: [422] });
    await call('storages', { resource: 'service', action: 'backup_set', uuid: w.svc, storage_uuid: work, frequency: '0 2 * * *', enabled: true });
    await call('storages', { resource: 'service', action: 'backup_run', uuid: w.svc, storage_uuid: work });
    await call('storages', { resource: 'service', action: 'backup_delete', uuid: w.svc, storage_uuid: work });
    await call('storages', { resource: 'service', action: 'delete', uuid: w.svc, storage_uuid: work }, { allow: [422] });
    noFailures();
  });

  it('tags, and deploying by tag', async () => {
    for (const [resource, uuid] of [
      ['application', w.app],
      ['database', w.db],
      ['service', w.svc],
    ] as const) {
      const tags = await call('tags', { action: 'attach', resource, uuid, tag_names: ['replay', `${resource}-only`] });
      await call('tags', { action: 'list', resource, uuid });
      const only = (tags as Array<{ uuid: string; name: string }>).find((t) => t.name === `${resource}-only`);
      expect(only, JSON.stringify(tags)).toBeTruthy();
      await call('tags', { action: 'detach', resource, uuid, tag_uuid: only!.uuid });
    }
    expect(JSON.stringify(await call('tags', { action: 'list' }))).toContain('replay');
    await call('deploy', { tag_or_uuid: 'replay' });
    noFailures();
  });

  it('scheduled tasks of an application and a service', async () => {
    for (const [resource, uuid, container] of [
      ['application', w.app, undefined],
      ['service', w.svc, w.svcAppName],
    ] as const) {
      const task = await call('scheduled_tasks', { resource, action: 'create', uuid, name: 'tick', command: 'echo tick', frequency: 'hourly', container, timeout: 60 });
      w[`task-${resource}`] = task.uuid;
      await call('scheduled_tasks', { resource, action: 'list', uuid });
      await call('scheduled_tasks', { resource, action: 'update', uuid, task_uuid: task.uuid, frequency: '*/5 * * * *', enabled: true });
      await call('scheduled_tasks', { resource, action: 'list_executions', uuid, task_uuid: task.uuid });
      await call('scheduled_tasks', { resource, action: 'delete', uuid, task_uuid: task.uuid });
    }
    await call('scheduled_tasks', { resource: 'application', action: 'run_once', uuid: w.app, command: 'echo once', container: 'web', wait_seconds: 90 });
    noFailures();
  });

  it('GitHub apps through the stand-in GitHub (repositories, branches, an application from one) and cloud tokens', async () => {
    // A GitHub app whose installation reaches one repository, served by the stand-in.
    const ghDir = tempDir('berth-replay-gh-');
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', path.join(ghDir, 'acme', 'replay.git')]);
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const fake = await fakeGithub({ appId: 9001, installationId: 31, publicKey, root: ghDir, repositories: ['acme/replay'] });
    try {
      const rsaKey = (await call('private_keys', { action: 'create', name: 'github-app', private_key: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString() })).uuid;
      const app = await call('github_apps', {
        action: 'create',
        name: 'replay-installed',
        api_url: fake.apiUrl,
        html_url: fake.htmlUrl,
        app_id: 9001,
        installation_id: 31,
        client_id: 'Iv1.installed',
        client_secret: 'installed-client-secret',
        webhook_secret: 'installed-webhook-secret',
        private_key_uuid: rsaKey,
      });
      expect(JSON.stringify(await call('github_apps', { action: 'list_repos', id: app.id }))).toContain('acme/replay');
      await call('github_apps', { action: 'list_branches', id: app.id, owner: 'acme', repo: 'replay' });
      const created = await call('application', {
        action: 'create_github',
        project_uuid: w.project,
        server_uuid: p.serverA,
        destination_uuid: p.destA,
        environment_name: 'production',
        github_app_uuid: app.uuid,
        git_repository: 'acme/replay',
        git_branch: 'main',
        build_pack: 'dockerfile',
        ports_exposes: '80',
      });
      expect(created).toMatchObject({ uuid: expect.any(String) });
      // The installation token is the app's business: no answer carries one.
      for (const token of fake.tokens) expect(log.some((e) => e.body.includes(token))).toBe(false);
      await call('application', { action: 'delete', uuid: created.uuid });
      await call('github_apps', { action: 'delete', id: app.id });
      await call('private_keys', { action: 'delete', uuid: rsaKey });
    } finally {
      await fake.close();
      fs.rmSync(ghDir, { recursive: true, force: true });
    }

    const gh = await call('github_apps', {
      action: 'create',
      name: 'replay-app',
      api_url: 'https://api.github.com',
      html_url: 'https://github.com',
      app_id: 123456,
      installation_id: 654321,
      client_id: 'Iv1.replay',
      client_secret: 'replay-client-secret',
      webhook_secret: 'replay-webhook-secret',
      private_key_uuid: w.key,
      organization: 'replay-org',
    });
    const ghId = gh?.id as number;
    await call('github_apps', { action: 'list' });
    await call('github_apps', { action: 'get', id: ghId });
    await call('github_apps', { action: 'update', id: ghId, name: 'replay-app-renamed' });
    await call('github_apps', { action: 'delete', id: ghId });

    const ct = await call('cloud_tokens', { action: 'create', provider: 'hetzner', token: 'replay-hetzner-token', name: 'hz' });
    await call('cloud_tokens', { action: 'list' });
    await call('cloud_tokens', { action: 'get', uuid: ct?.uuid });
    await call('cloud_tokens', { action: 'update', uuid: ct?.uuid, name: 'hz-renamed' });
    expect(await call('cloud_tokens', { action: 'validate', uuid: ct?.uuid })).toMatchObject({ valid: true });
    await call('cloud_tokens', { action: 'delete', uuid: ct?.uuid });
    noFailures();
  });

  it('overviews and project-wide actions', async () => {
    await call('get_infrastructure_overview');
    await call('find_issues');
    await call('system', { action: 'list_resources' });
    await call('system', { action: 'list_resources', include_full: true, reveal: true });
    await call('restart_project_apps', { project_uuid: w.project });
    await call('redeploy_project', { project_uuid: w.project, force: false });
    await call('stop_all_apps', { confirm: true });
    noFailures();
  });

  it('turns the API off and on again through the client', async () => {
    await call('system', { action: 'disable_api' });
    expect((await api.req('GET', '/teams/current')).status).toBe(403);
    await call('system', { action: 'enable_api' });
    expect((await api.req('GET', '/teams/current')).status).toBe(200);
    noFailures();
  });

  it('deletes what it made', async () => {
    await call('application', { action: 'delete', uuid: w.app3 });
    if (w.app4) await call('application', { action: 'delete', uuid: w.app4, delete_volumes: true });
    await call('application', { action: 'delete', uuid: w.app2 });
    await call('application', { action: 'delete', uuid: w.app, delete_volumes: true });
    if (w.redis) await call('database', { action: 'delete', uuid: w.redis });
    await call('database', { action: 'delete', uuid: w.db, delete_volumes: true });
    await call('service', { action: 'delete', uuid: w.svc2 });
    await call('service', { action: 'delete', uuid: w.svc, delete_volumes: true });
    await call('private_keys', { action: 'delete', uuid: w.spareKey });
    noFailures();
  });

  it('called every tool and action but those out of scope; the awaited ones are still awaited', async () => {
    const { tools } = await client.listTools();
    const missing: string[] = [];
    for (const t of tools) {
      const actions = (t.inputSchema as { properties?: Record<string, { enum?: string[] }> }).properties?.action?.enum ?? [undefined];
      for (const a of actions) {
        const key = a ? `${t.name}.${a}` : t.name;
        if (called.has(key) || OUT_OF_SCOPE.includes(key) || OUT_OF_SCOPE.includes(`${t.name}.*`)) continue;
        missing.push(key);
      }
    }
    expect(missing).toEqual([]);
    expect(awaitingPassed, 'these pass now: remove them from AWAITING').toEqual([]);
    console.log(`awaiting other branches:\n${[...awaitingFailed].map(([k, v]) => `${k}\n  ${v}`).join('\n')}`);
  });
});
