import type { ResourceKind } from '../../store/schema.js';

/** The database engines berth runs, by Coolify's type names. */
export const DATABASE_KINDS = ['postgresql', 'mysql', 'mariadb', 'redis', 'mongodb', 'clickhouse', 'dragonfly', 'keydb'] as const;
export type DatabaseKind = (typeof DATABASE_KINDS)[number];

/** The REST collection each kind lives under. */
export type Collection = 'applications' | 'databases' | 'services';
export const KINDS_OF: Record<Collection, readonly ResourceKind[]> = {
  applications: ['application'],
  databases: DATABASE_KINDS,
  services: ['service'],
};
export const SINGULAR: Record<Collection, string> = { applications: 'application', databases: 'database', services: 'service' };
