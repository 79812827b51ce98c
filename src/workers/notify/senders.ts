import nodemailer from 'nodemailer';
import type { Mailer } from '../../mail/mailer.js';
import type { Channel, ChannelSettings, NotificationEvent } from '../../core/model/notification-channels.js';
import type { TargetGuard } from '../../core/outbound-guard.js';

export interface NotificationMessage {
  event: NotificationEvent;
  title: string;
  text: string;
  /** Machine-readable details for the generic webhook (uuids, status). */
  data: Record<string, string | number | null>;
}

export interface SenderDeps {
  guard: TargetGuard;
  /** The instance's SMTP (SMTP_URL), for use_instance_email_settings. */
  mailer: Mailer | null;
  telegramApiUrl: string;
  pushoverApiUrl: string;
  timeoutMs: number;
}

const str = (v: unknown) => (typeof v === 'string' ? v : v === null || v === undefined ? '' : String(v));

/** Sends one message on one channel; throws with a reason the outbox records. */
export function createSenders(deps: SenderDeps): (channel: Channel, s: ChannelSettings, m: NotificationMessage) => Promise<void> {
  async function post(url: string, body: unknown, form = false): Promise<void> {
    // The one guarded client: the URL checked by the one parser, the address pinned, no redirects.
    const r = await deps.guard.fetch(url, {
      method: 'POST',
      timeoutMs: deps.timeoutMs,
      headers: { 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json', 'user-agent': 'berth-notifications' },
      body: form ? new URLSearchParams(body as Record<string, string>).toString() : JSON.stringify(body),
    });
    // The URL may carry a secret (Discord's, Slack's): never echo it, only the status.
    if (r.status >= 300) throw new Error(`answered ${r.status}${r.text ? `: ${r.text.slice(0, 200)}` : ''}`);
  }

  async function email(s: ChannelSettings, m: NotificationMessage): Promise<void> {
    const to = str(s.smtp_recipients)
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    if (!to.length) throw new Error('no smtp_recipients');
    if (s.use_instance_email_settings === true) {
      if (!deps.mailer) throw new Error('use_instance_email_settings is on but this instance has no SMTP_URL');
      await deps.mailer.send({ to: to.join(', '), subject: m.title, text: m.text });
      return;
    }
    const host = str(s.smtp_host);
    const address = await deps.guard.resolve(host);
    const encryption = str(s.smtp_encryption) || 'starttls';
    const transport = nodemailer.createTransport({
      host: address,
      port: Number(s.smtp_port ?? (encryption === 'tls' ? 465 : 587)),
      secure: encryption === 'tls',
      ignoreTLS: encryption === 'none',
      requireTLS: encryption === 'starttls',
      name: str(s.smtp_ehlo_domain) || undefined,
      auth: s.smtp_username ? { user: str(s.smtp_username), pass: str(s.smtp_password) } : undefined,
      tls: { servername: host },
      connectionTimeout: (Number(s.smtp_timeout) || deps.timeoutMs / 1000) * 1000,
    });
    try {
      const fromAddress = str(s.smtp_from_address) || 'berth@localhost';
      await transport.sendMail({ from: s.smtp_from_name ? { name: str(s.smtp_from_name), address: fromAddress } : fromAddress, to, subject: m.title, text: m.text });
    } finally {
      transport.close();
    }
  }

  return async (channel, s, m) => {
    switch (channel) {
      case 'email':
        return email(s, m);
      case 'discord':
        return post(str(s.discord_webhook_url), { content: `${s.discord_ping_enabled ? '@here ' : ''}**${m.title}**\n${m.text}` });
      case 'slack':
        return post(str(s.slack_webhook_url), { text: `*${m.title}*\n${m.text}` });
      case 'telegram': {
        const thread = str(s[`telegram_notifications_${m.event}_thread_id`]);
        const url = `${deps.telegramApiUrl.replace(/\/$/, '')}/bot${str(s.telegram_token)}/sendMessage`;
        return post(url, { chat_id: str(s.telegram_chat_id), text: `${m.title}\n${m.text}`, ...(thread ? { message_thread_id: thread } : {}) });
      }
      case 'pushover':
        return post(`${deps.pushoverApiUrl.replace(/\/$/, '')}/1/messages.json`, { token: str(s.pushover_api_token), user: str(s.pushover_user_key), title: m.title, message: m.text }, true);
      case 'webhook':
        return post(str(s.webhook_url), { event: m.event, title: m.title, message: m.text, ...m.data });
    }
  };
}
