import path from 'node:path';
import { z } from 'zod';

/** The base images of the generated builds (build packs nixpacks and static), by stack. */
export interface BuildpackImages {
  node: string;
  python: string;
  go: string;
  /** Serves /usr/share/nginx/html on port 80 with its own command, as nginx does. */
  static: string;
}
/** The official images, as Coolify's users know them; BERTH_BUILDPACK_IMAGES overrides any of them. */
export const DEFAULT_BUILDPACK_IMAGES: Readonly<BuildpackImages> = { node: 'node:22-slim', python: 'python:3.12-slim', go: 'golang:1.23', static: 'nginx:alpine' };

/**
 * Every environment variable berth reads, declared once. Read at start only: a changed value
 * needs a restart (the spec says so for API_RATE_LIMIT; we keep one rule for all).
 */
const envSchema = z.object({
  BERTH_DATA: z.string().min(1).default('./.berth'),
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Comma-separated addresses/CIDRs of proxies whose X-Forwarded-For is believed. */
  TRUST_PROXY: z.string().default(''),
  SMTP_URL: z.string().default(''),
  SMTP_FROM: z.string().default('berth <berth@localhost>'),
  FEEDBACK_WEBHOOK_URL: z.string().default(''),
  /** Requests per window per user (per source address without a user); 0 turns the limit off. */
  API_RATE_LIMIT: z.coerce.number().int().min(0).default(200),
  /** The rate-limit window; the spec's minute. Shorter only for tests. */
  BERTH_RATE_WINDOW_MS: z.coerce.number().int().min(100).default(60_000),
  /** Shares rate-limit buckets (and the change feed) between berth processes; job queues are in the store. */
  REDIS_URL: z.string().default(''),
  /** A Redis command unanswered this long means Redis is hung: requests answer 503 until it answers a PING. */
  BERTH_REDIS_TIMEOUT_MS: z.coerce.number().int().min(50).default(1_000),
  /**
   * A PostgreSQL query unanswered this long fails (503; the connection is dropped), so a store
   * that accepts connections but does not answer is an outage, not a request that hangs.
   */
  BERTH_STORE_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000),
  /**
   * The store: empty for the embedded SQLite file in BERTH_DATA; a postgres:// URL for a
   * PostgreSQL database that several berth instances share.
   */
  DATABASE_URL: z
    .string()
    .default('')
    .refine((v) => v === '' || /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// or postgresql:// URL (or empty for the embedded SQLite store)'),
  /** Jobs (deployments, migrations) running at once per server, and how many may wait. */
  BERTH_QUEUE_CONCURRENCY: z.coerce.number().int().min(1).default(2),
  BERTH_QUEUE_CAP: z.coerce.number().int().min(1).default(20),
  /**
   * Base images of the generated builds (build packs nixpacks and static), a JSON object with any
   * of node, python, go and static (which must serve /usr/share/nginx/html on port 80, as nginx
   * does); the others keep their defaults (core/model/application.ts).
   */
  BERTH_BUILDPACK_IMAGES: z
    .string()
    .default('')
    .transform((v, ctx) => {
      if (!v.trim()) return {};
      let o: unknown;
      try {
        o = JSON.parse(v);
      } catch {
        o = null;
      }
      const keys = Object.keys(DEFAULT_BUILDPACK_IMAGES);
      if (!o || typeof o !== 'object' || Array.isArray(o) || Object.entries(o).some(([k, i]) => !keys.includes(k) || typeof i !== 'string' || !/^[a-z0-9][a-z0-9._/:@-]{0,254}$/.test(i))) {
        ctx.addIssue({ code: 'custom', message: `must be a JSON object of image references with keys among ${keys.join(', ')}` });
        return z.NEVER;
      }
      return o as Partial<BuildpackImages>;
    }),
  /** Image of the never-started helper containers that read and write volumes during migrations. */
  BERTH_HELPER_IMAGE: z.string().min(1).default('busybox:latest'),
  /** Image of a server's reverse proxy (Caddy) when its proxy configuration names none. */
  BERTH_PROXY_IMAGE: z.string().min(1).default('caddy:2-alpine'),
  /**
   * One-click service templates of the operator, in Coolify's service-templates.json format: a
   * file path or an http(s) URL (read on first use, 10 s timeout). They extend and override
   * berth's own catalog. Empty: berth's own only.
   */
  BERTH_SERVICE_TEMPLATES: z.string().default(''),
  /**
   * Migrations also read each copied volume back and compare every file's sha256 (a second pass
   * over the data). Off: the stored destination is verified by listings (count, sizes, metadata).
   */
  BERTH_MIGRATION_CHECKSUMS: z.enum(['true', 'false', '1', '0']).default('false'),
  /** Browser origins allowed to call /mcp (comma-separated, exact match); none by default. */
  MCP_ALLOWED_ORIGINS: z.string().default(''),
  /** Host names accepted on /mcp; defaults to the loopback names when bound to loopback. */
  MCP_ALLOWED_HOSTS: z.string().default(''),
  /** Longest wait for an SSH server's handshake and login. */
  BERTH_SSH_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /** An SSH connection with no open channel is closed after this long (it is made again on use). */
  BERTH_SSH_IDLE_MS: z.coerce.number().int().min(100).default(60_000),
  /**
   * Tests only: `<phase>:<ms>` holds every migration that long when it enters that phase, so a
   * crash test can kill berth inside a phase that otherwise lasts milliseconds (`done`: right
   * after the switch has committed, before its helpers and leftovers are removed). Unset: no hold.
   */
  BERTH_TEST_HOLD_MIGRATION_PHASE: z
    .string()
    .regex(/^(pre-copy|final-sync|verify|switch|done):\d{1,6}$/)
    .optional(),
  /**
   * How long an instance's claim on a job (a deployment or a migration) lasts unless renewed (it
   * renews every third of it): the longest a dead instance's jobs wait before another takes over.
   */
  BERTH_JOB_LEASE_MS: z.coerce.number().int().min(1_000).default(30_000),
  /** How long an MCP task (its status and result) is kept after it was made, when the client asks for no ttl. */
  BERTH_MCP_TASK_TTL_MS: z.coerce.number().int().min(1_000).default(3_600_000),
  /** The longest ttl a client may ask for an MCP task; longer asks are cut to it. */
  BERTH_MCP_TASK_MAX_TTL_MS: z.coerce.number().int().min(1_000).default(86_400_000),
  /** How long a 2025-era MCP session over HTTP lives without a request or an open stream before it is ended. */
  BERTH_MCP_SESSION_IDLE_MS: z.coerce.number().int().min(1_000).default(1_800_000),
  /** How often the expiry-warning worker looks for tokens close to expiry. */
  BERTH_EXPIRY_SCAN_MS: z.coerce.number().int().min(50).default(60_000),
  /**
   * Loopback or private addresses (IPs and CIDR ranges, comma-separated) that what a team points
   * berth at (notification webhooks, SMTP, S3 endpoints) may reach anyway: an intranet chat server,
   * a MinIO on the LAN. Empty: public addresses only.
   */
  BERTH_OUTBOUND_ALLOWED_TARGETS: z.string().default(''),
  /** Telegram's and Pushover's API base URLs (a relay or a test double may stand in). */
  BERTH_TELEGRAM_API_URL: z.string().url().default('https://api.telegram.org'),
  BERTH_HETZNER_API_URL: z.string().url().default('https://api.hetzner.cloud/v1'),
  BERTH_DIGITALOCEAN_API_URL: z.string().url().default('https://api.digitalocean.com/v2'),
  BERTH_VULTR_API_URL: z.string().url().default('https://api.vultr.com/v2'),
  BERTH_PUSHOVER_API_URL: z.string().url().default('https://api.pushover.net'),
  /** Axiom's API base URL for log drains (its ingest endpoint is `{base}/v1/datasets/{dataset}/ingest`; a relay or a test double may stand in). */
  BERTH_AXIOM_API_URL: z.string().url().default('https://api.axiom.co'),
  /** Log drains: how often the settings and each server's running containers are read again, and how often the lines read are sent. */
  BERTH_LOG_DRAIN_SCAN_MS: z.coerce.number().int().min(50).default(5_000),
  BERTH_LOG_DRAIN_FLUSH_MS: z.coerce.number().int().min(50).default(5_000),
  /** How often schedules (Docker cleanups) are checked for a due run. */
  BERTH_SCHEDULE_TICK_MS: z.coerce.number().int().min(50).default(30_000),
  /** How often queued notifications are sent (and failed ones retried). */
  BERTH_NOTIFY_SCAN_MS: z.coerce.number().int().min(50).default(5_000),
  /**
   * The engine watcher: how long one instance's watch of a server lasts unless renewed (another
   * instance takes over after it), and how often every resource of a watched server is looked at
   * besides the engine's events.
   */
  BERTH_WATCH_LEASE_MS: z.coerce.number().int().min(300).default(15_000),
  BERTH_WATCH_RECONCILE_MS: z.coerce.number().int().min(100).default(15_000),
  /**
   * The longest a call waits for the work it started (a deployment, a migration, a restore) before
   * it answers with the status so far and how to follow the work, which goes on: under the 60 s an
   * MCP client waits by default, and the time-outs of most HTTP clients (src/core/answer-bound.ts).
   */
  BERTH_ANSWER_WITHIN_MS: z.coerce.number().int().min(0).default(25_000),
  /**
   * berth's public base URL as clients and people reach it (https://berth.example.com, no path):
   * the OAuth issuer, and /mcp under it the protected resource; console sign-in links point there,
   * passkeys are bound to its host name, and https makes the console's cookies Secure. Empty: the
   * address berth listens on (each request's own for the console; http://localhost:PORT for
   * `berth login-link`).
   */
  BERTH_PUBLIC_URL: z
    .string()
    .default('')
    .refine((v) => v === '' || /^https?:\/\/[^/?#]+\/?$/.test(v), 'must be http(s)://host[:port] with no path'),
  /** Lifetimes of OAuth access tokens, refresh tokens and grants (a person's approval), in seconds. */
  BERTH_OAUTH_ACCESS_TTL: z.coerce.number().int().min(1).default(3600),
  BERTH_OAUTH_REFRESH_TTL: z.coerce
    .number()
    .int()
    .min(1)
    .default(30 * 86400),
  BERTH_OAUTH_GRANT_TTL: z.coerce
    .number()
    .int()
    .min(1)
    .default(365 * 86400),
  /**
   * A dynamically registered OAuth client not used (no code, no token, no request with its token)
   * for this many days is removed, with its approvals; one that never completed an authorization
   * goes after 24 hours.
   */
  BERTH_OAUTH_CLIENT_IDLE_DAYS: z.coerce.number().int().min(1).default(30),
  /** Dynamic client registrations per source address per hour; 0 turns the limit off. */
  BERTH_OAUTH_REGISTRATIONS_PER_HOUR: z.coerce.number().int().min(0).default(20),
});

export type EnvConfig = z.infer<typeof envSchema>;

export interface Config {
  dataDir: string;
  host: string;
  port: number;
  logLevel: EnvConfig['LOG_LEVEL'];
  trustProxy: string[];
  smtpUrl: string | null;
  smtpFrom: string;
  feedbackWebhookUrl: string | null;
  expiryScanMs: number;
  apiRateLimit: number;
  rateWindowMs: number;
  redisUrl: string | null;
  redisTimeoutMs: number;
  /** PostgreSQL: the longest a query (or a connect) may take before it fails as an outage. */
  storeTimeoutMs: number;
  /** null: the embedded SQLite store in dataDir. */
  databaseUrl: string | null;
  jobLeaseMs: number;
  /** MCP tasks: the ttl given when the client asks for none, and the most it may ask (ms). */
  mcpTaskTtlMs: number;
  mcpTaskMaxTtlMs: number;
  /** A 2025-era HTTP session with no request and no open stream for this long is ended (ms). */
  mcpSessionIdleMs: number;
  queueConcurrency: number;
  queueCap: number;
  helperImage: string;
  /** BERTH_SERVICE_TEMPLATES: the operator's template catalog (file or URL), or null. */
  serviceTemplates: string | null;
  /** The generated builds' base images (defaults, then BERTH_BUILDPACK_IMAGES). */
  buildpackImages: BuildpackImages;
  proxyImage: string;
  migrationChecksums: boolean;
  sshTimeoutMs: number;
  sshIdleMs: number;
  testHoldMigrationPhase: { phase: string; ms: number } | null;
  mcpAllowedOrigins: string[];
  mcpAllowedHosts: string[];
  /** Plain HTTP tools/calls answered without the SDK's per-request server (fast-call.ts); false only to compare both paths (tests, bench). */
  mcpFastCalls: boolean;
  outboundAllowedTargets: string;
  telegramApiUrl: string;
  /** Cloud providers' API base URLs (their public ones unless set: a proxy, or a test's stand-in). */
  cloudApiUrls: { hetzner: string; digitalocean: string; vultr: string };
  pushoverApiUrl: string;
  /** Log drains: Axiom's API base, and how often settings and containers are scanned and lines sent. */
  logDrains: { axiomApiUrl: string; scanMs: number; flushMs: number };
  notifyScanMs: number;
  scheduleTickMs: number;
  watchLeaseMs: number;
  watchReconcileMs: number;
  /** A call's answer bound (BERTH_ANSWER_WITHIN_MS); CallOptions.answerWithinMs overrides it for one call. */
  answerWithinMs: number;
  publicUrl: string | null;
  /**
   * The address the newest running `berth serve` recorded in the store (src/store/served-url.ts):
   * kept current by a process that serves no HTTP itself (`berth mcp`), for the links it makes
   * for people; null in `serve`, whose own address is its host and port.
   */
  servedUrl: string | null;
  oauthAccessTtlS: number;
  oauthRefreshTtlS: number;
  oauthGrantTtlS: number;
  oauthClientIdleDays: number;
  oauthRegistrationsPerHour: number;
}

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new Error(`Invalid environment variable ${first?.path.join('.')}: ${first?.message}`);
  }
  const e = parsed.data;
  return {
    dataDir: path.resolve(e.BERTH_DATA),
    host: e.HOST,
    port: e.PORT,
    logLevel: e.LOG_LEVEL,
    trustProxy: list(e.TRUST_PROXY),
    smtpUrl: e.SMTP_URL || null,
    smtpFrom: e.SMTP_FROM,
    feedbackWebhookUrl: e.FEEDBACK_WEBHOOK_URL || null,
    expiryScanMs: e.BERTH_EXPIRY_SCAN_MS,
    apiRateLimit: e.API_RATE_LIMIT,
    rateWindowMs: e.BERTH_RATE_WINDOW_MS,
    redisUrl: e.REDIS_URL || null,
    redisTimeoutMs: e.BERTH_REDIS_TIMEOUT_MS,
    storeTimeoutMs: e.BERTH_STORE_TIMEOUT_MS,
    databaseUrl: e.DATABASE_URL || null,
    jobLeaseMs: e.BERTH_JOB_LEASE_MS,
    mcpTaskTtlMs: Math.min(e.BERTH_MCP_TASK_TTL_MS, e.BERTH_MCP_TASK_MAX_TTL_MS),
    mcpTaskMaxTtlMs: e.BERTH_MCP_TASK_MAX_TTL_MS,
    mcpSessionIdleMs: e.BERTH_MCP_SESSION_IDLE_MS,
    queueConcurrency: e.BERTH_QUEUE_CONCURRENCY,
    queueCap: e.BERTH_QUEUE_CAP,
    helperImage: e.BERTH_HELPER_IMAGE,
    serviceTemplates: e.BERTH_SERVICE_TEMPLATES.trim() || null,
    buildpackImages: { ...DEFAULT_BUILDPACK_IMAGES, ...e.BERTH_BUILDPACK_IMAGES },
    proxyImage: e.BERTH_PROXY_IMAGE,
    migrationChecksums: e.BERTH_MIGRATION_CHECKSUMS === 'true' || e.BERTH_MIGRATION_CHECKSUMS === '1',
    sshTimeoutMs: e.BERTH_SSH_TIMEOUT_MS,
    sshIdleMs: e.BERTH_SSH_IDLE_MS,
    testHoldMigrationPhase: e.BERTH_TEST_HOLD_MIGRATION_PHASE ? { phase: e.BERTH_TEST_HOLD_MIGRATION_PHASE.split(':')[0]!, ms: Number(e.BERTH_TEST_HOLD_MIGRATION_PHASE.split(':')[1]) } : null,
    mcpAllowedOrigins: list(e.MCP_ALLOWED_ORIGINS),
    mcpAllowedHosts: list(e.MCP_ALLOWED_HOSTS).map((h) => h.toLowerCase()),
    mcpFastCalls: true,
    outboundAllowedTargets: e.BERTH_OUTBOUND_ALLOWED_TARGETS,
    telegramApiUrl: e.BERTH_TELEGRAM_API_URL,
    cloudApiUrls: { hetzner: e.BERTH_HETZNER_API_URL, digitalocean: e.BERTH_DIGITALOCEAN_API_URL, vultr: e.BERTH_VULTR_API_URL },
    pushoverApiUrl: e.BERTH_PUSHOVER_API_URL,
    logDrains: { axiomApiUrl: e.BERTH_AXIOM_API_URL, scanMs: e.BERTH_LOG_DRAIN_SCAN_MS, flushMs: e.BERTH_LOG_DRAIN_FLUSH_MS },
    notifyScanMs: e.BERTH_NOTIFY_SCAN_MS,
    scheduleTickMs: e.BERTH_SCHEDULE_TICK_MS,
    watchLeaseMs: e.BERTH_WATCH_LEASE_MS,
    watchReconcileMs: e.BERTH_WATCH_RECONCILE_MS,
    answerWithinMs: e.BERTH_ANSWER_WITHIN_MS,
    publicUrl: e.BERTH_PUBLIC_URL ? e.BERTH_PUBLIC_URL.replace(/\/+$/, '') : null,
    servedUrl: null,
    oauthAccessTtlS: e.BERTH_OAUTH_ACCESS_TTL,
    oauthRefreshTtlS: e.BERTH_OAUTH_REFRESH_TTL,
    oauthGrantTtlS: e.BERTH_OAUTH_GRANT_TTL,
    oauthClientIdleDays: e.BERTH_OAUTH_CLIENT_IDLE_DAYS,
    oauthRegistrationsPerHour: e.BERTH_OAUTH_REGISTRATIONS_PER_HOUR,
    ...overrides,
  };
}

/**
 * Where `berth serve` is reached without BERTH_PUBLIC_URL: a loopback or wildcard bind is
 * "localhost" (a name, as passkeys need; an IP address cannot be a WebAuthn relying party).
 */
export function defaultPublicUrl(host: string, port: number): string {
  const name = ['127.0.0.1', '::1', '0.0.0.0', '::', 'localhost'].includes(host) ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `http://${name}:${port}`;
}

/**
 * Where people reach the console, for links made outside a request (approve_url): BERTH_PUBLIC_URL,
 * else the address a running serve recorded (in a process that serves no HTTP), else this
 * process's own host and port.
 */
export function consoleUrl(config: Pick<Config, 'publicUrl' | 'servedUrl' | 'host' | 'port'>): string {
  return config.publicUrl ?? config.servedUrl ?? defaultPublicUrl(config.host, config.port);
}
