import { quote } from 'shell-quote';
import { z } from 'zod';
import type { ContainerSpec } from './model/container-spec.js';
import { validationError } from '../errors.js';

/**
 * Coolify's runtime fields of applications (health_check_*) and of applications and databases
 * (limits_*), by Coolify's names, types and defaults. A record stores only what was set; views
 * show the defaults for the rest, and the plan turns both into the engine's settings.
 *
 * Marked `berth.brief`: MCP tool schemas leave them out (the tool description names them) to keep
 * tools/list small; REST, OpenAPI and the core take and check them all.
 */
export const brief = <T extends z.ZodType>(s: T): T => s.meta({ 'berth.brief': true }) as T;

const seconds = z.number().int().min(1).max(3600);
/** Docker's size form: "0" (no limit), "512m", "1g", "1.5GB", "67108864". */
const size = z
  .string()
  .max(32)
  .regex(/^\d+(\.\d+)?\s?([bkmgt]i?b?)?$/i, 'Use a size such as 0 (no limit), 256m, 1g or 1.5GB.');
const noControl = /^[^\u0000-\u001f\u007f]*$/;

export const healthCheckInput = {
  health_check_enabled: brief(z.boolean().optional()),
  health_check_path: brief(
    z
      .string()
      .max(1024)
      .regex(/^\/[^\s\u0000-\u001f\u007f]*$/, 'Must start with / and have no spaces.')
      .optional(),
  ),
  health_check_port: brief(
    z
      .string()
      .regex(/^\d{1,5}$/, 'Must be a port number.')
      .nullable()
      .optional(),
  ),
  health_check_host: brief(
    z
      .string()
      .max(253)
      .regex(/^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:.]+\]$/, 'Must be a host name or address.')
      .optional(),
  ),
  health_check_method: brief(
    z
      .string()
      .regex(/^(get|post)$/i, 'Use GET or POST.')
      .optional(),
  ),
  health_check_scheme: brief(z.enum(['http', 'https']).optional()),
  health_check_return_code: brief(z.number().int().min(100).max(599).optional()),
  health_check_response_text: brief(z.string().max(1024).regex(noControl, 'Must not contain control characters.').nullable().optional()),
  health_check_interval: brief(seconds.optional()),
  health_check_timeout: brief(seconds.optional()),
  health_check_retries: brief(z.number().int().min(0).max(100).optional()),
  health_check_start_period: brief(z.number().int().min(0).max(3600).optional()),
};

export const limitsInput = {
  limits_memory: brief(size.optional()),
  limits_memory_swap: brief(
    z
      .string()
      .max(32)
      .regex(/^-1$|^\d+(\.\d+)?\s?([bkmgt]i?b?)?$/i, 'Use a size such as 0, 512m or 1g, or -1 (unlimited swap).')
      .optional(),
  ),
  limits_memory_swappiness: brief(z.number().int().min(0).max(100).optional()),
  limits_memory_reservation: brief(size.optional()),
  limits_cpus: brief(
    z
      .string()
      .max(16)
      .regex(/^\d+(\.\d+)?$/, 'Use a number of CPUs such as 0 (no limit), 0.5 or 2.')
      .optional(),
  ),
  limits_cpuset: brief(
    z
      .string()
      .max(64)
      .regex(/^(\d+(-\d+)?(,\d+(-\d+)?)*)?$/, 'Use CPU numbers and ranges such as 0-1 or 0,2.')
      .nullable()
      .optional(),
  ),
  limits_cpu_shares: brief(z.number().int().min(2).max(262144).optional()),
};

export type HealthCheckFields = { [K in keyof typeof healthCheckInput]-?: Exclude<z.infer<(typeof healthCheckInput)[K]>, undefined> };
export type LimitsFields = { [K in keyof typeof limitsInput]-?: Exclude<z.infer<(typeof limitsInput)[K]>, undefined> };

/**
 * Coolify's column defaults, but one: berth's health check is off until turned on. Coolify's
 * column says on, and a check against an image with no HTTP endpoint (a worker, a busybox) would
 * mark it unhealthy and fail its deploys; see docs/decisions/status-and-engine-truth.md.
 */
