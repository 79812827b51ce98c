import type { Operation } from './core/operation.js';
import type { ToolDefinition } from './mcp/tools/registry.js';
import { PUBLIC_ROUTES } from './http-api/public-routes.js';

/** Reference tables (docs/api.md, docs/mcp.md) derived from the declarations, so the docs cannot drift from the code. */
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

const permissionOf = (op: Operation) => (op.permission === 'authenticated' ? 'any token' : op.access?.rootTeamOnly ? `${op.permission} (root team)` : op.permission);

export function renderToolTable(tools: readonly ToolDefinition[]): string {
  const rows = tools.map((t) => `| \`${t.name}\` | ${t.op.default ? 'default' : t.op.toolset} | ${permissionOf(t.op)} | ${t.hints.readOnlyHint ? 'yes' : 'no'} | ${cell(t.description)} |`);
  return ['| tool | listed in | permission | read-only | description |', '|---|---|---|---|---|', ...rows].join('\n');
}

/** The default list's paragraph in docs/mcp.md: its size and names, as the declarations have them. */
export function renderDefaultTools(tools: readonly ToolDefinition[]): string {
  const listed = tools.filter((t) => t.op.default);
  const rootOnly = listed.filter((t) => t.op.access?.rootTeamOnly);
  const names = (ts: readonly ToolDefinition[]) => ts.map((t) => `\`${t.name}\``).join(', ');
  const others = rootOnly.length ? ` (${listed.length - rootOnly.length} for a token outside the root team: ${names(rootOnly)} need a root token of the root team)` : '';
  return `**What an agent loads.** By default the list is a small core of ${listed.length} tools${others}, marked \`default\` in the [tool table](#tools) below: ${names(listed)}.`;
}

export function renderRouteTable(operations: readonly Operation[]): string {
  const rows = operations.map((o) => {
    const also = o.http.aliases?.length ? ` (also ${o.http.aliases.map((a) => `\`${a}\``).join(', ')})` : '';
    const query = o.http.query?.length ? ` Query: ${o.http.query.map((q) => `\`${q}\``).join(', ')}.` : '';
    const moved = o.http.getMovedToPost ? ' GET answers 405 (moved to POST).' : '';
    return `| ${o.http.method}${o.http.alsoPost ? ', POST' : ''} | \`${o.http.path}\`${also} | ${permissionOf(o)} | ${cell(o.summary)}${query}${moved} |`;
  });
  return ['| method | path | permission | what it does |', '|---|---|---|---|', ...rows, ...PUBLIC_ROUTES.map((r) => `| GET | \`${r.path}\` | none | ${cell(r.summary)} |`)].join('\n');
}

/** Replaces the text between `<!-- name:start -->` and `<!-- name:end -->`. */
export function replaceSection(doc: string, name: string, body: string): string {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  if (i === -1 || j === -1) throw new Error(`no ${name} section markers (<!-- ${name}:start --> … <!-- ${name}:end -->)`);
  return `${doc.slice(0, i + start.length)}\n${body}\n${doc.slice(j)}`;
}

/** The generated sections, declared once for `npm run docs` and for the test that keeps them in step. */
export function generatedSections(operations: readonly Operation[], tools: readonly ToolDefinition[]) {
  return [
    { file: 'docs/api.md', name: 'routes', body: renderRouteTable(operations) },
    { file: 'docs/mcp.md', name: 'default-tools', body: renderDefaultTools(tools) },
    { file: 'docs/mcp.md', name: 'tools', body: renderToolTable(tools) },
  ];
}
