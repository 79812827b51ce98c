import { Cron } from 'croner';

/** Coolify's words for common schedules, besides cron expressions. */
const WORDS: Record<string, string> = {
  every_minute: '* * * * *',
  hourly: '0 * * * *',
  daily: '0 0 * * *',
  weekly: '0 0 * * 0',
  monthly: '0 0 1 * *',
  yearly: '0 0 1 1 *',
};

/** The cron pattern of a frequency (a word or a 5-field cron expression, UTC), or null when invalid. */
export function cronPattern(frequency: string): string | null {
  // Coolify also takes the words with an @ (`@daily`).
  const pattern = WORDS[frequency.trim().toLowerCase().replace(/^@/, '')] ?? frequency.trim();
  // Seconds fields would let a schedule fire every second: five fields only.
  if (pattern.split(/\s+/).length !== 5) return null;
  try {
    new Cron(pattern, { paused: true, timezone: 'UTC' });
    return pattern;
  } catch {
    return null;
  }
}

/** The latest time at or before `now` that a frequency was due (what one tick should run, once). */
export function lastDue(frequency: string, now: Date): Date | null {
  const p = cronPattern(frequency);
  if (!p) return null;
  const c = new Cron(p, { paused: true, timezone: 'UTC' });
  if (c.match(now)) return new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  return c.previousRuns(1, now)[0] ?? null;
}

export const FREQUENCY_HELP = `A 5-field cron expression (UTC) or one of ${Object.keys(WORDS).join(', ')}.`;