export const HEALTH_DEFAULTS: HealthCheckFields = {
  health_check_enabled: false,
  health_check_path: '/',
  health_check_port: null,
  health_check_host: 'localhost',
  health_check_method: 'GET',
  health_check_scheme: 'http',
  health_check_return_code: 200,
  health_check_response_text: null,
  health_check_interval: 5,
  health_check_timeout: 5,
  health_check_retries: 10,
  health_check_start_period: 5,
};

export const LIMITS_DEFAULTS: LimitsFields = {
  limits_memory: '0',
  limits_memory_swap: '0',
  limits_memory_swappiness: 60,
  limits_memory_reservation: '0',
  limits_cpus: '0',
  limits_cpuset: null,
  limits_cpu_shares: 1024,
};

/** The output side: every field, with its default when unset. */
export const healthCheckOutput = {
  health_check_enabled: brief(z.boolean()),
  health_check_path: brief(z.string()),
  health_check_port: brief(z.string().nullable()),
  health_check_host: brief(z.string()),
  health_check_method: brief(z.string()),
  health_check_scheme: brief(z.string()),
  health_check_return_code: brief(z.number().int()),
  health_check_response_text: brief(z.string().nullable()),
  health_check_interval: brief(z.number().int()),
  health_check_timeout: brief(z.number().int()),
  health_check_retries: brief(z.number().int()),
  health_check_start_period: brief(z.number().int()),
};
export const limitsOutput = {
  limits_memory: brief(z.string()),
  limits_memory_swap: brief(z.string()),
  limits_memory_swappiness: brief(z.number().int()),
  limits_memory_reservation: brief(z.string()),
  limits_cpus: brief(z.string()),
  limits_cpuset: brief(z.string().nullable()),
  limits_cpu_shares: brief(z.number().int()),
};

const HEALTH_KEYS = Object.keys(healthCheckInput) as (keyof HealthCheckFields)[];
const LIMIT_KEYS = Object.keys(limitsInput) as (keyof LimitsFields)[];

/** The fields of an input that were given (undefined left out), normalised as stored. */
export function givenHealthCheck(i: Record<string, unknown>): Partial<HealthCheckFields> {
  const out: Record<string, unknown> = {};
  for (const k of HEALTH_KEYS) if (i[k] !== undefined) out[k] = k === 'health_check_method' ? String(i[k]).toUpperCase() : i[k];
  return out as Partial<HealthCheckFields>;
}

export function givenLimits(i: Record<string, unknown>): Partial<LimitsFields> {
  const out: Record<string, unknown> = {};
  for (const k of LIMIT_KEYS) if (i[k] !== undefined) out[k] = typeof i[k] === 'string' ? (i[k] as string).replace(/\s/g, '') : i[k];
  return out as Partial<LimitsFields>;
}

export const healthCheckView = (stored: Partial<HealthCheckFields>): HealthCheckFields => ({ ...HEALTH_DEFAULTS, ...pick(stored, HEALTH_KEYS) });
export const limitsView = (stored: Partial<LimitsFields>): LimitsFields => ({ ...LIMITS_DEFAULTS, ...pick(stored, LIMIT_KEYS) });

function pick<T extends object>(o: T, keys: readonly (keyof T)[]): Partial<T> {
  const out: Partial<T> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** Bytes of a size in Docker's form (binary units, as docker's RAMInBytes); -1 stays -1. */
export function sizeBytes(v: string): number {
  if (v === '-1') return -1;
  const m = /^(\d+(?:\.\d+)?)([bkmgt])?/i.exec(v.replace(/\s/g, ''))!;
  return Math.round(Number(m[1]) * UNITS[(m[2] ?? '').toLowerCase()]!);
}

/** Docker's smallest memory limit; the engine refuses less at create time, so berth does at the door. */
const MIN_MEMORY = 6 * 1024 ** 2;

