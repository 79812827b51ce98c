import type { DatabaseKind } from '../core/model/kinds.js';

/**
 * How a database of each kind is dumped and restored by a helper container made from the
 * database's own image (so its tools match the server's version). The helper shares the database
 * container's network namespace (NetworkMode `container:<id>`), so it reaches the database on
 * 127.0.0.1 whatever network the destination uses (podman's `none` included), and writes into the
 * database's backup volume mounted at /backups. Passwords travel in the helper's environment,
 * never on a command line.
 */
export const BACKUP_DIR = '/backups';

/** The engine volume that holds a database's backup files on its server. */
export const backupVolumeName = (resourceUuid: string) => `berth-backups-${resourceUuid}`;

export interface DumpPlan {
  filename: string;
  databaseName: string | null;
  env: string[];
  script: string;
}

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const stamp = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');

/** The size marker the dump script prints last; the runtime reads it and drops it from the logs. */
export const SIZE_MARKER = 'BERTH_BACKUP_SIZE=';

/** A helper's output split into the file size its script printed (null when none) and the rest. */
export function sizedOutput(output: string): { size: number | null; logs: string } {
  const lines = output.split('\n');
  const marker = lines.find((l) => l.startsWith(SIZE_MARKER));
  return { size: marker ? Number(marker.slice(SIZE_MARKER.length)) : null, logs: lines.filter((l) => !l.startsWith(SIZE_MARKER)).join('\n') };
}

/** The last few lines of a tool's output, for an error message. */
export const lastLines = (logs: string) => logs.split('\n').filter(Boolean).slice(-3).join(' / ') || 'no output';

/**
 * The dump of one execution: file name (Coolify's prefixes), environment and shell script. The
 * script removes a partial file on failure, refuses an empty dump, and prints the file's size.
 */
export function dumpPlan(kind: DatabaseKind, f: Record<string, string>, opts: { dumpAll: boolean; databases: string | null; at: Date }): DumpPlan {
  const t = stamp(opts.at);
  let filename: string;
  let databaseName: string | null = null;
  let env: string[] = [];
  let cmd: string;
  switch (kind) {
    case 'postgresql': {
      env = [`PGPASSWORD=${f.postgres_password}`, `PGUSER=${f.postgres_user}`];
      if (opts.dumpAll) {
        filename = `pg-dump-all-${t}.sql`;
        cmd = `pg_dumpall -h 127.0.0.1 > "$F"`;
      } else {
        databaseName = (opts.databases ?? f.postgres_db!).split(',')[0]!.trim();
        filename = `pg-dump-${databaseName}-${t}.dmp`;
        cmd = `pg_dump -h 127.0.0.1 -d ${q(databaseName)} --format=custom --no-acl --no-owner -f "$F"`;
      }
      break;
    }
    case 'mysql':
    case 'mariadb': {
      const root = kind === 'mysql' ? f.mysql_root_password! : f.mariadb_root_password!;
      env = [`MYSQL_PWD=${root}`];
      const tool = kind === 'mariadb' ? '$(command -v mariadb-dump || echo mysqldump)' : 'mysqldump';
      if (opts.dumpAll) {
        filename = `${kind}-dump-all-${t}.sql`;
        cmd = `${tool} -h 127.0.0.1 -u root --single-transaction --all-databases > "$F"`;
      } else {
        databaseName = (opts.databases ?? (kind === 'mysql' ? f.mysql_database! : f.mariadb_database!)).split(',')[0]!.trim();
        filename = `${kind}-dump-${databaseName}-${t}.sql`;
        cmd = `${tool} -h 127.0.0.1 -u root --single-transaction --databases ${q(databaseName)} > "$F"`;
      }
      break;
    }
    case 'mongodb': {
      env = [`MONGO_USER=${f.mongo_initdb_root_username}`, `MONGO_PASS=${f.mongo_initdb_root_password}`];
      databaseName = opts.dumpAll ? null : (opts.databases ?? f.mongo_initdb_database!).split(',')[0]!.trim();
      filename = `mongo-dump-${databaseName ?? 'all'}-${t}.archive.gz`;
      cmd = `mongodump --host 127.0.0.1 --username "$MONGO_USER" --password "$MONGO_PASS" --authenticationDatabase admin ${databaseName ? `--db ${q(databaseName)} ` : ''}--gzip --archive="$F"`;
      break;
    }
    case 'redis':
    case 'keydb': {
      const pw = kind === 'redis' ? f.redis_password! : f.keydb_password!;
      env = [`REDISCLI_AUTH=${pw}`];
      filename = `${kind}-dump-${t}.rdb`;
      cmd = `${kind === 'keydb' ? 'keydb-cli' : 'redis-cli'} -h 127.0.0.1 --rdb "$F"`;
      break;
    }
    default:
      throw new Error(`Backups of ${kind} databases are not supported.`);
  }
  const script = [
    `F=${BACKUP_DIR}/${filename}`,
    `if ! ${cmd}; then rc=$?; rm -f "$F"; echo "dump failed (exit $rc)" >&2; exit $rc; fi`,
    `size=$(wc -c < "$F" | tr -d ' ')`,
    `if [ "$size" -eq 0 ]; then rm -f "$F"; echo "the dump is empty" >&2; exit 3; fi`,
    `echo "${SIZE_MARKER}$size"`,
  ].join('\n');
  return { filename, databaseName, env, script };
}

/** The restore of a file into the running database (replaces the objects the dump holds). */
export function restorePlan(kind: DatabaseKind, f: Record<string, string>, filename: string): { env: string[]; script: string } {
  const file = `${BACKUP_DIR}/${filename}`;
  switch (kind) {
    case 'postgresql': {
      const env = [`PGPASSWORD=${f.postgres_password}`, `PGUSER=${f.postgres_user}`];
      if (filename.endsWith('.sql')) return { env, script: `psql -v ON_ERROR_STOP=0 -h 127.0.0.1 -d postgres -f ${q(file)}` };
      const db = filename.replace(/^pg-dump-/, '').replace(/-\d{8}T\d{6}Z\.dmp$/, '');
      return { env, script: `pg_restore -h 127.0.0.1 -d ${q(db)} --clean --if-exists --no-owner --no-acl ${q(file)}` };
    }
    case 'mysql':
    case 'mariadb': {
      const root = kind === 'mysql' ? f.mysql_root_password! : f.mariadb_root_password!;
      const tool = kind === 'mariadb' ? '$(command -v mariadb || echo mysql)' : 'mysql';
      return { env: [`MYSQL_PWD=${root}`], script: `${tool} -h 127.0.0.1 -u root < ${q(file)}` };
    }
    case 'mongodb':
      return {
        env: [`MONGO_USER=${f.mongo_initdb_root_username}`, `MONGO_PASS=${f.mongo_initdb_root_password}`],
        script: `mongorestore --host 127.0.0.1 --username "$MONGO_USER" --password "$MONGO_PASS" --authenticationDatabase admin --drop --gzip --archive=${q(file)}`,
      };
    default:
      throw new Error(`Restoring ${kind} backups is not supported.`);
  }
}

/** Only file names berth made are ever removed (no paths, no globs). */
export const safeBackupFile = (name: string) => /^[A-Za-z0-9_.-]+$/.test(name) && !name.startsWith('.');
