import { z } from 'zod';
import { CHANNEL_SPECS, CHANNELS, EVENTS, eventField, teamChannels, type Channel, type ChannelSettings, type FieldKind } from '../model/notification-channels.js';
import { TargetGuard } from '../outbound-guard.js';
import { nowIso } from '../../store/db.js';
import { validationError, type ValidationErrors } from '../../errors.js';
import { defineOperation } from '../operation.js';
import { sensitive } from '../redact.js';
import { READ, UPDATE } from './common.js';

const TITLES: Record<Channel, string> = { email: 'e-mail', discord: 'Discord', slack: 'Slack', telegram: 'Telegram', pushover: 'Pushover', webhook: 'webhook' };

const text = z.string().max(255).nullable();
const INPUT: Record<FieldKind, z.ZodType> = {
  bool: z.boolean(),
  text,
  port: z.number().int().min(1).max(65535).nullable(),
  seconds: z.number().int().min(0).max(3600).nullable(),
  email: text,
  url: z.string().max(2048).nullable(),
  encryption: z.enum(['starttls', 'tls', 'none']).nullable(),
};
const OUTPUT: Record<FieldKind, z.ZodType> = {
  bool: z.boolean(),
  text: z.string().nullable(),
  port: z.number().int().nullable(),
  seconds: z.number().int().nullable(),
  email: z.string().nullable(),
  url: z.string().nullable(),
  encryption: z.string().nullable(),
};

/**
 * The event switches (14 per channel, and Telegram's 14 thread ids) are not listed one by one: a
 * tool's schema stays small for agents, and the names follow one pattern that is checked here.
 */
function buildShapes(channel: Channel) {
  const spec = CHANNEL_SPECS[channel];
  const fields = Object.entries(spec.fields).filter(([k]) => !THREAD.test(k));
  const input: Record<string, z.ZodType> = {};
  const output: Record<string, z.ZodType> = { team_id: z.number().int() };
  for (const [k, kind] of fields) {
    input[k] = (k === 'smtp_recipients' ? z.string().max(1000).nullable() : INPUT[kind]).optional();
    // The output lists the switch and the secrets (redaction works from the schema); the rest
    // are the input's fields, echoed.
    if (k === spec.enabled || spec.secrets.includes(k)) output[k] = spec.secrets.includes(k) ? sensitive(OUTPUT[kind]) : OUTPUT[kind];
  }
  const telegram = channel === 'telegram';
  const events = `Events: <event>_${channel}_notifications (boolean) for ${EVENTS.join(', ')}.${telegram ? ' Thread: telegram_notifications_<event>_thread_id (string).' : ''}`;
  const extra = telegram ? z.union([z.boolean(), z.string().max(255), z.null()]) : z.boolean();
  const switchName = (key: string) => EVENTS.find((e) => eventField(e, channel) === key);
  const threadName = (key: string) => telegram && EVENTS.some((e) => key === `telegram_notifications_${e}_thread_id`);
  const inputSchema = z
    .object(input)
    .catchall(extra)
    .describe(events)
    .superRefine((v, ctx) => {
      for (const k of Object.keys(v)) {
        if (k in input) continue;
        const value = (v as Record<string, unknown>)[k];
        if (switchName(k)) {
          if (typeof value !== 'boolean') ctx.addIssue({ code: 'custom', path: [k], message: 'Must be true or false.' });
        } else if (threadName(k)) {
          if (typeof value === 'boolean') ctx.addIssue({ code: 'custom', path: [k], message: 'Must be a thread id (text) or null.' });
        } else ctx.addIssue({ code: 'custom', path: [k], message: 'This field is not allowed.' });
      }
    });
  const echoed = z.union([z.string(), z.number(), z.boolean(), z.null()]);
  return {
    input: inputSchema,
    output: z
      .object({ ...output, created_at: z.string().nullable(), updated_at: z.string().nullable() })
      .catchall(echoed)
      .describe(`The settings as changed; every input field is echoed. ${events}`),
  };
}

/** A channel's input and output schemas, built when an operation of that channel first needs them. */
function shapes(channel: Channel): { input: () => z.ZodObject; output: () => z.ZodType } {
  let built: ReturnType<typeof buildShapes> | undefined;
  const get = () => (built ??= buildShapes(channel));
  return { input: () => get().input, output: () => get().output };
}

const THREAD = /^telegram_notifications_\w+_thread_id$/;

