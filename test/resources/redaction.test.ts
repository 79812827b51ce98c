import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../src/core/operations/index.js';
import { TEST_KEY } from '../helpers/world.js';
import { fillPath, keysDeep, setup, type Ctx } from './support.js';

/**
 * One sweep over every GET route of the API, filled with the world's uuids: a read token never
 * sees a secret (neither the key nor the value, anywhere in the raw text), read:sensitive and
 * root do, and a few secrets are never shown to anyone.
 */
let c: Ctx;
const KEY_BODY = TEST_KEY.split('\n')[1]!;
const SECRETS = {
  private_key: KEY_BODY,
  env_value: 'app-secret-value',
  db_password: 'db-secret-password',
  service_env: 'service-secret',
  compose: 'GREETING',
  engine_tls: 'RU5HSU5FVExTU0VDUkVU',
  deployment_log: 'deploy-log-secret-8086',
  // the world's shared variables: team_shared-secret-value, project_shared-…
  shared_value: 'shared-secret-value',
  github_client_secret: 'github-client-secret-value',
  github_webhook_secret: 'github-webhook-secret-value',
  cloud_token: 'cloud-token-secret-value',
};
const NEVER_SHOWN = 'shown-once-secret-value';
const SENSITIVE_KEYS = ['private_key', 'value', 'postgres_password', 'internal_db_url', 'docker_compose_raw', 'engine_tls', 'logs', 'client_secret', 'webhook_secret', 'token'];

// A GitHub app's repositories and branches need GitHub's API (.invalid here): they answer 502 and show nothing.
const NEEDS_PROVIDER = ['list_github_app_repositories', 'list_github_app_branches'];
// The providers' catalogues too: they answer what a provider's API says (a stand-in in cloud-providers.test.ts).
const gets = operations.filter(
  (o) =>
    o.http.method === 'GET' &&
    o.http.path.startsWith('/api/v1/') &&
    (o.permission === 'read' || o.permission === 'read:sensitive') &&
    !NEEDS_PROVIDER.includes(o.name) &&
    !/^list_(hetzner|digitalocean|vultr)_/.test(o.name),
);

