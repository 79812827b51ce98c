import { seesSensitive } from '../../auth/permissions.js';
import { withoutHidden } from '../audit/entry.js';
import { z } from 'zod';
import { BerthError } from '../../errors.js';
import { APPROVAL_CLASSES, decide, getApproval, listApprovals, readPolicy, writePolicy } from '../approvals.js';
import { defineOperation, type OperationContext } from '../operation.js';
import { listOf, pageInput } from '../pagination.js';
import { operationNames } from './table.js';

const STATUSES = ['pending', 'running', 'succeeded', 'failed', 'denied', 'expired'] as const;

export const approvalSchema = z.object({
  uuid: z.string(),
  status: z.enum(STATUSES),
  operation: z.string().describe('The operation that waits.'),
  rule: z.string().describe('The policy rule that held it: an operation name or a class.'),
  target: z.string().nullable().describe('The uuid (or id) the call names.'),
  arguments: z.record(z.string(), z.unknown()).describe('The call\u2019s arguments, secrets shown as "[redacted]".'),
  args_hash: z.string().nullable().describe('SHA-256 of the held arguments\u2019 canonical JSON: what a person approves, checked again before the call runs.'),
  requested_by: z.object({ user_id: z.number().int(), token_id: z.number().int(), oauth_client_id: z.string().nullable() }),
  created_at: z.string(),
  expires_at: z.string(),
  decided_by_user_id: z.number().int().nullable(),
  decided_via: z.string().nullable(),
  decided_at: z.string().nullable(),
  result: z.unknown().describe('What the operation answered once it ran.'),
  error: z.object({ kind: z.string(), message: z.string() }).nullable(),
  approve_url: z.string().describe('The console page where a person approves or denies it.'),
});

const policySchema = z.object({
  rules: z.array(z.string()).describe(`Operation names and classes (${APPROVAL_CLASSES.join(', ')}) whose calls by an agent wait for a person.`),
  expires_in_seconds: z.number().int().describe('How long a call waits before it expires and never runs.'),
});

const uuid = z.string().min(1).max(64);
const uuidInput = z.strictObject({ uuid });
const approveInput = z.strictObject({
  uuid,
  args_hash: z
    .string()
    .regex(/^[0-9a-f]{64}$/, { message: 'The approval\u2019s args_hash: 64 lowercase hex digits.' })
    .optional()
    .describe('The args_hash the person was shown; the approval is refused when the held call\u2019s differs.'),
});
const readOnly = { readOnly: true, destructive: false, idempotent: true, openWorld: false };
const decision = { readOnly: false, destructive: false, idempotent: false, openWorld: true };

/** A decision runs as the person (console, CLI) it is; a token's approve is refused: tokens are agents. */
async function decideAs(ctx: OperationContext, uuid: string, what: 'approve' | 'deny', argsHash?: string) {
  const { caller } = ctx;
  // Another team's approval is the same 404 as a missing one, before any refusal says more.
  await getApproval(ctx.db, ctx.config, caller.teamId, uuid);
  if (what === 'approve' && !caller.person) throw new BerthError('approval_not_allowed');
  if (!ctx.runHeld) throw new Error('approvals need the core to run a held call');
  return decide(ctx, ctx.runHeld, { userId: caller.userId, teamId: caller.teamId, via: caller.person ?? caller.door, ...(argsHash ? { argsHash } : {}) }, uuid, what);
}

/** A caller without read:sensitive sees no hidden argument's name either (as in every response). */
const shownTo = <T extends { arguments: Record<string, unknown> }>(a: T): T => ({ ...a, arguments: withoutHidden(a.arguments) as Record<string, unknown> });

