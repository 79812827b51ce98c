import { volumeName } from '../core/model/volumes.js';
import type { DatabaseConfig } from '../core/model/database.js';
import { type BackupOutcome, recordOnlyRuntime } from '../core/runtime.js';
import { BACKUP_DIR, backupVolumeName, dumpPlan, lastLines, restorePlan, safeBackupFile, SIZE_MARKER, sizedOutput } from './backup-plan.js';
import type { EngineClient } from './engine-client.js';
import { NotFoundError } from './engine-errors.js';
import { loadEngineModules } from './engine-modules.js';
import { LABEL_MANAGED } from './plan.js';
import { backupRows, type RuntimeParts } from './runtime-rows.js';
import { LABEL_BACKUP_OF } from './standalone/names.js';

/**
 * Database backups and restores, and volume backups: each is a helper container on the resource's
 * engine with the resource's backup volume at /backups.
 */

/**
 * Runs a script in a helper container made from the database's image, with the database's
 * backup volume at /backups. With `shareNetwork`, the helper joins the running database
 * container's network namespace (NetworkMode container:<id>) and reaches it on 127.0.0.1;
 * otherwise it has no network. The helper is removed whatever happens.
 */
async function runHelper(
  engine: EngineClient,
  r: { uuid: string },
  image: string,
  o: { name: string; env: string[]; script: string; shareNetwork: boolean; signal: AbortSignal; mounts?: { volume: string; target: string; readOnly?: boolean }[] },
): Promise<{ exitCode: number; logs: string }> {
  let networkMode = 'none';
  if (o.shareNetwork) {
    let running = false;
    let id = '';
    try {
      const info = await engine.inspectContainer(r.uuid, { signal: o.signal });
      running = info.State.Running;
      id = info.Id;
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
    if (!running) throw new Error('The database is not running on its server: start it first.');
    networkMode = `container:${id}`;
  }
  await engine.removeContainer(o.name, { force: true }).catch(() => undefined);
  await engine.createContainer(
    o.name,
    {
      image,
      entrypoint: ['sh', '-c'],
      cmd: [o.script],
      env: o.env,
      user: '0',
      networkMode,
      volumes: [...(o.mounts ?? []), { volume: backupVolumeName(r.uuid), target: BACKUP_DIR }],
      labels: { [LABEL_MANAGED]: 'true', [LABEL_BACKUP_OF]: r.uuid },
    },
    { signal: o.signal },
  );
  try {
    await engine.startContainer(o.name, { signal: o.signal });
    const w = await engine.waitContainer(o.name, { signal: o.signal });
    const { entries } = await engine.containerLogs(o.name, { tail: 'all', tty: false, maxBytes: 256 * 1024 });
    return { exitCode: w.StatusCode, logs: entries.map((e) => e.line).join('\n') };
  } finally {
    await engine.removeContainer(o.name, { force: true }).catch(() => undefined);
  }
}

/** Dumps a running database into its backup volume (see Runtime.runBackup). */
export async function runBackup(parts: RuntimeParts, executionId: number, signal: AbortSignal): Promise<BackupOutcome> {
  const { e, b, r, c, kind } = await backupRows(parts.db, executionId);
  const engine = await parts.liveEngineOfResource(r.id);
  if (!engine) return recordOnlyRuntime.runBackup(executionId, signal);
  const plan = dumpPlan(kind, c.fields, { dumpAll: b.dump_all === 1, databases: b.databases_to_backup, at: new Date(e.created_at) });
  const out = await runHelper(engine, r, c.image, { name: `${r.uuid}-backup-${e.uuid}`, env: plan.env, script: plan.script, shareNetwork: true, signal });
  const { size, logs } = sizedOutput(out.logs);
  if (out.exitCode !== 0 || !size) {
    const err = new Error(`The backup failed (exit code ${out.exitCode}): ${lastLines(logs)}`);
    (err as Error & { logs?: string }).logs = logs;
    throw err;
  }
  return { filename: plan.filename, size, databaseName: plan.databaseName, logs };
}

/** Loads an execution's file back into the running database. */
export async function restoreBackup(parts: RuntimeParts, executionId: number, signal: AbortSignal): Promise<{ logs: string }> {
  const { e, r, c, kind } = await backupRows(parts.db, executionId);
  const engine = await parts.liveEngineOfResource(r.id);
  if (!engine) return recordOnlyRuntime.restoreBackup(executionId, signal);
  if (!e.filename || !safeBackupFile(e.filename)) throw new Error('The execution has no backup file.');
  const plan = restorePlan(kind, c.fields, e.filename);
  const script = `[ -s ${BACKUP_DIR}/${e.filename} ] || { echo "the backup file is gone from the backup volume" >&2; exit 4; }\n${plan.script}`;
  const out = await runHelper(engine, r, c.image, { name: `${r.uuid}-restore-${e.uuid}`, env: plan.env, script, shareNetwork: true, signal });
  if (out.exitCode !== 0) {
    const err = new Error(`The restore failed (exit code ${out.exitCode}): ${out.logs.split('\n').filter(Boolean).slice(-3).join(' / ') || 'no output'}`);
    (err as Error & { logs?: string }).logs = out.logs;
    throw err;
  }
  return { logs: out.logs };
}

/** Removes backup files of a resource from its backup volume (missing files are fine). */
export async function removeBackupFiles(parts: RuntimeParts, resourceId: number, filenames: string[]): Promise<void> {
  const files = filenames.filter(safeBackupFile);
  if (!files.length) return;
  const engine = await parts.liveEngineOfResource(resourceId);
  if (!engine) return;
  const r = await parts.db.selectFrom('resources').select(['uuid', 'config']).where('id', '=', resourceId).executeTakeFirstOrThrow();
  // A database's own image (its backups), else the helper image (an application's or service's volume backups).
  const c = JSON.parse(r.config) as Partial<DatabaseConfig>;
  const script = `cd ${BACKUP_DIR} && rm -f -- ${files.map((f) => `'${f}'`).join(' ')}`;
  const out = await runHelper(engine, r, c.image ?? parts.helperImage, {
    name: `${r.uuid}-backup-prune-${Date.now()}`,
    env: [],
    script,
    shareNetwork: false,
    signal: AbortSignal.timeout(120_000),
  });
  if (out.exitCode !== 0) throw new Error(`Removing backup files failed: ${out.logs}`);
}

/**
 * A storage's volume, read-only, archived by a helper container (BERTH_HELPER_IMAGE, no network)
 * into the resource's backup volume. A partial archive is removed; an empty volume still gives
 * a valid (small) archive.
 */
export async function runVolumeBackup(parts: RuntimeParts, storageId: number, at: Date, signal: AbortSignal): Promise<{ filename: string; size: number; logs: string }> {
  const s = await parts.db
    .selectFrom('storages as st')
    .innerJoin('resources as r', 'r.id', 'st.resource_id')
    .select(['st.name', 'st.engine_volume', 'r.id as resource_id', 'r.uuid'])
    .where('st.id', '=', storageId)
    .executeTakeFirstOrThrow();
  const engine = await parts.liveEngineOfResource(s.resource_id);
  if (!engine) return recordOnlyRuntime.runVolumeBackup(storageId, at, signal);
  const volume = s.engine_volume ?? volumeName(s.uuid, s.name);
  const slug = s.name.replace(/[^A-Za-z0-9_.-]/g, '-');
  const filename = `volume-${slug}-${at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}.tar.gz`;
  const { ensureImage } = (await loadEngineModules()).engine;
  await ensureImage(engine, parts.helperImage, { signal });
  const file = `${BACKUP_DIR}/${filename}`;
  const script = `tar -czf "${file}" -C /source . || { rm -f "${file}"; exit 1; }; echo "${SIZE_MARKER}$(wc -c < "${file}")"`;
  const out = await runHelper(engine, s, parts.helperImage, {
    name: `${s.uuid}-volume-backup-${Date.now().toString(36)}`,
    env: [],
    script,
    shareNetwork: false,
    signal,
    mounts: [{ volume, target: '/source', readOnly: true }],
  });
  const { size, logs } = sizedOutput(out.logs);
  if (out.exitCode !== 0 || size === null) throw Object.assign(new Error(`The volume backup failed (exit code ${out.exitCode}): ${lastLines(logs)}`), { logs });
  return { filename, size, logs };
}
