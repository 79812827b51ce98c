/** A listed container's name (the engine lists it with a leading slash). */
export const containerName = (c: { Names: string[]; Id: string }) => c.Names[0]?.replace(/^\//, '') ?? c.Id;

/** Networks berth never creates: the engine's own modes. */
export const BUILTIN_NETWORKS = new Set(['none', 'host', 'bridge', 'default']);

/** Labels a backup helper container with the resource it works for. */
export const LABEL_BACKUP_OF = 'berth.backup-of';
