import { z } from 'zod';
import { AllowListError, normalizeAllowList } from '../../auth/allowlist.js';
import { readAuditRetentionDays, readSettings, writeAuditRetentionDays, writeSettings, type InstanceSettings } from '../../store/settings.js';
import type { Db } from '../../store/db.js';
import { validationError } from '../../errors.js';
import { defineOperation } from '../operation.js';

const messageSchema = z.object({ message: z.string() });
const instanceWide = { rootTeamOnly: true };

export const settingsSchema = z.object({
  api_enabled: z.boolean(),
  mcp_enabled: z.boolean().describe('The MCP door (streamable HTTP at /mcp and stdio).'),
  allowed_ips: z.string().describe('Normalized comma-separated allow-list; empty allows every address.'),
  audit_retention_days: z.number().int().describe('Audit log entries older than this are removed.'),
});

/** Validates and normalizes an allow-list, as a 422 on the given field when invalid. */
export function allowListOr422(value: string, field = 'allowed_ips'): string {
  try {
    return normalizeAllowList(value);
  } catch (e) {
    if (e instanceof AllowListError) {
      throw validationError({ [field]: e.invalid.map((x) => `"${x}" is not a valid IP address or CIDR range.`) });
    }
    throw e;
  }
}

const settingsView = async (db: Db, s: InstanceSettings) => ({
  api_enabled: s.apiEnabled,
  mcp_enabled: s.mcpEnabled,
  allowed_ips: s.allowedIps,
  audit_retention_days: await readAuditRetentionDays(db),
});

/** Coolify's MCP toggle: the MCP door alone, instance-wide (the REST API stays as it is). */
const mcpToggle = (on: boolean) =>
  defineOperation({
    name: on ? 'enable_mcp' : 'disable_mcp',
    title: on ? 'Enable the MCP server' : 'Disable the MCP server',
    description: on
      ? 'Turn the MCP server (/mcp and stdio) back on for the whole instance. Root token of the root team; over stdio it works while MCP is disabled (the way back).'
      : "Turn the MCP server off for the whole instance: /mcp and stdio refuse every call with 'MCP server is disabled.' until enable_mcp (or POST /api/v1/mcp/enable); the REST API stays. Root token of the root team. Use with care.",
    summary: on
      ? 'Turn the MCP server on for the whole instance (root token of the root team).'
      : 'Turn the MCP server off for the whole instance: /mcp and stdio refuse every call until it is enabled again; the REST API stays.',
    permission: 'root',
    toolset: 'settings',
    input: () => z.strictObject({}),
    output: () => messageSchema,
    annotations: { readOnly: false, destructive: !on, idempotent: true, openWorld: false },
    http: { method: 'POST', path: `/api/v1/mcp/${on ? 'enable' : 'disable'}` },
    access: on ? { whenMcpDisabled: true, ...instanceWide } : instanceWide,
    async run({ db }) {
      await writeSettings(db, { mcpEnabled: on });
      return { message: on ? 'MCP server enabled.' : 'MCP server disabled.' };
    },
  });

export const settingsOperations = [
  defineOperation({
    name: 'enable_api',
    title: 'Enable the API',
    description: 'Turn API access on, instance-wide; works while it is off. Root token of the root team.',
    default: true,
    summary: 'Turn API access on for the whole instance (root token of the root team).',
    permission: 'root',
    toolset: 'settings',
    input: () => z.strictObject({}),
    output: () => messageSchema,
    annotations: { readOnly: false, destructive: false, idempotent: true, openWorld: false },
    http: { method: 'POST', path: '/api/v1/enable', getMovedToPost: true },
    access: { whenApiDisabled: true, ...instanceWide },
    async run({ db }) {
      await writeSettings(db, { apiEnabled: true });
      return { message: 'API enabled.' };
    },
  }),
  defineOperation({
    name: 'disable_api',
    title: 'Disable the API',
    description: 'Turn API access off, instance-wide: every API, MCP and stdio call is refused until enable_api. Root token of the root team.',
    default: true,
    summary: 'Turn API access off for the whole instance; every door refuses until it is enabled again.',
    permission: 'root',
    toolset: 'settings',
    input: () => z.strictObject({}),
    output: () => messageSchema,
    annotations: { readOnly: false, destructive: true, idempotent: true, openWorld: false },
    http: { method: 'POST', path: '/api/v1/disable', getMovedToPost: true },
    access: instanceWide,
    async run({ db }) {
      await writeSettings(db, { apiEnabled: false });
      return { message: 'API disabled.' };
    },
  }),
  mcpToggle(true),
  mcpToggle(false),
  defineOperation({
    name: 'get_settings',
    title: 'Get instance settings',
    description: 'Read the instance-wide settings: whether the API and the MCP server are enabled, and the source-address allow-list. Root token of the root team.',
    summary: 'Read the instance-wide API settings (API toggle, IP allow-list).',
    permission: 'root',
    toolset: 'settings',
    input: () => z.strictObject({}),
    output: () => settingsSchema,
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    http: { method: 'GET', path: '/api/v1/settings' },
    access: instanceWide,
    async run({ db }) {
      const s = await readSettings(db);
      return settingsView(db, s);
    },
  }),
  defineOperation({
    name: 'update_settings',
    title: 'Update instance settings',
    description:
      'Change the source-address allow-list (comma-separated IPv4/IPv6 addresses and CIDR ranges; empty or 0.0.0.0 allows all; redundant entries are removed), the API toggle or the audit log retention (days). Make sure your own address stays allowed. Root token of the root team.',
    summary: 'Change the IP allow-list (normalized on save), the API and MCP toggles or the audit log retention.',
    permission: 'root',
    toolset: 'settings',
    input: () =>
      z.strictObject({
        api_enabled: z.boolean().optional(),
        mcp_enabled: z.boolean().optional(),
        allowed_ips: z.string().max(10_000).optional(),
        audit_retention_days: z.number().int().min(1).max(3650).optional(),
      }),
    output: () => settingsSchema,
    annotations: { readOnly: false, destructive: false, idempotent: true, openWorld: false },
    http: { method: 'PATCH', path: '/api/v1/settings' },
    access: instanceWide,
    async run({ db }, input) {
      const allowedIps = input.allowed_ips === undefined ? undefined : allowListOr422(input.allowed_ips);
      await writeSettings(db, { apiEnabled: input.api_enabled, mcpEnabled: input.mcp_enabled, allowedIps });
      if (input.audit_retention_days !== undefined) await writeAuditRetentionDays(db, input.audit_retention_days);
      const s = await readSettings(db);
      return settingsView(db, s);
    },
  }),
];
