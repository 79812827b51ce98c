import { sql } from 'kysely';
import type { Logger } from 'pino';
import { Periodic } from './periodic.js';
import { nowIso, type Db } from '../store/db.js';
import type { Mailer } from '../mail/mailer.js';

const WARN_BEFORE_MS = 24 * 3_600_000;
/** Enough attempts, with the backoff below capped at an hour, to outlast a day-long SMTP outage. */
const MAX_ATTEMPTS = 40;
const MAX_BACKOFF_MS = 3_600_000;

/**
 * Warns a token's owner by e-mail 24 hours before the token expires, once per token.
 *
 * Each warning goes through the outbox table: queued once (unique dedupe key), claimed with a
 * conditional update before sending (so two berth processes never both send it), and marked sent
 * after. A send cut off by a crash is left "unknown" and not retried: a warning is never sent twice.
 * Without SMTP the message is kept in the outbox and logged.
 */
export class ExpiryWarnings extends Periodic {
  constructor(
    private readonly db: Db,
    private readonly mailer: Mailer | null,
    logger: Logger,
    intervalMs: number,
  ) {
    super(logger, intervalMs, 'expiry warning scan');
  }

  async start(): Promise<void> {
    await this.db.updateTable('outbox').set({ status: 'unknown' }).where('status', '=', 'sending').execute();
    this.schedule();
  }

  async tick(): Promise<void> {
    await this.enqueue();
    if (this.mailer) await this.deliver(this.mailer);
  }

  private async enqueue(): Promise<void> {
    const now = Date.now();
    const due = await this.db
      .selectFrom('api_tokens as t')
      .innerJoin('users as u', 'u.id', 't.user_id')
      .innerJoin('teams as tm', 'tm.id', 't.team_id')
      .select(['t.id', 't.name', 't.expires_at', 'u.email', 'tm.name as team'])
      .where('t.expires_at', 'is not', null)
      .where('t.expires_at', '>', new Date(now).toISOString())
      .where('t.expires_at', '<=', new Date(now + WARN_BEFORE_MS).toISOString())
      // Tokens already queued are skipped rather than re-inserted: even an ignored insert into the
      // outbox commits a write (AUTOINCREMENT), which every scan would repeat for every such token.
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('outbox as o')
              .select('o.id')
              .where('o.dedupe_key', '=', sql<string>`'token-expiry:' || ${sql.ref('t.id')}`),
          ),
        ),
      )
      .execute();
    for (const t of due) {
      const r = await this.db
        .insertInto('outbox')
        .values({
          dedupe_key: `token-expiry:${t.id}`,
          recipient: t.email,
          subject: `Your berth API token "${t.name}" expires within 24 hours`,
          body:
            `The API token "${t.name}" (id ${t.id}) of team "${t.team}" expires at ${t.expires_at}.\n` +
            `Create a new token before then and replace it wherever this one is used; requests with it will fail after it expires.\n`,
          status: this.mailer ? 'pending' : 'kept',
          attempts: 0,
          last_error: null,
          next_attempt_at: null,
          created_at: nowIso(),
          sent_at: null,
        })
        .onConflict((oc) => oc.column('dedupe_key').doNothing())
        .executeTakeFirst();
      if (r.numInsertedOrUpdatedRows && !this.mailer) {
        this.logger.warn({ tokenId: t.id, to: t.email, expiresAt: t.expires_at }, 'token expires within 24 hours; no SMTP_URL, warning kept in outbox');
      }
    }
  }

  private async deliver(mailer: Mailer): Promise<void> {
    const queued = await this.db
      .selectFrom('outbox')
      .selectAll()
      .where('status', 'in', ['pending', 'kept'])
      .where('attempts', '<', MAX_ATTEMPTS)
      .where((eb) => eb.or([eb('next_attempt_at', 'is', null), eb('next_attempt_at', '<=', nowIso())]))
      .orderBy('id')
      .execute();
    for (const m of queued) {
      const claim = await this.db
        .updateTable('outbox')
        .set({ status: 'sending', attempts: m.attempts + 1 })
        .where('id', '=', m.id)
        .where('status', '=', m.status)
        .executeTakeFirst();
      if (claim.numUpdatedRows === 0n) continue;
      try {
        await mailer.send({ to: m.recipient, subject: m.subject, text: m.body });
        await this.db.updateTable('outbox').set({ status: 'sent', sent_at: nowIso(), last_error: null }).where('id', '=', m.id).execute();
        this.logger.info({ outboxId: m.id, to: m.recipient }, 'expiry warning sent');
      } catch (err) {
        const message = (err as Error).message;
        // Exponential backoff from the scan interval, so an outage is not hammered every scan.
        const wait = Math.min(MAX_BACKOFF_MS, this.intervalMs * 2 ** m.attempts);
        await this.db
          .updateTable('outbox')
          .set({ status: 'pending', last_error: message, next_attempt_at: new Date(Date.now() + wait).toISOString() })
          .where('id', '=', m.id)
          .execute();
        this.logger.warn({ outboxId: m.id, err: message }, 'expiry warning not sent; will retry');
      }
    }
  }
}
