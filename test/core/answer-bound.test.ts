/**
 * The answer bound (src/core/answer-bound.ts): a wait ends at the call's bound (the instance's
 * setting, or the call's own; Infinity waits to the end) and leaves the work running; a caller that
 * hears progress gets a heartbeat while it waits, never more than four a second, progress growing.
 * And the operation table's waiting operations, each named: a new operation that waits on an engine
 * or a job fails here until it is put in one list or the other on purpose.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { AnswerBound } from '../../src/core/answer-bound.js';
import { operations } from '../../src/core/operations/index.js';

const config = (answerWithinMs: number) => loadConfig({}, { answerWithinMs });
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
type Note = { at: number; progress: number; total?: number; message?: string };
const listener = () => {
  const notes: Note[] = [];
  const t0 = Date.now();
  return { notes, progress: async (p: Omit<Note, 'at'>) => void notes.push({ at: Date.now() - t0, ...p }) };
};

describe('AnswerBound', () => {
  it('answers at the bound with the work still going, and the work ends afterwards untouched', async () => {
    let finished = false;
    const work = sleep(900).then(() => (finished = true));
    const b = new AnswerBound({ config: config(300) });
    const t0 = Date.now();
    expect(await b.wait(work)).toEqual({ ended: false });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(Date.now() - t0).toBeLessThan(800);
    expect(finished).toBe(false);
    await work;
    expect(finished).toBe(true);
  });

  it("the call's own bound wins over the setting; Infinity waits to the end; one deadline for every wait of a call", async () => {
    const own = new AnswerBound({ config: config(60_000), answerWithinMs: 100 });
    expect(await own.wait(sleep(400))).toEqual({ ended: false });
    const toEnd = new AnswerBound({ config: config(50), answerWithinMs: Infinity });
    expect(toEnd.toEnd).toBe(true);
    expect(await toEnd.wait(sleep(300).then(() => 'done'))).toEqual({ ended: true, value: 'done' });
    const shared = new AnswerBound({ config: config(400) });
    expect(await shared.wait(sleep(250))).toEqual({ ended: true, value: undefined });
    const t0 = Date.now();
    expect(await shared.wait(sleep(1_000))).toEqual({ ended: false });
    expect(Date.now() - t0).toBeLessThan(300);
    // A shorter limit of the wait's own (start's short wait behind a queue) ends it sooner.
    expect(await new AnswerBound({ config: config(5_000) }).wait(sleep(1_000), undefined, 50)).toEqual({ ended: false });
  });

  it('a failure within the bound is thrown; one after the answer is no unhandled rejection', async () => {
    await expect(new AnswerBound({ config: config(500) }).wait(Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const late = sleep(200).then(() => {
      throw new Error('late');
    });
    expect(await new AnswerBound({ config: config(50) }).wait(late)).toEqual({ ended: false });
    await late.catch(() => undefined);
  });

  it('heartbeats while waiting: the phase at once and then every interval, at most four a second, progress growing', async () => {
    const l = listener();
    let phase = 0;
    const b = new AnswerBound({ config: config(1_600), progress: l.progress }, 120);
    await b.wait(sleep(5_000), async () => ({ message: `phase ${++phase}` }));
    b.finish({ message: 'answered' });
    const { notes } = l;
    expect(notes[0]!.at).toBeLessThan(100);
    expect(notes.at(-1)!.message).toBe('answered');
    // 1.6 s with a beat every 120 ms: the throttle's 250 ms gap is what limits them.
    expect(notes.length).toBeGreaterThanOrEqual(5);
    for (let k = 1; k < notes.length; k++) {
      expect(notes[k]!.progress).toBeGreaterThan(notes[k - 1]!.progress);
      // 250 ms apart as the throttle sends them; seen at the listener, a timer's jitter can shave a few ms.
      if (k < notes.length - 1) expect(notes[k]!.at - notes[k - 1]!.at).toBeGreaterThanOrEqual(200);
    }
    // Without a measure of its own, progress counts the seconds waited.
    expect(notes.at(-2)!.progress).toBeGreaterThan(1);
    expect(notes.at(-2)!.progress).toBeLessThan(2);
  });

  it("the heartbeat's interval is the longest silence; the work's own measure is kept and only ever nudged up", async () => {
    const l = listener();
    const b = new AnswerBound({ config: config(1_300), progress: l.progress }, 400);
    b.report({ message: 'copied 1000 bytes', progress: 1000, total: 5000 });
    await b.wait(sleep(5_000), async () => ({ message: 'copying', progress: 1000, total: 5000 }));
    const gaps = l.notes.slice(1).map((n, k) => n.at - l.notes[k]!.at);
    expect(Math.max(...gaps)).toBeLessThan(400 + 150);
    expect(l.notes[0]).toMatchObject({ progress: 1000, total: 5000 });
    for (const n of l.notes.slice(1)) expect(n.progress).toBeGreaterThan(1000), expect(n.progress).toBeLessThan(1001), expect(n.total).toBe(5000);
  });

  it('without a progress listener it makes no look at the work', async () => {
    let looks = 0;
    await new AnswerBound({ config: config(200) }, 10).wait(sleep(500), async () => (looks++, { message: 'x' }));
    expect(looks).toBe(0);
  });
});

/**
 * Every operation whose run reaches an engine or a job, by how it answers. Waiting ones wait
 * through the answer bound; the others answer at once (the work runs in the background, with a row
 * to follow) or make one short engine call bounded by its own time-outs.
 */
