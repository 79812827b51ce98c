import type { Db } from '../../store/db.js';

/**
 * Notification channels and events, declared once: the settings fields of each channel (Coolify's
 * names), which of them are secrets, and the events a team can switch on per channel.
 */
export const CHANNELS = ['email', 'discord', 'slack', 'telegram', 'pushover', 'webhook'] as const;
export type Channel = (typeof CHANNELS)[number];

/** Coolify's events. berth emits the deployment, backup, scheduled task and server reachability ones. */
export const EVENTS = [
  'deployment_success',
  'deployment_failure',
  'status_change',
  'backup_success',
  'backup_failure',
  'scheduled_task_success',
  'scheduled_task_failure',
  'docker_cleanup_success',
  'docker_cleanup_failure',
  'server_disk_usage',
  'server_reachable',
  'server_unreachable',
  'server_patch',
  'traefik_outdated',
] as const;
export type NotificationEvent = (typeof EVENTS)[number];

/** Switched on for a new team, as Coolify does: failures and an unreachable server. */
export const DEFAULT_ON: ReadonlySet<NotificationEvent> = new Set(['deployment_failure', 'backup_failure', 'scheduled_task_failure', 'server_unreachable', 'docker_cleanup_failure']);

export type FieldKind = 'bool' | 'text' | 'port' | 'seconds' | 'email' | 'url' | 'encryption';

export interface ChannelSpec {
  /** The field that switches the channel on. */
  enabled: string;
  /** Channel-specific fields (beyond the per-event switches), with their kinds. */
  fields: Record<string, FieldKind>;
  /** Fields holding credentials or URLs with credentials: redacted without read:sensitive. */
  secrets: readonly string[];
  /** What must be set before the channel can be switched on. */
  required: readonly string[];
}

export const CHANNEL_SPECS: Record<Channel, ChannelSpec> = {
  email: {
    enabled: 'smtp_enabled',
    fields: {
      smtp_enabled: 'bool',
      smtp_from_address: 'email',
      smtp_from_name: 'text',
      smtp_recipients: 'text',
      smtp_host: 'text',
      smtp_port: 'port',
      smtp_encryption: 'encryption',
      smtp_username: 'text',
      smtp_password: 'text',
      smtp_timeout: 'seconds',
      smtp_ehlo_domain: 'text',
      resend_enabled: 'bool',
      resend_api_key: 'text',
      use_instance_email_settings: 'bool',
    },
    secrets: ['smtp_password', 'resend_api_key'],
    required: ['smtp_recipients'],
  },
  discord: {
    enabled: 'discord_enabled',
    fields: { discord_enabled: 'bool', discord_webhook_url: 'url', discord_ping_enabled: 'bool' },
    secrets: ['discord_webhook_url'],
    required: ['discord_webhook_url'],
  },
  slack: { enabled: 'slack_enabled', fields: { slack_enabled: 'bool', slack_webhook_url: 'url' }, secrets: ['slack_webhook_url'], required: ['slack_webhook_url'] },
  telegram: {
    enabled: 'telegram_enabled',
    fields: {
      telegram_enabled: 'bool',
      telegram_token: 'text',
      telegram_chat_id: 'text',
      ...Object.fromEntries(EVENTS.map((e) => [`telegram_notifications_${e}_thread_id`, 'text' as const])),
    },
    secrets: ['telegram_token'],
    required: ['telegram_token', 'telegram_chat_id'],
  },
  pushover: {
    enabled: 'pushover_enabled',
    fields: { pushover_enabled: 'bool', pushover_user_key: 'text', pushover_api_token: 'text' },
    secrets: ['pushover_user_key', 'pushover_api_token'],
    required: ['pushover_user_key', 'pushover_api_token'],
  },
  webhook: { enabled: 'webhook_enabled', fields: { webhook_enabled: 'bool', webhook_url: 'url' }, secrets: ['webhook_url'], required: ['webhook_url'] },
};

/** `deployment_failure_discord_notifications`: Coolify's name for one event switch of one channel. */
export const eventField = (event: NotificationEvent, channel: Channel) => `${event}_${channel}_notifications`;

export type ChannelSettings = Record<string, string | number | boolean | null>;

/** A channel's settings before a team changed anything. */
export function channelDefaults(channel: Channel): ChannelSettings {
  const out: ChannelSettings = {};
  for (const [k, kind] of Object.entries(CHANNEL_SPECS[channel].fields)) out[k] = kind === 'bool' ? false : null;
  if (channel === 'email') out.use_instance_email_settings = false;
  for (const e of EVENTS) out[eventField(e, channel)] = DEFAULT_ON.has(e);
  return out;
}

/** Whether a channel with these settings sends this event. */
export function wants(channel: Channel, s: ChannelSettings, event: NotificationEvent): boolean {
  const on = channel === 'email' ? s.smtp_enabled === true || s.use_instance_email_settings === true : s[CHANNEL_SPECS[channel].enabled] === true;
  return on && s[eventField(event, channel)] === true;
}

/** A team's settings of every channel, defaults filled in. */
export async function teamChannels(db: Db, teamId: number): Promise<Record<Channel, ChannelSettings>> {
  const rows = await db.selectFrom('notification_settings').select(['channel', 'settings']).where('team_id', '=', teamId).execute();
  const out = Object.fromEntries(CHANNELS.map((c) => [c, channelDefaults(c)])) as Record<Channel, ChannelSettings>;
  for (const r of rows) Object.assign(out[r.channel as Channel], JSON.parse(r.settings) as ChannelSettings);
  return out;
}