/** Checks the limits together (each alone is checked by its schema): 422 naming the field. */
export function checkLimits(stored: Partial<LimitsFields>): void {
  const l = limitsView(stored);
  const memory = sizeBytes(l.limits_memory);
  const swap = sizeBytes(l.limits_memory_swap);
  const reservation = sizeBytes(l.limits_memory_reservation);
  if (memory && memory < MIN_MEMORY) throw validationError({ limits_memory: ['The smallest memory limit is 6m (0 means no limit).'] });
  if (swap > 0 && !memory) throw validationError({ limits_memory_swap: ['A swap limit needs limits_memory.'] });
  if (swap > 0 && swap < memory) throw validationError({ limits_memory_swap: ['Must be at least limits_memory (it counts memory plus swap).'] });
  if (memory && reservation > memory) throw validationError({ limits_memory_reservation: ['Must not be above limits_memory.'] });
  const cpus = Number(l.limits_cpus);
  if (cpus && cpus < 0.01) throw validationError({ limits_cpus: ['The smallest CPU limit is 0.01 (0 means no limit).'] });
}

/**
 * The engine's resource settings. "0" and unset mean no limit; swappiness and CPU shares go to
 * the engine only when set to other than Coolify's defaults (which Coolify clients send back on
 * every update): an engine on cgroup v2 may refuse swappiness, and 1024 shares is the engine's own.
 */
export function limitsSpec(stored: Partial<LimitsFields> | undefined): ContainerSpec['limits'] {
  if (!stored) return undefined;
  const l = limitsView(stored);
  const out: NonNullable<ContainerSpec['limits']> = {};
  const memory = sizeBytes(l.limits_memory);
  if (memory) out.memory = memory;
  const swap = sizeBytes(l.limits_memory_swap);
  if (swap && memory) out.memorySwap = swap;
  if (l.limits_memory_swappiness !== LIMITS_DEFAULTS.limits_memory_swappiness) out.memorySwappiness = l.limits_memory_swappiness;
  const reservation = sizeBytes(l.limits_memory_reservation);
  if (reservation) out.memoryReservation = reservation;
  const cpus = Number(l.limits_cpus);
  if (cpus) out.nanoCpus = Math.round(cpus * 1e9);
  if (l.limits_cpuset) out.cpusetCpus = l.limits_cpuset;
  if (l.limits_cpu_shares !== LIMITS_DEFAULTS.limits_cpu_shares) out.cpuShares = l.limits_cpu_shares;
  return Object.keys(out).length ? out : undefined;
}

/**
 * The container's health check from Coolify's fields: an HTTP request to the container itself,
 * with curl when the image has it and else wget (busybox and alpine have it), passing only on the
 * expected status code and, when given, a body containing the expected text. The port is the
 * field's, else the first exposed port, else 80. Off: no check of berth's (the image's own applies).
 */
export function healthcheckSpec(stored: Partial<HealthCheckFields> | undefined, portsExposes: string | null): ContainerSpec['healthcheck'] {
  const h = healthCheckView(stored ?? {});
  if (!h.health_check_enabled) return undefined;
  const port = h.health_check_port ?? portsExposes?.split(',')[0] ?? '80';
  const url = `${h.health_check_scheme}://${h.health_check_host}:${port}${h.health_check_path}`;
  const code = String(h.health_check_return_code);
  const steps = [
    `u=${quote([url])}`,
    // curl: the body, then the status code as the last three characters.
    `if command -v curl >/dev/null 2>&1; then r=$(curl -s -k -X ${h.health_check_method} -w '%{http_code}' "$u"); s=\${r#"\${r%???}"}; r=\${r%???}`,
    // wget (busybox's too): -S writes the status lines to stderr, taken in with the body; a status other than 2xx is not an error here.
    `else r=$(wget -q -S -O- "$u" 2>&1); case "$r" in *"HTTP/"*" ${code}"[!0-9]*|*"HTTP/"*" ${code}") s=${code};; *) s=;; esac; fi`,
    `[ "$s" = ${code} ] || exit 1`,
  ];
  if (h.health_check_response_text) steps.push(`case "$r" in *${quote([h.health_check_response_text])}*) ;; *) exit 1;; esac`);
  return {
    test: ['CMD-SHELL', steps.join('; ')],
    intervalS: h.health_check_interval,
    timeoutS: h.health_check_timeout,
    retries: h.health_check_retries,
    startPeriodS: h.health_check_start_period,
  };
}