beforeAll(async () => {
  c = await setup();
  const pem = (label: string) => `-----BEGIN ${label}-----\n${SECRETS.engine_tls}\n-----END ${label}-----\n`;
  const tls = await c.api('PATCH', `/servers/${c.w.server2Uuid}`, c.root, { engine_tls: { ca: pem('CERTIFICATE'), cert: pem('CERTIFICATE'), key: pem('PRIVATE KEY') } });
  expect(tls.status).toBe(201);
  const once = await c.api('POST', `/applications/${c.w.appUuid}/envs`, c.root, { key: 'ONCE', value: NEVER_SHOWN, is_shown_once: true });
  expect(once.status).toBe(201);
  await c.s.db
    .updateTable('deployments')
    .set({ logs: `building\nTOKEN=${SECRETS.deployment_log}\n` })
    .where('uuid', '=', c.w.deploymentUuid)
    .execute();
  // A queued deployment, so GET /deployments has an item to redact.
  const app = await c.s.db.selectFrom('resources').select(['id', 'team_id']).where('uuid', '=', c.w.appUuid).executeTakeFirstOrThrow();
  const server = await c.s.db.selectFrom('servers').select('id').where('uuid', '=', c.w.serverUuid).executeTakeFirstOrThrow();
  const now = new Date().toISOString();
  await c.s.db
    .insertInto('deployments')
    .values({
      uuid: 'parkedredactiondeploy0001',
      team_id: app.team_id,
      resource_id: app.id,
      server_id: server.id,
      kind: 'deploy',
      status: 'queued',
      force: 0,
      logs: `TOKEN=${SECRETS.deployment_log}`,
      started_at: null,
      finished_at: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
});
afterAll(() => c.stop());

async function sweep(token: string) {
  const out: { path: string; status: number; text: string; json: unknown }[] = [];
  for (const op of gets) {
    const path = fillPath(op.http.path, c.w, c.s.rootTeamId);
    const r = await c.api('GET', path, token);
    out.push({ path, status: r.status, text: r.text, json: r.json });
  }
  return out;
}

describe('redaction over every GET route', () => {
  it('a read token: no sensitive key and no secret anywhere in any response', async () => {
    const all = await sweep(c.read);
    for (const r of all) {
      if (r.path.endsWith('/logs')) {
        expect(r.status, r.path).toBe(403); // container logs need read:sensitive
        continue;
      }
      expect(r.status, `${r.path}: ${r.text}`).toBe(200);
      for (const [name, secret] of Object.entries(SECRETS)) expect(r.text, `${name} in ${r.path}`).not.toContain(secret);
      expect(r.text).not.toContain(NEVER_SHOWN);
      expect(r.text).not.toContain('PRIVATE KEY');
      const keys = keysDeep(r.json);
      for (const k of SENSITIVE_KEYS) expect(keys.has(k), `${k} in ${r.path}`).toBe(false);
      expect(
        [...keys].filter((k) => /password/.test(k)),
        r.path,
      ).toEqual([]);
    }
  });

  it('read:sensitive and root see every secret where it lives, never a shown-once value, never a key in a list', async () => {
    for (const token of [c.sensitive, c.root]) {
      const all = await sweep(token);
      for (const r of all) {
        expect(r.status, `${r.path}: ${r.text}`).toBe(200);
        expect(r.text).not.toContain(NEVER_SHOWN);
      }
      const text = (p: string) => all.find((r) => r.path === p)!.text;
      expect(text(`/security/keys/${c.w.keyUuid}`)).toContain(SECRETS.private_key);
      expect(text('/security/keys')).not.toContain('PRIVATE KEY');
      expect(text(`/applications/${c.w.appUuid}/envs`)).toContain(SECRETS.env_value);
      expect(text(`/databases/${c.w.databaseUuid}`)).toContain(SECRETS.db_password);
      expect(text('/databases')).toContain(SECRETS.db_password);
      expect(text(`/services/${c.w.serviceUuid}/envs`)).toContain(SECRETS.service_env);
      expect(text(`/services/${c.w.serviceUuid}`)).toContain(SECRETS.compose);
      expect((await c.api('GET', `/servers/${c.w.server2Uuid}`, token)).json.engine_tls.key).toContain(SECRETS.engine_tls);
      expect(text('/servers')).toContain(SECRETS.engine_tls);
      expect(text('/github-apps')).toContain(SECRETS.github_client_secret);
      expect(text('/github-apps')).toContain(SECRETS.github_webhook_secret);
      expect(text(`/cloud-tokens/${c.w.cloudTokenUuid}`)).toContain(SECRETS.cloud_token);
      expect(text('/cloud-tokens')).not.toContain(SECRETS.cloud_token);
      expect(text(`/deployments/${c.w.deploymentUuid}`)).toContain(SECRETS.deployment_log);
      expect(text('/deployments')).toContain(SECRETS.deployment_log);
      const db = JSON.parse(text(`/databases/${c.w.databaseUuid}`));
      expect(db.internal_db_url).toContain(SECRETS.db_password);
      expect(text('/team/envs')).toContain(`team_${SECRETS.shared_value}`);
      expect(text(`/projects/${c.w.projectUuid}/envs`)).toContain(`project_${SECRETS.shared_value}`);
      expect(text(`/projects/${c.w.projectUuid}/environments/${c.w.environmentUuid}/envs`)).toContain(`environment_${SECRETS.shared_value}`);
      expect(text(`/servers/${c.w.serverUuid}/envs`)).toContain(`server_${SECRETS.shared_value}`);
    }
  });

  it('the database create response carries internal_db_url only for sensitive callers', async () => {
    const place = { project_uuid: c.w.projectUuid, server_uuid: c.w.serverUuid, environment_name: 'production', postgres_password: 'create-response-secret' };
    const write = await c.api('POST', '/databases/postgresql', c.write, place);
    expect(write.status).toBe(201);
    expect(write.json).not.toHaveProperty('internal_db_url');
    expect(write.text).not.toContain('create-response-secret');
    const root = await c.api('POST', '/databases/postgresql', c.root, place);
    expect(root.json.internal_db_url).toContain('create-response-secret');
  });
});
