import type { Logger } from 'pino';
import { isAllowed, parseAllowList } from '../auth/allowlist.js';
import { missingFor } from '../auth/permissions.js';
import { seesSensitive } from '../auth/permissions.js';
import type { Config } from '../config/config.js';
import type { Jobs } from './jobs.js';
import type { Db } from '../store/db.js';
import type { Runtime } from './runtime.js';
import { rateLimited, type LimitSpec, type RateLimits } from '../limits/rate-limits.js';
import { authenticate, type Authenticated } from './authenticate.js';
import type { Caller, RequestAccess } from './caller.js';
import { BerthError } from '../errors.js';
import type { CallOptions, Operation, OperationContext } from './operation.js';
import { EVERY_ITEM } from './pagination.js';
import { hasSensitive, redact } from './redact.js';
import { holdForApproval } from './approvals.js';
import { parseInput } from './validation.js';
import { appendAudit, appendAuditIn } from './audit/log.js';
import { atomically } from '../store/atomic.js';
import { findTargets } from './path-targets.js';
import { auditTargets } from './audit/entry.js';
import type { ChangeFeed } from './changes.js';

/** Thrown to roll back a held store-only call's trial run. */
const DRY_RUN = Symbol('dry run');

export interface CoreDeps {
  db: Db;
  config: Config;
  logger: Logger;
  limits: RateLimits;
  runtime: Runtime;
  jobs: Jobs;
  /** Where a change is said once it is made (the MCP door's subscriptions hear it). */
  changes?: ChangeFeed;
}

/**
 * The one way an operation runs, for every door, in the contract's order:
 * authenticate → API enabled (and MCP enabled, for that door) → allow-list → permission → input validation → action
 * (team-scoped lookups happen inside the action) → redaction of sensitive output.
 */
export class Core {
  private readonly sensitiveOutputs = new WeakMap<Operation, boolean>();

  constructor(readonly deps: CoreDeps) {}

  /** Authentication only: who is calling (stdio uses it at start to fail fast on a bad token). */
  async identify(access: RequestAccess): Promise<Caller> {
    const { caller, settings } = await authenticate(this.deps.db, access);
    return { ...caller, rootTeam: caller.teamId === settings.rootTeamId };
  }

  /**
   * Authentication, the instance-wide checks and the rate-limit charge: one unit per admitted
   * request, charged to the user, or to the source address when there is no valid token.
   */
  async admit(access: RequestAccess, op?: Pick<Operation, 'access' | 'rateLimit'>): Promise<Caller> {
    const spec = op?.rateLimit ?? this.deps.limits.general;
    let authenticated: Authenticated;
    try {
      authenticated = await authenticate(this.deps.db, access);
    } catch (err) {
      if (err instanceof BerthError) await this.charge(access, spec, `addr:${access.sourceIp}`);
      throw err;
    }
    const { caller, settings } = authenticated;
    const key = op?.rateLimit ? `addr:${access.sourceIp}` : `user:${caller.userId}`;
    if (!settings.apiEnabled && !op?.access?.whenApiDisabled) throw await this.refuse(access, spec, key, 'api_disabled');
    if (access.mcp && !settings.mcpEnabled && !op?.access?.whenMcpDisabled) throw await this.refuse(access, spec, key, 'mcp_disabled');
    if (!isAllowed(parseAllowList(settings.allowedIps), access.sourceIp)) throw await this.refuse(access, spec, key, 'ip_not_allowed');
    await this.charge(access, spec, key);
    return { ...caller, rootTeam: caller.teamId === settings.rootTeamId };
  }

  /** Charges an address for a request that never reached an operation (unknown routes). */
  async chargeAddress(access: RequestAccess): Promise<void> {
    await this.charge(access, this.deps.limits.general, `addr:${access.sourceIp}`);
  }

  private async charge(access: RequestAccess, spec: LimitSpec | null, key: string): Promise<void> {
    if (!spec) return;
    const d = await this.deps.limits.charge(spec, key);
    access.rate = d;
    if (!d.allowed) throw rateLimited(d);
  }

  /** A refusal before the charge still reports the bucket's state in its headers. */
  private async refuse(access: RequestAccess, spec: LimitSpec | null, key: string, kind: 'api_disabled' | 'mcp_disabled' | 'ip_not_allowed'): Promise<BerthError> {
    if (spec) access.rate = await this.deps.limits.peek(spec, key);
    return new BerthError(kind);
  }

  /**
   * The permission checks, for a door that calls them before it even reads the input: a refused
   * changing call is still audited (as forbidden, without its arguments).
   */
  async authorizeAudited(op: Operation, caller: Caller): Promise<void> {
    const startedAt = performance.now();
    try {
      this.authorize(op, caller);
    } catch (error) {
      if (!op.annotations.readOnly) await this.audit({ op, caller, error, startedAt, endedAt: performance.now() });
      throw error;
    }
  }

  /** The permission checks. */
  authorize(op: Operation, caller: Caller): void {
    if (op.permission !== 'authenticated') {
      const missing = missingFor(caller.permissions, op.permission);
      if (missing.length) throw new BerthError('missing_permissions', { missingPermissions: missing, heldPermissions: [...caller.permissions] });
    }
    if (op.access?.rootTeamOnly && !caller.rootTeam) throw new BerthError('root_team_only');
  }

  /**
   * Permission, validation, action and redaction for an already admitted caller. A call that
   * changes something (any operation not declared read-only) gets one audit entry, whatever its
   * outcome, written before the door answers; a store-only operation's in the same transaction
   * as its change.
   */
  async run(op: Operation, caller: Caller, rawInput: unknown, options: CallOptions = {}): Promise<unknown> {
    return this.audited(op, caller, rawInput, options, true);
  }

