import { sql, type SqlBool } from 'kysely';
import type { Logger } from 'pino';
import { BerthError } from '../errors.js';
import { OutageLog } from '../logging/outage.js';
import { atomically } from '../store/atomic.js';
import { nowIso, type Db } from '../store/db.js';

export interface ServerQueueSettings {
  /** Jobs running at once per server. */
  concurrency: number;
  /** Jobs allowed to wait per server; one more is refused with 429. */
  cap: number;
  /** How often this instance asks the store for a free slot for what waits here. */
  pollMs: number;
}

export type QueuedKind = 'deployment' | 'migration';

interface Waiting {
  kind: QueuedKind;
  id: number;
  serverId: number;
  run: () => Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Seconds suggested to a caller refused by a full queue when no job duration is known yet. */
const DEFAULT_RETRY_AFTER_S = 5;

/**
 * The per-server queues for long work (deployments, migrations), counted in the store where the
 * jobs already are: a job holds one of its server's `concurrency` slots exactly while its row
 * says it runs (a deployment `in_progress`, a migration `copying`). So a slot is never kept by a
 * process that died (its running rows are failed by the sweep once their lease runs out, and
 * its waiting ones are taken over), and nothing is lost when Redis restarts empty or evicts keys:
 * the queue has no state outside the rows. Starting a job is one serializable transaction (count
 * the server's running jobs and the older waiting ones whose owner is alive, then mark it
 * running), so instances sharing the store never run more than `concurrency` per server, and
 * waiting jobs start in the order they were queued. Jobs waiting here ask again when a job of
 * theirs ends and every `pollMs` (a slot freed on another instance).
 */
export class ServerQueues {
  private readonly waiting: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly pumping = new Map<number, Promise<void>>();
  private readonly again = new Set<number>();
  /** Jobs running in this process, until they end (see idle). */
  private readonly runs = new Set<Promise<void>>();
  /** Moving average of job durations, for Retry-After. */
  private avgJobMs = 0;
  private readonly outage: OutageLog;

  constructor(
    private readonly db: Db,
    private readonly settings: ServerQueueSettings,
    private readonly owner: string,
    private readonly leaseEnd: () => number,
    logger: Logger,
  ) {
    this.outage = new OutageLog(logger, 'job queues', 'error');
  }

  /** Ids of the jobs waiting in this process (their leases are renewed with the running ones). */
  waitingIds(kind: QueuedKind): number[] {
    return this.waiting.filter((w) => w.kind === kind).map((w) => w.id);
  }

  /**
   * Refuses with 429 "Deployment queue is full." when the server already has concurrency + cap
   * jobs running or waiting besides this one (whichever instance holds them).
   */
  async checkRoom(kind: QueuedKind, id: number, serverId: number): Promise<void> {
    const { deployments, migrations } = await atomically(this.db, async (trx) => {
      const d = await trx
        .selectFrom('deployments')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('server_id', '=', serverId)
        .where('status', 'in', ['queued', 'in_progress'])
        .$if(kind === 'deployment', (q) => q.where('id', '<>', id))
        .executeTakeFirstOrThrow();
      const m = await trx
        .selectFrom('migrations_jobs as m')
        .innerJoin('destinations as t', 't.id', 'm.to_destination_id')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('t.server_id', '=', serverId)
        .where('m.status', 'in', ['pending', 'copying'])
        .$if(kind === 'migration', (q) => q.where('m.id', '<>', id))
        .executeTakeFirstOrThrow();
      return { deployments: Number(d.n), migrations: Number(m.n) };
    });
    if (deployments + migrations >= this.settings.concurrency + this.settings.cap) throw this.full();
  }