const BOUNDED = [
  ...['application', 'database', 'service'].flatMap((k) => [`start_${k}`, `stop_${k}`, `restart_${k}`, `migrate_${k}`, `delete_${k}`]),
  ...['application', 'database'].flatMap((k) => [`start_service_${k}`, `stop_service_${k}`, `restart_service_${k}`]),
  'restore_database_backup_execution',
];
const AT_ONCE = [
  // Queue a deployment (a build too) and answer its uuid: follow it with get_deployment.
  'deploy',
  'rollback_application',
  'create_application',
  'create_service',
  ...['postgresql', 'mysql', 'mariadb', 'redis', 'mongodb', 'clickhouse', 'dragonfly', 'keydb'].map((k) => `create_${k}_database`),
  // Start a background run with its execution row and answer its uuid.
  'run_server_docker_cleanup',
  'execute_application_scheduled_task',
  'execute_service_scheduled_task',
  'run_application_storage_backup',
  'run_database_storage_backup',
  'run_service_storage_backup',
  'create_database_backup',
  'update_database_backup',
  // Reload the server's proxy in the background and answer at once.
  'restart_server_proxy',
  // Flip a job's row.
  'cancel_deployment',
  'cancel_migration',
  // One engine look or removal, bounded by the engine client's and SSH's own time-outs.
  'validate_server',
  // A changed proxy_type reloads the server's proxy config (one engine call).
  'update_server',
  'list_server_orphans',
  'get_application_logs',
  'get_database_logs',
  'get_service_logs',
  'get_service_application_logs',
  'get_service_database_logs',
  'list_application_rollback_images',
  // A placement check (no engine call) before attaching; one removal of the copy from its server.
  'add_application_destination',
  'remove_application_destination',
  // One removal of a pull request's preview (its container, volumes, image) from its server.
  'delete_application_preview',
  'delete_database_backup',
  'delete_database_backup_execution',
];

describe('the operations that wait on an engine or a job', () => {
  const reaches = (src: string) => /\b(runtime|jobs)\b|queueDeployment|waitForDeployment|answerBound|runNow/.test(src);

  it('each is bounded or answers at once, on purpose', () => {
    const found = operations.filter((op) => reaches(op.run.toString())).map((op) => op.name);
    const unlisted = found.filter((n) => !BOUNDED.includes(n) && !AT_ONCE.includes(n));
    expect(unlisted, 'a new operation reaches an engine or a job: bound its wait (src/core/answer-bound.ts) or list why it answers at once').toEqual([]);
    expect(
      [...BOUNDED, ...AT_ONCE].filter((n) => !found.includes(n)),
      'listed but no longer reaching an engine or a job',
    ).toEqual([]);
  });

  it('the bounded ones wait through the answer bound and name what to follow', () => {
    for (const name of BOUNDED) {
      const op = operations.find((o) => o.name === name)!;
      expect(op.run.toString(), name).toMatch(/\banswerBound\b/);
      expect(Object.keys((op.output as unknown as { shape: object }).shape), name).toContain('follow');
    }
  });
});
