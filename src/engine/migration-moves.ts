import { volumeName } from '../core/model/volumes.js';
import type { MigrationJobContext, MigrationProgress, MovedVolumes } from '../core/runtime.js';
import type { EngineClient } from './engine-client.js';
import { NotFoundError } from './engine-errors.js';
import { loadEngineModules } from './engine-modules.js';
import { LABEL_MANAGED } from './plan.js';
import { migrationRows, type RuntimeParts } from './runtime-rows.js';

/** Rounds of differences while the resource runs (after the full copy), at most. */
const MAX_PRECOPY_ROUNDS = 6;
/**
 * The resource is stopped once the last round's difference would take at most this long to send
 * at the full copy's rate (the last pass is bounded by time, not size), or stops shrinking.
 */
const FINAL_SEND_BUDGET_MS = 150;
/** Progress is saved (and heard by listeners) at most this often while bytes flow. */
const PROGRESS_EVERY_MS = 250;

/** Marks staging volumes with their migration, so only those are ever discarded. */
export const LABEL_MIGRATION = 'berth.migration';

/** A migration's rows and the engines of the servers it moves between. */
async function migrationEngines(parts: RuntimeParts, migrationId: number) {
  const { m, r, from, to } = await migrationRows(parts.db, migrationId);
  return { m, r, from: await parts.engineFor(from), to: await parts.engineFor(to) };
}

/**
 * Live migration of a resource's volumes (volume-sync.ts): a full copy of each into a staging
 * volume on the target while the resource runs, then rounds over all volumes that send only what
 * changed, until the difference is small or stops shrinking (bounded); then the resource is
 * stopped, the last difference sent and every volume verified. A staging volume left by a cut-off
 * attempt (berth killed, say) is discarded first. Sources are only read.
 */
