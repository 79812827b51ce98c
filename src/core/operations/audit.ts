import { z } from 'zod';
import { seesSensitive } from '../../auth/permissions.js';
import { withoutHidden } from '../audit/entry.js';
import { listAudit } from '../audit/query.js';
import { defineOperation } from '../operation.js';
import { listOf, pageInput } from '../pagination.js';
import { uuidParam } from '../validators.js';
import { READ } from './common.js';

const isoTime = z
  .string()
  .refine((s) => /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(s) && !Number.isNaN(Date.parse(s)), 'Must be an ISO-8601 date or time, e.g. 2026-11-26T12:00:00Z.')
  .transform((s) => new Date(s).toISOString());

export const auditEntrySchema = z.object({
  uuid: z.string(),
  at: z.string().describe('When the call ended (ISO-8601 UTC).'),
  user_id: z.number().int().nullable(),
  user_email: z.string().nullable(),
  token_id: z.number().int().nullable().describe('The API token, or the OAuth approval of oauth_client_id.'),
  oauth_client_id: z.string().nullable(),
  source_ip: z.string().nullable(),
  door: z.enum(['rest', 'mcp-stdio', 'mcp-http', 'cli', 'console', 'job']),
  operation: z.string(),
  targets: z.array(z.string()).describe('Uuids the call named or made.'),
  arguments: z.record(z.string(), z.unknown()).nullable().describe('As sent, secrets "[redacted]"; null when refused before the input was read.'),
  result: z.string().describe('ok, forbidden, the error kind (validation, not_found, conflict…), or failed for a job run.'),
  status: z.number().int().describe('The HTTP status of the answer.'),
  duration_ms: z.number().int(),
  started_uuid: z.string().nullable().describe("The deployment or migration the call started; a job entry's run record."),
});

export const auditOperations = [
  defineOperation({
    name: 'list_audit_entries',
    title: "List the team's audit log",
    description:
      'Who changed what in this team, newest first: every call that changed something or tried to (from REST, MCP, the CLI, the console; scheduled runs as door job), with the token or OAuth client, source address, operation, target uuids, arguments (secrets shown as [redacted]), result, duration and the deployment or migration it started. Filter by from/to (ISO-8601), user (id or e-mail), token (id), operation, resource (uuid), result (ok, error, forbidden, not_found...).',
    summary: "The team's audit log, newest first: every call that changed something (or tried to), from every door, with who, what, the result and its duration.",
    permission: 'read',
    toolset: 'audit',
    input: () =>
      z.strictObject({
        from: isoTime.optional(),
        to: isoTime.optional(),
        user: z.string().trim().min(1).max(254).optional().describe('A user id or e-mail.'),
        token: z.coerce.number().int().min(1).optional().describe('A token id.'),
        operation: z
          .string()
          .regex(/^[a-z][a-z0-9_]{0,63}$/, 'Must be an operation name.')
          .optional(),
        resource: uuidParam.optional().describe('A uuid the call named, made or started.'),
        result: z
          .string()
          .regex(/^[a-z_]{1,32}$/, 'Must be ok, error or an error kind.')
          .optional()
          .describe('ok, error (any failure), forbidden or an error kind.'),
        ...pageInput,
      }),
    output: () => listOf(auditEntrySchema),
    annotations: READ,
    // Paged even without page/per_page: a log grows without bound, and no Coolify client reads it.
    http: { method: 'GET', path: '/api/v1/audit', list: 'paged' },
    async run({ db, caller }, { page, per_page, ...filter }) {
      const list = await listAudit(db, caller.teamId, filter, { page, per_page });
      if (seesSensitive(caller.permissions)) return list;
      return { ...list, items: list.items.map((e) => ({ ...e, arguments: e.arguments && (withoutHidden(e.arguments) as Record<string, unknown>) })) };
    },
  }),
];