export const approvalOperations = [
  defineOperation({
    name: 'list_approvals',
    title: 'List approvals',
    description: "Calls by agents that the team's approval policy held for a person (status pending, succeeded, failed, denied, expired), newest first.",
    summary: "List the team's approvals (calls by agents held for a person), newest first.",
    permission: 'read',
    toolset: 'teams',
    input: () => z.strictObject({ status: z.enum(STATUSES).optional(), ...pageInput }),
    output: () => listOf(approvalSchema),
    annotations: readOnly,
    http: { method: 'GET', path: '/api/v1/approvals', list: true },
    async run({ db, config, caller }, input) {
      const list = await listApprovals(db, config, caller.teamId, { status: input.status, page: input.page, perPage: input.per_page });
      return seesSensitive(caller.permissions) ? list : { ...list, items: list.items.map(shownTo) };
    },
  }),
  defineOperation({
    name: 'get_approval_policy',
    title: 'Get the approval policy',
    description: 'Which operations and classes (delete, migrate, stop, production_env) wait for a person when an agent calls them, and how long a held call waits.',
    summary: 'Get which calls by agents wait for a person, and for how long.',
    permission: 'read',
    toolset: 'teams',
    input: () => z.strictObject({}),
    output: () => policySchema,
    annotations: readOnly,
    http: { method: 'GET', path: '/api/v1/approvals/policy' },
    async run({ db, caller }) {
      const p = await readPolicy(db, caller.teamId);
      return { rules: p.rules, expires_in_seconds: p.expiresInSeconds };
    },
  }),
  defineOperation({
    name: 'update_approval_policy',
    title: 'Set the approval policy',
    description:
      'Set rules (operation names or classes: delete = every call that destroys data, migrate, stop, production_env) and expires_in_seconds. While any rule is set, this call itself waits for a person.',
    summary: 'Set which calls by agents wait for a person. While the policy holds anything, changing it waits for a person too.',
    permission: 'write',
    toolset: 'teams',
    input: () =>
      z.strictObject({
        rules: z
          .array(z.string().refine((r) => (APPROVAL_CLASSES as readonly string[]).includes(r) || operationNames().has(r), { message: `Name an operation or a class: ${APPROVAL_CLASSES.join(', ')}.` }))
          .max(200)
          .optional(),
        expires_in_seconds: z
          .number()
          .int()
          .min(60)
          .max(30 * 86400)
          .optional(),
      }),
    output: () => policySchema,
    annotations: { readOnly: false, destructive: false, idempotent: true, openWorld: false },
    http: { method: 'PATCH', path: '/api/v1/approvals/policy' },
    async run({ db, caller }, input) {
      const now = await readPolicy(db, caller.teamId);
      const p = await writePolicy(db, caller.teamId, { rules: input.rules ?? now.rules, expiresInSeconds: input.expires_in_seconds ?? now.expiresInSeconds });
      return { rules: p.rules, expires_in_seconds: p.expiresInSeconds };
    },
  }),
  defineOperation({
    name: 'get_approval',
    title: 'Get an approval',
    description: 'One held call: operation, target, redacted arguments, status and, once a person approved it and it ran, its result or error. Poll this after a pending answer.',
    summary: 'Get one approval: the held operation, its target, its redacted arguments, its state and, once run, its result.',
    permission: 'read',
    toolset: 'teams',
    input: () => uuidInput,
    output: () => approvalSchema,
    annotations: readOnly,
    http: { method: 'GET', path: '/api/v1/approvals/{uuid}' },
    async run({ db, config, caller }, input) {
      const a = await getApproval(db, config, caller.teamId, input.uuid);
      return seesSensitive(caller.permissions) ? a : shownTo(a);
    },
  }),
  defineOperation({
    name: 'approve_approval',
    title: 'Approve a held call',
    description: 'Refused for every token: a team owner or admin approves in the console (approve_url) or with `berth approvals approve`. Tell the person instead.',
    summary: 'Approve a held call: it runs once, as the caller that asked. Only a team owner or admin in the console or CLI; a token is refused.',
    permission: 'write',
    toolset: 'teams',
    input: () => approveInput,
    output: () => approvalSchema,
    annotations: decision,
    http: { method: 'POST', path: '/api/v1/approvals/{uuid}/approve' },
    async run(ctx, input) {
      return decideAs(ctx, input.uuid, 'approve', input.args_hash);
    },
  }),
  defineOperation({
    name: 'deny_approval',
    title: 'Deny a held call',
    description: 'Withdraw or refuse a held call: it never runs. Any write token of the team may deny.',
    summary: 'Deny a held call (an agent may withdraw its own): it never runs.',
    permission: 'write',
    toolset: 'teams',
    input: () => uuidInput,
    output: () => approvalSchema,
    annotations: { readOnly: false, destructive: false, idempotent: false, openWorld: false },
    http: { method: 'POST', path: '/api/v1/approvals/{uuid}/deny' },
    async run(ctx, input) {
      return decideAs(ctx, input.uuid, 'deny');
    },
  }),
];
