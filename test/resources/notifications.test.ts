/**
 * Team notifications (Coolify's /notifications/{channel}): settings per channel with credentials
 * redacted, targets checked (no metadata, link-local, loopback or private address unless the
 * operator allows it), and real delivery of a deployment's outcome to every channel: HTTP test
 * doubles that speak Discord's, Slack's, Telegram's, Pushover's and a webhook's protocol, and a
 * real SMTP listener.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';
import { buildWorld, type World } from '../helpers/world.js';

interface Hit {
  path: string;
  type: string;
  body: string;
}

let s: TestServer;
let w: World;
let read: string;
let sensitive: string;
let hook: http.Server;
let hookUrl: string;
const hits: Hit[] = [];
let failing = false;
/** Where a redirect points: it must never be reached. */
let trap: http.Server;
const trapped: string[] = [];
let smtp: SMTPServer;
let smtpPort: number;
const mails: { to: string[]; raw: string }[] = [];

beforeAll(async () => {
  hook = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      hits.push({ path: req.url!, type: String(req.headers['content-type']), body });
      if (req.url === '/redirect') return void res.writeHead(302, { location: `http://127.0.0.1:${(trap.address() as AddressInfo).port}/stolen` }).end();
      res.writeHead(failing && req.url === '/slack' ? 500 : 200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  trap = http.createServer((req, res) => {
    trapped.push(req.url!);
    res.end();
  });
  await new Promise<void>((r) => trap.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}`;
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    onData(stream, session, cb) {
      let raw = '';
      stream.on('data', (d: Buffer) => (raw += d.toString()));
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        cb();
      });
    },
  });
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  s = await startTestServer(
    { apiRateLimit: 0 },
    { BERTH_OUTBOUND_ALLOWED_TARGETS: '127.0.0.1', BERTH_TELEGRAM_API_URL: `${hookUrl}/telegram`, BERTH_PUSHOVER_API_URL: `${hookUrl}/pushover`, BERTH_NOTIFY_SCAN_MS: '100' },
  );
  w = await buildWorld(s);
  read = (await s.token({ permissions: ['read'] })).token;
  sensitive = (await s.token({ permissions: ['read:sensitive'] })).token;
});
afterAll(async () => {
  await s?.stop();
  await new Promise((r) => hook?.close(r));
  await new Promise((r) => trap?.close(r));
  await new Promise((r) => smtp?.close(() => r(undefined)));
});

const api = (method: string, path: string, token: string, body?: unknown) => call(s.url, method, `/api/v1${path}`, { token, body });

describe('notification settings', () => {
  it('a team starts with every channel off and the failure events switched on', async () => {
    const r = await api('GET', '/notifications/discord', read);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ team_id: s.rootTeamId, discord_enabled: false, deployment_failure_discord_notifications: true, deployment_success_discord_notifications: false, created_at: null });
    // The webhook URL is a credential: absent without read:sensitive, even when null.
    expect(r.json).not.toHaveProperty('discord_webhook_url');
    expect((await api('GET', '/notifications/discord', sensitive)).json.discord_webhook_url).toBeNull();
  });

  it('PATCH switches a channel on with its target; credentials are shown with read:sensitive only', async () => {
    const url = 'https://discord.example.test/api/webhooks/1/secret-part';
    const r = await api('PATCH', '/notifications/discord', w.token, { discord_enabled: true, discord_webhook_url: url, deployment_success_discord_notifications: true });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ discord_enabled: true, discord_webhook_url: url, deployment_success_discord_notifications: true });
    expect((await api('GET', '/notifications/discord', read)).json).not.toHaveProperty('discord_webhook_url');
    expect((await api('GET', '/notifications/discord', sensitive)).json.discord_webhook_url).toBe(url);
    // Another team has its own settings.
    const other = await s.team('notify-neighbour');
    expect((await api('GET', '/notifications/discord', other.rootToken)).json).toMatchObject({ team_id: other.id, discord_enabled: false });
    expect((await api('PATCH', '/notifications/discord', read, { discord_enabled: false })).status).toBe(403);
    await api('PATCH', '/notifications/discord', w.token, { discord_enabled: false });
  });

  it('refuses metadata, link-local and private targets, other schemes, Resend, and a channel without its target; nothing changes', async () => {
    const before = (await api('GET', '/notifications/webhook', sensitive)).json;
    for (const [body, field] of [
      [{ webhook_url: 'http://169.254.169.254/latest/meta-data' }, 'webhook_url'],
      [{ webhook_url: 'http://metadata.google.internal/' }, 'webhook_url'],
      [{ webhook_url: 'http://10.1.2.3/hook' }, 'webhook_url'],
      [{ webhook_url: 'http://[::1]:8080/hook' }, 'webhook_url'],
      [{ webhook_url: 'ftp://example.test/hook' }, 'webhook_url'],
      // What URL parsers read differently: refused at the door, whatever host each would pick.
      [{ webhook_url: 'http://hooks.example.test\\@127.0.0.1:9/hook' }, 'webhook_url'],
      [{ webhook_url: 'http://hooks.example.test@10.1.2.3/hook' }, 'webhook_url'],
      [{ webhook_url: 'http://hooks.example.test%2f@10.1.2.3/hook' }, 'webhook_url'],
      [{ webhook_url: 'http://hooks.example.test /hook' }, 'webhook_url'],
      [{ webhook_url: 'http://2130706433/hook' }, 'webhook_url'],
      [{ discord_webhook_url: 'https://dïscord.example.test/api/webhooks/1/x' }, 'discord_webhook_url'],
      [{ webhook_enabled: true }, 'webhook_url'],
      [{ webhook_enabled: 'yes' }, 'webhook_enabled'],
      [{ no_such_field: true }, 'no_such_field'],
    ] as const) {
      const r = await api('PATCH', '/notifications/webhook', w.token, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(r.json.errors)).toContain(field);
    }
    expect((await api('PATCH', '/notifications/email', w.token, { resend_enabled: true })).json.errors).toHaveProperty('resend_enabled');
    expect((await api('PATCH', '/notifications/email', w.token, { smtp_enabled: true, smtp_recipients: 'not-an-address', smtp_host: 'mail.example.test' })).json.errors).toHaveProperty(
      'smtp_recipients',
    );
    for (const smtp_host of ['mail.example.test\\@127.0.0.1', 'mail.example.test 127.0.0.1', 'mail@127.0.0.1', 'mäil.example.test']) {
      expect((await api('PATCH', '/notifications/email', w.token, { smtp_host })).json.errors, smtp_host).toHaveProperty('smtp_host');
    }
    expect((await api('GET', '/notifications/webhook', sensitive)).json).toEqual(before);
  });
});

describe('delivery', () => {
  // The world's servers are record-only, so its deployments fail (nothing ran): the failure event.
  it("a failed deployment reaches every channel that wants it, in each channel's own protocol", async () => {
    const on = async (channel: string, body: Record<string, unknown>) => expect((await api('PATCH', `/notifications/${channel}`, w.token, body)).status).toBe(200);
    await on('discord', { discord_enabled: true, discord_webhook_url: `${hookUrl}/discord`, deployment_failure_discord_notifications: true });
    await on('slack', { slack_enabled: true, slack_webhook_url: `${hookUrl}/slack`, deployment_failure_slack_notifications: false });
    await on('telegram', {
      telegram_enabled: true,
      telegram_token: '123:tg-secret',
      telegram_chat_id: '-100',
      telegram_notifications_deployment_failure_thread_id: '7',
      deployment_failure_telegram_notifications: true,
    });
    await on('pushover', { pushover_enabled: true, pushover_user_key: 'user-key', pushover_api_token: 'app-token', deployment_failure_pushover_notifications: true });
    await on('webhook', { webhook_enabled: true, webhook_url: `${hookUrl}/webhook`, deployment_failure_webhook_notifications: true });
    await on('email', {
      smtp_enabled: true,
      smtp_host: '127.0.0.1',
      smtp_port: smtpPort,
      smtp_encryption: 'none',
      smtp_recipients: 'ops@example.test',
      smtp_from_address: 'berth@example.test',
      deployment_failure_email_notifications: true,
    });
    // Slack is on, but not for this event (switched off): it stays quiet.

    const d = await api('POST', `/deploy?uuid=${w.appUuid}`, w.token);
    const deployment = d.json.deployments[0].deployment_uuid as string;
    await until('every channel delivered', () => hits.length >= 4 && mails.length >= 1, 15_000);

    const byPath = Object.fromEntries(hits.map((h) => [h.path, h]));
    expect(Object.keys(byPath).sort()).toEqual(['/discord', '/pushover/1/messages.json', '/telegram/bot123:tg-secret/sendMessage', '/webhook']);
    expect(JSON.parse(byPath['/discord']!.body).content).toMatch(/failed/);
    expect(JSON.parse(byPath['/telegram/bot123:tg-secret/sendMessage']!.body)).toMatchObject({ chat_id: '-100', message_thread_id: '7', text: expect.stringContaining(deployment) });
    expect(byPath['/pushover/1/messages.json']!.type).toMatch(/x-www-form-urlencoded/);
    expect(Object.fromEntries(new URLSearchParams(byPath['/pushover/1/messages.json']!.body))).toMatchObject({ token: 'app-token', user: 'user-key' });
    expect(JSON.parse(byPath['/webhook']!.body)).toMatchObject({ event: 'deployment_failure', deployment_uuid: deployment, resource_uuid: w.appUuid, status: 'failed' });
    expect(mails[0]!.to).toEqual(['ops@example.test']);
    expect(mails[0]!.raw).toMatch(/Subject: Deployment of .* failed/);

    const rows = await until('every row marked sent', async () => {
      const r = await s.db.selectFrom('notifications').select(['channel', 'status']).where('dedupe_key', 'like', `deployment:${deployment}:%`).execute();
      return r.every((x) => x.status === 'sent') && r;
    });
    expect(rows.map((r) => `${r.channel}:${r.status}`).sort()).toEqual(['discord:sent', 'email:sent', 'pushover:sent', 'telegram:sent', 'webhook:sent']);
  });

  it('a target that answers an error is retried later with the reason recorded, not dropped', async () => {
    failing = true;
    await api('PATCH', '/notifications/slack', w.token, { deployment_failure_slack_notifications: true });
    const d = await api('POST', `/deploy?uuid=${w.appUuid}`, w.token);
    const deployment = d.json.deployments[0].deployment_uuid as string;
    const key = `deployment:${deployment}:slack`;
    await until('the failed send recorded', async () => !!(await s.db.selectFrom('notifications').select('last_error').where('dedupe_key', '=', key).executeTakeFirst())?.last_error, 15_000);
    const row = await s.db.selectFrom('notifications').selectAll().where('dedupe_key', '=', key).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'pending', attempts: 1, last_error: expect.stringContaining('500') });
    expect(row.next_attempt_at).not.toBeNull();
    failing = false;
  });

  it('a target that answers with a redirect is not followed: the 302 is the answer, the place it points to hears nothing', async () => {
    expect((await api('PATCH', '/notifications/webhook', w.token, { webhook_url: `${hookUrl}/redirect` })).status).toBe(200);
    const d = await api('POST', `/deploy?uuid=${w.appUuid}`, w.token);
    const key = `deployment:${d.json.deployments[0].deployment_uuid}:webhook`;
    await until('the redirected send recorded', async () => !!(await s.db.selectFrom('notifications').select('last_error').where('dedupe_key', '=', key).executeTakeFirst())?.last_error, 15_000);
    const row = await s.db.selectFrom('notifications').selectAll().where('dedupe_key', '=', key).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'pending', last_error: expect.stringContaining('answered 302') });
    expect(hits.map((h) => h.path)).toContain('/redirect');
    expect(trapped).toEqual([]);
  });
});
