import { z } from 'zod';
import { nowIso } from '../../store/db.js';

/** Annotation presets: what an operation does to the world. */
export const READ = { readOnly: true, destructive: false, idempotent: true, openWorld: false } as const;
export const CREATE = { readOnly: false, destructive: false, idempotent: false, openWorld: false } as const;
export const UPDATE = { readOnly: false, destructive: false, idempotent: true, openWorld: false } as const;
export const DELETE = { readOnly: false, destructive: true, idempotent: true, openWorld: false } as const;
/** Acts on a server's engine. */
export const ENGINE = { readOnly: false, destructive: false, idempotent: false, openWorld: true } as const;

export const messageSchema = z.object({ message: z.string() });
export const uuidSchema = z.object({ uuid: z.string() });

export const stamps = () => {
  const now = nowIso();
  return { created_at: now, updated_at: now };
};

/** SQLite stores booleans as 0/1. */
export const bool = (v: number | boolean | null | undefined): boolean => v === 1 || v === true;
export const bit = (v: boolean | undefined, fallback = false): number => ((v ?? fallback) ? 1 : 0);