  /** Waits here for a slot of the server, then runs the job (its row marked running by then). */
  submit(kind: QueuedKind, id: number, serverId: number, run: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ kind, id, serverId, run, resolve, reject });
      this.pump(serverId);
    });
  }

  start(): void {
    this.timer ??= setInterval(() => {
      for (const serverId of new Set(this.waiting.map((w) => w.serverId))) this.pump(serverId);
    }, this.settings.pollMs);
    this.timer.unref();
  }

  /** Stops asking; what waits here settles now (its rows are handed back by the job runner). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    for (const w of this.waiting.splice(0)) w.resolve();
  }

  /**
   * Settles when nothing runs in this process any more: the passes under way (one may still
   * start a job it found room for) and the jobs they started. After stop(), nothing new starts.
   */
  async idle(): Promise<void> {
    while (this.pumping.size > 0 || this.runs.size > 0) await Promise.allSettled([...this.pumping.values(), ...this.runs]);
  }

  /** Starts what may start on a server, oldest first; one pass at a time per server. */
  private pump(serverId: number): void {
    if (this.pumping.has(serverId)) {
      this.again.add(serverId);
      return;
    }
    const pass = this.pass(serverId)
      .then(
        () => this.outage.ok(),
        (err) => this.outage.failed(err),
      )
      .finally(() => {
        this.pumping.delete(serverId);
        if (this.again.delete(serverId)) this.pump(serverId);
      });
    this.pumping.set(serverId, pass);
  }

  private async pass(serverId: number): Promise<void> {
    for (const w of this.waiting.filter((x) => x.serverId === serverId)) {
      const outcome = await this.tryStart(w);
      if (outcome === 'wait') return;
      // Not there when stop() settled it meanwhile: a job marked running is still run here.
      const at = this.waiting.indexOf(w);
      if (at >= 0) this.waiting.splice(at, 1);
      if (outcome === 'gone') {
        // Cancelled while it waited, or taken over by another instance: nothing to run here.
        w.resolve();
        continue;
      }
      const started = Date.now();
      const run = w
        .run()
        .then(w.resolve, w.reject)
        .finally(() => {
          this.runs.delete(run);
          const ms = Date.now() - started;
          this.avgJobMs = this.avgJobMs === 0 ? ms : this.avgJobMs * 0.8 + ms * 0.2;
          this.pump(serverId);
        });
      this.runs.add(run);
    }
  }

  /**
   * Marks the job running when its server has a free slot not owed to an older waiting job;
   * 'gone' when its row no longer waits here (cancelled, or another instance's now).
   */
  private tryStart(w: Waiting): Promise<'started' | 'wait' | 'gone'> {
    const now = Date.now();
    const live = (col: string) => sql<SqlBool>`${sql.ref(col)} >= ${now}`;
    return atomically(this.db, async (trx) => {
      const running = await trx
        .selectFrom('deployments')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('server_id', '=', w.serverId)
        .where('status', '=', 'in_progress')
        .executeTakeFirstOrThrow();
      const copying = await trx
        .selectFrom('migrations_jobs as m')
        .innerJoin('destinations as t', 't.id', 'm.to_destination_id')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('t.server_id', '=', w.serverId)
        .where('m.status', '=', 'copying')
        .executeTakeFirstOrThrow();
      // Older jobs of the same kind waiting on a live instance go first (a dead one's wait for
      // the sweep, which queues them again on a living instance).
      const older =
        w.kind === 'deployment'
          ? await trx
              .selectFrom('deployments')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('server_id', '=', w.serverId)
              .where('status', '=', 'queued')
              .where('id', '<', w.id)
              .where(live('lease_until'))
              .executeTakeFirstOrThrow()
          : await trx
              .selectFrom('migrations_jobs as m')
              .innerJoin('destinations as t', 't.id', 'm.to_destination_id')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('t.server_id', '=', w.serverId)
              .where('m.status', '=', 'pending')
              .where('m.id', '<', w.id)
              .where(live('m.lease_until'))
              .executeTakeFirstOrThrow();
      const mine =
        w.kind === 'deployment'
          ? await trx.selectFrom('deployments').select(['status', 'lease_owner']).where('id', '=', w.id).executeTakeFirst()
          : await trx.selectFrom('migrations_jobs').select(['status', 'lease_owner']).where('id', '=', w.id).executeTakeFirst();
      const waits = w.kind === 'deployment' ? 'queued' : 'pending';
      if (mine?.status !== waits || mine.lease_owner !== this.owner) return 'gone';
      if (Number(running.n) + Number(copying.n) + Number(older.n) >= this.settings.concurrency) return 'wait';
      if (w.kind === 'deployment') {
        await trx.updateTable('deployments').set({ status: 'in_progress', lease_until: this.leaseEnd(), started_at: nowIso(), updated_at: nowIso() }).where('id', '=', w.id).execute();
      } else {
        await trx.updateTable('migrations_jobs').set({ status: 'copying', lease_until: this.leaseEnd(), updated_at: nowIso() }).where('id', '=', w.id).execute();
      }
      return 'started';
    });
  }

  private full(): BerthError {
    const { cap, concurrency } = this.settings;
    const seconds = this.avgJobMs > 0 ? Math.ceil((this.avgJobMs * Math.max(1, cap)) / concurrency / 1000) : DEFAULT_RETRY_AFTER_S;
    return new BerthError('queue_full', { retryAfter: Math.max(1, seconds) });
  }
}
