/**
 * MCP Apps (the `io.modelcontextprotocol/ui` extension): the views berth shows people inside
 * their chat client, declared once. Each is a `ui://` resource of one self-contained HTML
 * document, linked from the tools that show it; all of it is offered only to a client that
 * declares the extension (apps/install.ts), so any other client sees exactly what it saw before.
 */

/** The extension's identifier in a client's `capabilities.extensions`. */
export const UI_EXTENSION = 'io.modelcontextprotocol/ui';
/** The MIME type of an MCP App view. */
export const VIEW_MIME = 'text/html;profile=mcp-app';
/** The legacy key some hosts still read instead of `_meta.ui.resourceUri`. */
export const LEGACY_URI_KEY = 'ui/resourceUri';

export type ViewName = 'board' | 'deployment' | 'migration' | 'approval';

export interface ViewSpec {
  name: ViewName;
  uri: string;
  title: string;
  description: string;
  /** The tools whose results this view shows (a tool the session does not list is simply not linked). */
  tools: readonly string[];
}

export const VIEWS: readonly ViewSpec[] = [
  {
    name: 'board',
    uri: 'ui://berth/board.html',
    title: 'Resources board',
    description: "The team's applications, databases and services: engine status, restarts and last deployment, live.",
    tools: ['list_resources'],
  },
  {
    name: 'deployment',
    uri: 'ui://berth/deployment.html',
    title: 'Deployment',
    description: "A deployment's status and log, the log streaming while it runs.",
    tools: ['get_deployment', 'deploy'],
  },
  {
    name: 'migration',
    uri: 'ui://berth/migration.html',
    title: 'Migration',
    description: "A migration's phase, bytes copied against the total and, once done, the pause.",
    tools: ['get_migration', 'migrate_application', 'migrate_database', 'migrate_service'],
  },
  {
    name: 'approval',
    uri: 'ui://berth/approval.html',
    title: 'Approval',
    description: 'A call held for a person: what, who asked and when, and a link to decide it in the console.',
    tools: ['get_approval'],
  },
];

export const VIEW_BY_URI = new Map(VIEWS.map((v) => [v.uri, v]));
export const VIEW_BY_TOOL = new Map(VIEWS.flatMap((v) => v.tools.map((t) => [t, v] as const)));

/** Whether capabilities (a 2025 initialize's or a 2026 request's envelope) declare the extension. */
export function declaresUi(capabilities: unknown): boolean {
  const ext = (capabilities as { extensions?: unknown } | null | undefined)?.extensions;
  return typeof ext === 'object' && ext !== null && (ext as Record<string, unknown>)[UI_EXTENSION] !== undefined;
}
