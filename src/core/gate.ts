import type { Logger } from 'pino';
import { isAllowed, parseAllowList } from '../auth/allowlist.js';
import { missingFor } from '../auth/permissions.js';
import { seesSensitive } from '../auth/permissions.js';
import type { Config } from '../config/config.js';
import type { Db } from '../store/db.js';
import { readSettings } from '../store/settings.js';
import { authenticate } from './authenticate.js';
import type { Caller, RequestAccess } from './caller.js';
import { BerthError, validationError } from './errors.js';
import type { CallOptions, Operation } from './operation.js';
import { hasSensitive, redact } from './redact.js';
import { issuesToErrors } from './validation.js';

export interface CoreDeps {
  db: Db;
  config: Config;
  logger: Logger;
}

/**
 * The one way an operation runs, for every door, in the contract's order:
 * authenticate → API enabled → allow-list → permission → input validation → action
 * (team-scoped lookups happen inside the action) → redaction of sensitive output.
 */
export class Core {
  private readonly sensitiveOutputs = new WeakMap<Operation, boolean>();

  constructor(readonly deps: CoreDeps) {}

  /** Authentication only: who is calling (stdio uses it at start to fail fast on a bad token). */
  async identify(access: RequestAccess): Promise<Caller> {
    const caller = await authenticate(this.deps.db, access);
    const settings = await readSettings(this.deps.db);
    return { ...caller, rootTeam: caller.teamId === settings.rootTeamId };
  }

  /** Authentication and the instance-wide checks that do not depend on the operation. */
  async admit(access: RequestAccess, op?: Pick<Operation, 'access'>): Promise<Caller> {
    const caller = await authenticate(this.deps.db, access);
    const settings = await readSettings(this.deps.db);
    if (!settings.apiEnabled && !op?.access?.whenApiDisabled) throw new BerthError('api_disabled');
    if (!isAllowed(parseAllowList(settings.allowedIps), access.sourceIp)) throw new BerthError('ip_not_allowed');
    return { ...caller, rootTeam: caller.teamId === settings.rootTeamId };
  }

  /** Permission, validation, action and redaction for an already admitted caller. */
  async run(op: Operation, caller: Caller, rawInput: unknown, options: CallOptions = {}): Promise<unknown> {
    if (op.permission !== 'authenticated') {
      const missing = missingFor(caller.permissions, op.permission);
      if (missing.length) throw new BerthError('missing_permissions', { missingPermissions: missing });
    }
    if (op.access?.rootTeamOnly && !caller.rootTeam) throw new BerthError('root_team_only');
    const parsed = op.input.safeParse(rawInput ?? {});
    if (!parsed.success) throw validationError(issuesToErrors(parsed.error.issues));
    const output = await op.run({ ...options, caller, ...this.deps }, parsed.data);
    return this.redactFor(op, caller, output);
  }

  async invoke(op: Operation, access: RequestAccess, rawInput: unknown): Promise<unknown> {
    return this.run(op, await this.admit(access, op), rawInput);
  }

  private redactFor(op: Operation, caller: Caller, output: unknown): unknown {
    if (seesSensitive(caller.permissions)) return output;
    let has = this.sensitiveOutputs.get(op);
    if (has === undefined) this.sensitiveOutputs.set(op, (has = hasSensitive(op.output)));
    return has ? redact(op.output, output) : output;
  }
}