export async function moveVolumes(parts: RuntimeParts, migrationId: number, ctx: MigrationJobContext): Promise<MovedVolumes> {
  const { m, r, from, to } = await migrationEngines(parts, migrationId);
  const storages = await parts.db.selectFrom('storages').selectAll().where('resource_id', '=', r.id).orderBy('id').execute();
  const { sync } = await loadEngineModules();
  // Helpers of a cut-off attempt still mount its volumes, which the engine then refuses to remove.
  await Promise.all([removeHelpers(from, m.uuid, ctx.signal), removeHelpers(to, m.uuid, ctx.signal)]);
  const state: MigrationProgress = { phase: 'pre-copy', round: 0, volumes_total: storages.length, volumes_done: 0, bytes: 0, bytes_total: 0 };
  const report = (patch: Partial<MigrationProgress>) => {
    Object.assign(state, patch);
    return ctx.progress({ ...state });
  };
  const volumes = storages.map((s) => ({ storage: s, staging: `${volumeName(r.uuid, s.name)}-${m.uuid.slice(0, 8)}` }));
  const syncs: import('./volume-sync.js').VolumeSync[] = [];
  let released: Promise<void> | undefined;
  const release = () => (released ??= Promise.all(syncs.map((s) => s.close())).then(() => undefined));
  let moved = false;
  try {
    for (const v of volumes) {
      await to.removeVolume(v.staging, { force: true, signal: ctx.signal }).catch((err) => {
        if (!(err instanceof NotFoundError)) throw err;
      });
      syncs.push(
        await sync.VolumeSync.open({
          from: { engine: from, volume: v.storage.engine_volume ?? volumeName(r.uuid, v.storage.name) },
          to: { engine: to, volume: v.staging, labels: { [LABEL_MANAGED]: 'true', [LABEL_MIGRATION]: m.uuid } },
          helperImage: parts.helperImage,
          helperLabels: { [LABEL_MIGRATION]: m.uuid },
          signal: ctx.signal,
        }),
      );
    }
    // Bytes as they flow: saved at most every PROGRESS_EVERY_MS (each save is a store write).
    let lastReport = 0;
    const flowing = (patch: Partial<MigrationProgress>) => {
      const now = Date.now();
      if (now - lastReport < PROGRESS_EVERY_MS) {
        Object.assign(state, patch);
        return;
      }
      lastReport = now;
      void report(patch).catch(() => undefined);
    };
    // The total a progress bar needs, before any byte moves.
    await report({ bytes_expected: (await Promise.all(syncs.map((s) => s.measure()))).reduce((a, b) => a + b, 0) });
    /** One round over every volume; resolves the file bytes it sent. */
    const roundAll = async (phase: MigrationProgress['phase']) => {
      const sourceInUse = phase === 'pre-copy';
      const base = state.bytes;
      const moved = new Array<number>(syncs.length).fill(0);
      const results = await Promise.all(
        syncs.map((s, i) =>
          s.round(
            (p) => {
              if (p.expectedBytes !== undefined) state.bytes_expected = (state.bytes_expected ?? 0) + p.expectedBytes;
              moved[i] = p.transferredBytes;
              flowing({ bytes: base + moved.reduce((a, b) => a + b, 0), current_volume: volumes[i]!.storage.name });
            },
            { sourceInUse },
          ),
        ),
      );
      await report({ phase, round: results[0]?.round ?? state.round, bytes: base + results.reduce((a, x) => a + x.transferredBytes, 0), bytes_total: results.reduce((a, x) => a + x.totalBytes, 0) });
      return results.reduce((a, x) => a + x.transferredBytes, 0);
    };
    // The full copy, one volume at a time (each is one stream through berth); its rate predicts
    // how long a difference takes to send.
    const copyStart = Date.now();
    let copied = 0;
    for (const [i, s] of syncs.entries()) {
      await report({ round: 1, current_volume: volumes[i]!.storage.name });
      const before = state.bytes;
      const res = await s.round((p) => void flowing({ bytes: before + p.transferredBytes }), { sourceInUse: true });
      copied += res.transferredBytes;
      await report({ bytes: before + res.transferredBytes, bytes_total: state.bytes_total + res.totalBytes });
    }
    const bytesPerMs = Math.max(copied / Math.max(Date.now() - copyStart, 1), 1);
    // Rounds of differences while the resource runs, until the next one would fit the budget
    // after the stop, or they no longer shrink.
    let previous = Infinity;
    for (let round = 2; round <= MAX_PRECOPY_ROUNDS; round++) {
      await report({ round });
      const sent = await roundAll('pre-copy');
      if (sent / bytesPerMs <= FINAL_SEND_BUDGET_MS || sent > previous * 0.8) break;
      previous = sent;
    }
    // Still running: note where both sides differ now, so the last pass checks only the change.
    await Promise.all(syncs.map((s) => s.prepareFinal()));
    // The last pass's execs start now and wait: starting one is 0.3–0.7 s of podman and runc.
    await Promise.all(syncs.map((s) => s.armFinal()));
    await ctx.stopSource();
    await report({ phase: 'final-sync', round: state.round + 1 });
    // One signal, one upload per volume (the execs already run), all volumes at once.
    const base = state.bytes;
    let verifying: Promise<void> | undefined;
    const done = await Promise.all(
      syncs.map((s) =>
        s.finalPass({
          checksums: parts.checksums,
          onUploaded: () => void (verifying ??= report({ phase: 'verify' })),
        }),
      ),
    );
    await verifying;
    await report({ volumes_done: syncs.length, bytes: base + done.reduce((a, x) => a + x.transferredBytes, 0), bytes_total: done.reduce((a, v) => a + v.bytes, 0), current_volume: undefined });
    moved = true;
    return { staged: new Map(volumes.map((v) => [v.storage.id, v.staging])), release };
  } finally {
    if (!moved) await release();
  }
}

/** Removes the volume-copy helper containers of one migration (only they carry its label). */
export async function removeHelpers(engine: EngineClient, migrationUuid: string, signal?: AbortSignal): Promise<void> {
  const helpers = await engine.listContainers({ all: true, labels: { [LABEL_MIGRATION]: migrationUuid }, signal });
  for (const c of helpers) await engine.removeContainer(c.Id, { force: true, removeVolumes: false, signal });
}

/** Removes staging volumes a failed migration left on the target (never a source volume). */
export async function discardStaging(parts: RuntimeParts, migrationId: number): Promise<void> {
  const { m, from, to } = await migrationEngines(parts, migrationId);
  await Promise.all([removeHelpers(from, m.uuid), removeHelpers(to, m.uuid)]).catch((err) => parts.logger.warn({ err, migration: m.uuid }, 'could not remove volume-copy helpers'));
  const vols = await to.listVolumes({ labels: { [LABEL_MIGRATION]: m.uuid } });
  for (const v of vols) await to.removeVolume(v.Name, { force: true }).catch((err) => parts.logger.warn({ err, volume: v.Name }, 'could not discard a staging volume'));
}

/** Removes the volume-copy helpers one migration left on a server's engine. */
export async function removeMigrationHelpers(parts: RuntimeParts, serverId: number, migrationUuid: string): Promise<void> {
  const engine = await parts.liveEngineOf(serverId);
  if (engine) await removeHelpers(engine, migrationUuid, AbortSignal.timeout(120_000));
}