  /** An approved call, re-run as the caller that asked: permissions and input checked again, not held again; audited as it runs. */
  readonly runHeld = (op: Operation, caller: Caller, input: unknown): Promise<unknown> => this.audited(op, caller, input, {}, false);

  private async audited(op: Operation, caller: Caller, rawInput: unknown, options: CallOptions, gated: boolean): Promise<unknown> {
    if (op.annotations.readOnly) return this.execute(op, caller, rawInput, options, gated);
    const startedAt = performance.now();
    let output: unknown;
    try {
      // A store-only call writes its ok entry itself, with its change; any failure is written here.
      if (op.storeOnly) {
        output = await this.executeWithEntry(op, caller, rawInput, options, gated, startedAt);
        this.changed(op, caller, rawInput, output);
        return output;
      }
      output = await this.execute(op, caller, rawInput, options, gated);
    } catch (error) {
      const refused = error instanceof BerthError && (error.kind === 'missing_permissions' || error.kind === 'root_team_only');
      await this.audit({ op, caller, input: refused ? undefined : (rawInput ?? {}), error, startedAt, endedAt: performance.now() });
      throw error;
    }
    await this.audit({ op, caller, input: rawInput ?? {}, output, startedAt, endedAt: performance.now() });
    this.changed(op, caller, rawInput, output);
    return output;
  }

  /**
   * A change made: said on the change feed with what its audit entry names (the uuids it named
   * and made). A create (201) or a delete also changes what the team has (resources/list_changed).
   */
  private changed(op: Operation, caller: Caller, input: unknown, output: unknown): void {
    const feed = this.deps.changes;
    if (!feed) return;
    const listChanged = op.http.method === 'DELETE' || op.http.status === 201;
    feed.publish({ teamId: caller.teamId, uuids: auditTargets(input, output), ...(listChanged ? { listChanged } : {}) });
  }

  private audit(call: Parameters<typeof appendAudit>[2]): Promise<void> {
    return appendAudit(this.deps.db, this.deps.logger, call);
  }

  /** The action without its audit entry (the bench's "without"). */
  private async execute(op: Operation, caller: Caller, rawInput: unknown, options: CallOptions, gated: boolean): Promise<unknown> {
    const input = await this.admitInput(op, caller, rawInput, gated);
    if (options.everyItem && op.http.list === true) Object.assign(input, EVERY_ITEM);
    const output = await op.run(this.context(caller, options, this.deps.db), input);
    return this.redactFor(op, caller, output);
  }

  /**
   * A store-only action in one transaction with its ok entry: no change without its entry, no
   * entry for a change rolled back, and no commit of its own for the entry. An entry that cannot
   * be written rolls the change back (the call fails, and can be retried). The approval gate runs
   * before, outside: it writes through its own handle.
   */
  private async executeWithEntry(op: Operation, caller: Caller, rawInput: unknown, options: CallOptions, gated: boolean, startedAt: number): Promise<unknown> {
    const input = await this.admitInput(op, caller, rawInput, gated);
    const { db } = this.deps;
    const output = await atomically(db, async (trx) => {
      const out = await op.run(this.context(caller, options, trx), input);
      await appendAuditIn(db, trx, { op, caller, input: rawInput ?? {}, output: out, startedAt, endedAt: performance.now() });
      return out;
    });
    return this.redactFor(op, caller, output);
  }

  /** Permission, input validation and the approval gate: the parsed input, or why not. */
  private async admitInput(op: Operation, caller: Caller, rawInput: unknown, gated: boolean): Promise<Record<string, unknown>> {
    this.authorize(op, caller);
    const input = parseInput(op, rawInput);
    // An agent's call the team's approval policy names waits for a person (src/core/approvals.ts).
    if (gated && !op.annotations.readOnly) await holdForApproval(this.deps, op, caller, input, () => this.checkHeld(op, caller, input));
    return input;
  }

  /**
   * What a call the policy holds must get past before it waits for a person (issue 39): the same
   * 404 or 422 as without a policy. A store-only operation runs in a transaction that is rolled
   * back (its own lookups and checks, exactly: its contract allows a re-run); any other has the
   * rows its path and body name looked up in the team (src/core/path-targets.ts).
   */
  private async checkHeld(op: Operation, caller: Caller, input: Record<string, unknown>): Promise<void> {
    if (!op.storeOnly) return findTargets(this.deps.db, op, caller.teamId, input);
    try {
      await atomically(this.deps.db, async (trx) => {
        await op.run(this.context(caller, {}, trx), input);
        throw DRY_RUN;
      });
    } catch (err) {
      if (err !== DRY_RUN) throw err;
    }
  }

  private context(caller: Caller, options: CallOptions, db: Db): OperationContext {
    // The signal is read through, not copied: a door may make it only when an operation reads it
    // (an AbortController per MCP call cost more than some operations).
    return {
      ...this.deps,
      db,
      caller,
      runHeld: this.runHeld,
      progress: options.progress,
      answerWithinMs: options.answerWithinMs,
      onJob: options.onJob,
      get signal() {
        return options.signal;
      },
    };
  }

  private redactFor(op: Operation, caller: Caller, output: unknown): unknown {
    if (seesSensitive(caller.permissions)) return output;
    let has = this.sensitiveOutputs.get(op);
    if (has === undefined) this.sensitiveOutputs.set(op, (has = hasSensitive(op.output)));
    return has ? redact(op.output, output) : output;
  }
}
