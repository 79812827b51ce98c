import type { LimitsFields } from '../runtime-fields.js';
import type { DatabaseKind } from './kinds.js';

/**
 * Per engine: default image, port, data directory, the fields Coolify names for it, and how long a
 * stop waits for a clean shutdown before the engine kills it (a migration's last copy needs the
 * files a clean shutdown leaves; the images flush and exit on SIGTERM or their STOPSIGNAL).
 */
export const DATABASE_ENGINES: Record<DatabaseKind, { image: string; port: number; dataDir: string; user?: string; db?: string; stopGraceS: number }> = {
  postgresql: { image: 'postgres:16-alpine', port: 5432, dataDir: '/var/lib/postgresql/data', user: 'postgres', db: 'postgres', stopGraceS: 60 },
  mysql: { image: 'mysql:8', port: 3306, dataDir: '/var/lib/mysql', user: 'mysql', db: 'default', stopGraceS: 60 },
  mariadb: { image: 'mariadb:11', port: 3306, dataDir: '/var/lib/mysql', user: 'mariadb', db: 'default', stopGraceS: 60 },
  redis: { image: 'redis:7.2', port: 6379, dataDir: '/data', stopGraceS: 30 },
  mongodb: { image: 'mongo:7', port: 27017, dataDir: '/data/db', user: 'root', db: 'default', stopGraceS: 60 },
  clickhouse: { image: 'clickhouse/clickhouse-server:25.11', port: 9000, dataDir: '/var/lib/clickhouse', user: 'default', db: 'default', stopGraceS: 60 },
  dragonfly: { image: 'docker.dragonflydb.io/dragonflydb/dragonfly', port: 6379, dataDir: '/data', stopGraceS: 30 },
  keydb: { image: 'eqalpha/keydb:latest', port: 6379, dataDir: '/data', stopGraceS: 30 },
};

/** Coolify's limits_* are stored only when set (runtime-fields.ts has their defaults). */
export interface DatabaseConfig extends Partial<LimitsFields> {
  image: string;
  is_public: boolean;
  public_port: number | null;
  fields: Record<string, string>;
}

/** Kinds berth can back up (Coolify refuses dragonfly; berth has no ClickHouse dump yet). */
export const BACKUP_KINDS: readonly DatabaseKind[] = ['postgresql', 'mysql', 'mariadb', 'mongodb', 'redis', 'keydb'];
/** Kinds berth can restore from one of its backups. */
export const RESTORE_KINDS: readonly DatabaseKind[] = ['postgresql', 'mysql', 'mariadb', 'mongodb'];
