import type { Logger } from 'pino';
import { Periodic } from '../periodic.js';
import { nowIso, type Db } from '../../store/db.js';
import { CHANNELS, teamChannels, wants, type Channel, type ChannelSettings, type NotificationEvent } from '../../core/model/notification-channels.js';
import type { NotificationMessage } from './senders.js';

const MAX_ATTEMPTS = 8;
const MAX_BACKOFF_MS = 15 * 60_000;

/**
 * Queues a message on every channel of the team that wants this event, once per subject
 * (`dedupeKey`): a job that finishes twice after a crash does not notify twice. Never throws:
 * a notification must not fail the work it reports on.
 */
export async function notify(db: Db, logger: Logger, teamId: number, dedupeKey: string, m: NotificationMessage): Promise<void> {
  try {
    const channels = await teamChannels(db, teamId);
    for (const channel of CHANNELS) {
      if (!wants(channel, channels[channel], m.event)) continue;
      await db
        .insertInto('notifications')
        .values({
          team_id: teamId,
          channel,
          event: m.event,
          dedupe_key: `${dedupeKey}:${channel}`,
          title: m.title,
          body: m.text,
          data: JSON.stringify(m.data),
          status: 'pending',
          attempts: 0,
          last_error: null,
          next_attempt_at: null,
          created_at: nowIso(),
          sent_at: null,
        })
        .onConflict((oc) => oc.column('dedupe_key').doNothing())
        .execute();
    }
  } catch (err) {
    logger.warn({ err: (err as Error).message, event: m.event }, 'notification not queued');
  }
}

export type Send = (channel: Channel, s: ChannelSettings, m: NotificationMessage) => Promise<void>;

/**
 * Delivers queued notifications: each row claimed with a conditional update (two instances never
 * both send it), sent with the channel's settings as they are now, retried with backoff, and
 * given up after MAX_ATTEMPTS. A send cut off by a crash is left "unknown", never sent twice.
 */
export class Notifier extends Periodic {
  constructor(
    private readonly db: Db,
    private readonly send: Send,
    logger: Logger,
    intervalMs: number,
  ) {
    super(logger, intervalMs, 'notification delivery');
  }

  async start(): Promise<void> {
    await this.db.updateTable('notifications').set({ status: 'unknown' }).where('status', '=', 'sending').execute();
    this.schedule();
  }

  async tick(): Promise<void> {
    const queued = await this.db
      .selectFrom('notifications')
      .selectAll()
      .where('status', '=', 'pending')
      .where((eb) => eb.or([eb('next_attempt_at', 'is', null), eb('next_attempt_at', '<=', nowIso())]))
      .orderBy('id')
      .limit(100)
      .execute();
    const settings = new Map<number, Record<Channel, ChannelSettings>>();
    for (const n of queued) {
      const claim = await this.db
        .updateTable('notifications')
        .set({ status: 'sending', attempts: n.attempts + 1 })
        .where('id', '=', n.id)
        .where('status', '=', 'pending')
        .executeTakeFirst();
      if (claim.numUpdatedRows === 0n) continue;
      if (!settings.has(n.team_id)) settings.set(n.team_id, await teamChannels(this.db, n.team_id));
      const channel = n.channel as Channel;
      const s = settings.get(n.team_id)![channel];
      const message: NotificationMessage = { event: n.event as NotificationEvent, title: n.title, text: n.body, data: JSON.parse(n.data) as NotificationMessage['data'] };
      try {
        if (!wants(channel, s, message.event)) throw new GiveUp('the channel or this event was switched off before it was sent');
        await this.send(channel, s, message);
        await this.db.updateTable('notifications').set({ status: 'sent', sent_at: nowIso(), last_error: null }).where('id', '=', n.id).execute();
      } catch (err) {
        const reason = (err as Error).message;
        const last = err instanceof GiveUp || n.attempts + 1 >= MAX_ATTEMPTS;
        const wait = Math.min(MAX_BACKOFF_MS, this.intervalMs * 2 ** n.attempts);
        await this.db
          .updateTable('notifications')
          .set({ status: last ? 'failed' : 'pending', last_error: reason, next_attempt_at: last ? null : new Date(Date.now() + wait).toISOString() })
          .where('id', '=', n.id)
          .execute();
        this.logger.warn({ notificationId: n.id, channel, err: reason }, last ? 'notification given up' : 'notification not sent; will retry');
      }
    }
  }
}

class GiveUp extends Error {}