/** Checks what a schema cannot: where messages may go, and that a switched-on channel can send. */
function check(channel: Channel, patch: ChannelSettings, merged: ChannelSettings, guard: TargetGuard): void {
  const errors: ValidationErrors = {};
  const spec = CHANNEL_SPECS[channel];
  for (const [k, kind] of Object.entries(spec.fields)) {
    const v = patch[k];
    if (typeof v !== 'string' || !v) continue;
    if (kind === 'email' && !z.email().safeParse(v).success) {
      errors[k] = ['Must be an e-mail address.'];
      continue;
    }
    const why = kind === 'url' ? guard.urlRefusal(v) : k === 'smtp_host' ? guard.hostRefusal(v) : null;
    if (why) errors[k] = [why];
  }
  if (patch.resend_enabled === true) errors.resend_enabled = ['berth sends e-mail through SMTP only; Resend is not supported.'];
  if (typeof patch.smtp_recipients === 'string' && patch.smtp_recipients) {
    const bad = patch.smtp_recipients
      .split(',')
      .map((x) => x.trim())
      .filter((x) => !z.email().safeParse(x).success);
    if (bad.length) errors.smtp_recipients = [`Not e-mail addresses: ${bad.join(', ')}.`];
  }
  const on = channel === 'email' ? merged.smtp_enabled === true || merged.use_instance_email_settings === true : merged[spec.enabled] === true;
  if (on) {
    const needed = channel === 'email' && merged.use_instance_email_settings !== true ? [...spec.required, 'smtp_host'] : spec.required;
    for (const k of needed) if (merged[k] === null || merged[k] === '') errors[k] ??= [`Set ${k} to switch ${TITLES[channel]} notifications on.`];
  }
  if (Object.keys(errors).length) throw validationError(errors);
}

function channelOperations(channel: Channel) {
  const { input, output } = shapes(channel);
  const path = `/api/v1/notifications/${channel}`;
  // The shapes are built from the channel's declaration, so the view is typed by the schema.
  const view = (teamId: number, s: ChannelSettings, stamps: { created_at: string; updated_at: string } | undefined) =>
    ({ team_id: teamId, ...s, created_at: stamps?.created_at ?? null, updated_at: stamps?.updated_at ?? null }) as unknown as z.infer<typeof output>;
  const stampsOf = (teamId: number, db: Parameters<typeof teamChannels>[0]) =>
    db.selectFrom('notification_settings').select(['created_at', 'updated_at']).where('team_id', '=', teamId).where('channel', '=', channel).executeTakeFirst();
  return [
    defineOperation({
      name: `get_${channel}_notifications`,
      title: `Get ${TITLES[channel]} notifications`,
      description: `The team's ${TITLES[channel]} notification settings: whether the channel is on, its target, and which events it sends (<event>_${channel}_notifications). Credentials and webhook URLs need read:sensitive.`,
      summary: `The team's ${TITLES[channel]} notification settings (credentials need read:sensitive).`,
      permission: 'read',
      toolset: 'notifications',
      input: () => z.strictObject({}),
      output,
      annotations: READ,
      http: { method: 'GET', path },
      async run({ db, caller }) {
        const s = (await teamChannels(db, caller.teamId))[channel];
        return view(caller.teamId, s, await stampsOf(caller.teamId, db));
      },
    }),
    defineOperation({
      name: `update_${channel}_notifications`,
      title: `Set ${TITLES[channel]} notifications`,
      description: `Change the team's ${TITLES[channel]} notifications: switch the channel on with its target and pick events (deployment_success, deployment_failure, backup_*, scheduled_task_*, server_*). Targets on private or loopback addresses are refused unless the operator allowed them.`,
      summary: `Change the team's ${TITLES[channel]} notification settings: the channel, its target and which events it sends.`,
      permission: 'write',
      toolset: 'notifications',
      input,
      output,
      annotations: UPDATE,
      http: { method: 'PATCH', path },
      async run({ db, caller, config }, patch) {
        const current = (await teamChannels(db, caller.teamId))[channel];
        const merged = { ...current, ...(patch as ChannelSettings) };
        check(channel, patch as ChannelSettings, merged, new TargetGuard(config.outboundAllowedTargets));
        const now = nowIso();
        await db
          .insertInto('notification_settings')
          .values({ team_id: caller.teamId, channel, settings: JSON.stringify(merged), created_at: now, updated_at: now })
          .onConflict((oc) => oc.columns(['team_id', 'channel']).doUpdateSet({ settings: JSON.stringify(merged), updated_at: now }))
          .execute();
        return view(caller.teamId, merged, await stampsOf(caller.teamId, db));
      },
    }),
  ];
}

export const notificationOperations = CHANNELS.flatMap(channelOperations);
