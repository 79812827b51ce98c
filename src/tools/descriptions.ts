/**
 * What an agent reads about each tool: a title and a description saying when to use it, what it
 * changes and what to do next. Everything else about a tool comes from its operation.
 */
export interface ToolText {
  title: string;
  description: string;
}

export const toolTexts: Record<string, ToolText> = {
  list_teams: {
    title: 'List teams',
    description:
      'List the teams this token can see. A token is bound to exactly one team, so this returns that team only; use get_current_team for its details.',
  },
  get_current_team: {
    title: 'Get current team',
    description:
      'Get the team this token is bound to (id, name, description). Every resource you can see or change belongs to this team. Read-only.',
  },
  list_current_team_members: {
    title: 'List team members',
    description: "List the members of this token's team with their roles (owner, admin, member). Read-only; no secrets are included.",
  },
  get_team: {
    title: 'Get team by id',
    description: "Get a team by its numeric id. Only this token's own team is visible; any other id answers 'Resource not found.'",
  },
  list_team_members: {
    title: 'List members of a team',
    description: "List the members of a team by its numeric id. Only this token's own team is visible.",
  },
  enable_api: {
    title: 'Enable the API',
    description:
      "Turn API access on for the whole instance. Needs a root token of the instance's root team. Works while the API is disabled (it is the way back).",
  },
  disable_api: {
    title: 'Disable the API',
    description:
      "Turn API access off for the whole instance: every API, MCP and stdio call is refused with 'API is disabled.' until enable_api (or POST /api/v1/enable) is called. Needs a root token of the root team. Use with care.",
  },
  get_settings: {
    title: 'Get instance settings',
    description: 'Read the instance-wide API settings: whether the API is enabled and the source-address allow-list. Root token of the root team.',
  },
  update_settings: {
    title: 'Update instance settings',
    description:
      'Change the source-address allow-list (comma-separated IPv4/IPv6 addresses and CIDR ranges; empty or 0.0.0.0 allows all; redundant entries are removed) or the API toggle. Make sure your own address stays allowed. Root token of the root team.',
  },
  send_feedback: {
    title: 'Send feedback',
    description: 'Send feedback about berth (10 to 2000 characters) to the people who run this instance. Any valid token may call it.',
  },
};
