import { z } from 'zod';
import type { Operation } from '../../core/operation.js';
import { truncateLog } from '../../core/operations/deployments.js';

/**
 * How the MCP door sizes answers for an agent (REST keeps Coolify's full shapes):
 * - a list returns summaries (who, what state, where it lives), 10 to a page, unless the agent
 *   asks for `detail: "full"`;
 * - a log is its last AGENT_LOG_CHARS characters, with a marker, unless it asks for full: "true".
 * Derived from each operation's own declaration, so a new list or log tool gets the same view.
 */
export const AGENT_PAGE_SIZE = 10;
export const AGENT_LOG_CHARS = 3_000;

/** The fields a list's summary keeps, when its items have them. */
const SUMMARY_FIELDS = [
  'uuid',
  'deployment_uuid',
  'migration_uuid',
  'name',
  'status',
  'type',
  'kind',
  'database_type',
  'service_type',
  'resource_uuid',
  'resource_name',
  'server_uuid',
  'project_uuid',
  'ip',
  'is_usable',
  'fingerprint',
  'network',
  'destination_uuid',
  // Audit entries: when, what, by whom, on what, and how it ended.
  'at',
  'operation',
  'user_email',
  'door',
  'targets',
  'result',
];
/** Items this small are their own summary. */
const SMALL_ITEM = 8;

type Shape = Record<string, z.ZodType>;
const defOf = (s: z.ZodType) => (s as unknown as { _zod: { def: { type: string; shape?: Shape; element?: z.ZodType } } })._zod.def;

/** The item object of a list operation's output ({ items: [...], total, ... }). */
function listItem(op: Operation): z.ZodObject | undefined {
  if (!op.http.list) return undefined;
  const items = defOf(op.output).shape?.items;
  const item = items && defOf(items).element;
  return item && defOf(item).type === 'object' ? (item as z.ZodObject) : undefined;
}

/** The summary fields of a list's items, or undefined when its items are already small. */
export function summaryFields(op: Operation): string[] | undefined {
  const item = listItem(op);
  if (!item) return undefined;
  const keys = Object.keys(item.shape);
  if (keys.length <= SMALL_ITEM) return undefined;
  return SUMMARY_FIELDS.filter((k) => keys.includes(k));
}

const hasLogs = (op: Operation) => 'full' in op.input.shape && 'logs' in (defOf(op.output).shape ?? {});

const detail = z.enum(['summary', 'full']).optional().describe('summary (default): the main fields of each item; full: every field.');

/** The tool's input as the agent sees it: the operation's own, plus `detail` on summarised lists and a smaller page. */
export function agentInput(op: Operation): z.ZodObject {
  if (!op.http.list) return op.input;
  const extra: Shape = {};
  if ('per_page' in op.input.shape) extra.per_page = z.coerce.number().int().min(1).max(100).optional().describe(`default ${AGENT_PAGE_SIZE}`);
  if (summaryFields(op)) extra.detail = detail;
  return op.input.extend(extra);
}

/** The tool's output as the agent sees it: list items are summaries that may carry every field. */
export function agentOutput(op: Operation): z.ZodType {
  const fields = summaryFields(op);
  const item = listItem(op);
  if (!fields || !item) return op.output;
  const summary = z.looseObject(Object.fromEntries(fields.map((k) => [k, item.shape[k]!])));
  return (op.output as z.ZodObject).extend({ items: z.array(summary) });
}

/** Splits the agent's arguments into the operation's own and the view it asked for. */
export function agentArgs(op: Operation, args: Record<string, unknown>): { args: Record<string, unknown>; full: boolean } {
  const { detail: d, ...rest } = args;
  if (op.http.list && 'per_page' in op.input.shape && rest.per_page === undefined) rest.per_page = AGENT_PAGE_SIZE;
  const full = d === 'full' || rest.full === 'true' || rest.full === true;
  return { args: summaryFields(op) ? rest : args, full };
}

/** Applies the view to an operation's output. */
export function agentOutputValue(op: Operation, output: unknown, full: boolean): unknown {
  if (full || typeof output !== 'object' || output === null) return output;
  const fields = summaryFields(op);
  if (fields) {
    const o = output as { items: Record<string, unknown>[] };
    return { ...o, items: o.items.map((it) => Object.fromEntries(fields.filter((k) => k in it).map((k) => [k, it[k]]))) };
  }
  if (hasLogs(op)) {
    const o = output as Record<string, unknown>;
    if (typeof o.logs !== 'string') return output;
    const t = truncateLog(o.logs, false, AGENT_LOG_CHARS);
    if (!t.truncated) return output;
    const flag = 'logs_truncated' in o ? 'logs_truncated' : 'truncated';
    return { ...o, logs: t.text, [flag]: true };
  }
  return output;
}
