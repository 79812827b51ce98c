import { z } from 'zod';
import { perStore } from '../../store/cached.js';
import type { Db } from '../../store/db.js';
import { param, prepared } from '../../store/prepared.js';
import type { TeamRow } from '../../store/schema.js';
import { notFound } from '../../errors.js';
import { defineOperation } from '../operation.js';

export const teamSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  description: z.string().nullable(),
  personal_team: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const memberSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  email: z.string(),
  role: z.enum(['owner', 'admin', 'member']),
  created_at: z.string(),
  updated_at: z.string(),
});

const teamView = (t: TeamRow): z.infer<typeof teamSchema> => ({
  id: t.id,
  name: t.name,
  description: t.description,
  personal_team: t.personal_team === 1,
  created_at: t.created_at,
  updated_at: t.updated_at,
});

const teamById = perStore((db) => prepared(db, (q) => q.selectFrom('teams').selectAll().where('id', '=', param('id')), { reuse: true }));

/** The caller's own team; any other id is "not found", with the same bytes as a missing one. */
async function ownTeam(db: Db, callerTeamId: number, id: number): Promise<TeamRow> {
  if (id !== callerTeamId) throw notFound();
  const [team] = await teamById(db)({ id });
  if (!team) throw notFound();
  return team;
}

async function members(db: Db, teamId: number) {
  // Only profile fields are selected: nothing secret about a user leaves the store.
  return db
    .selectFrom('team_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['u.id', 'u.name', 'u.email', 'm.role', 'u.created_at', 'u.updated_at'])
    .where('m.team_id', '=', teamId)
    .orderBy('u.id')
    .execute();
}

const teamIdInput = z.strictObject({ id: z.coerce.number().int().positive() });
const readOnly = { readOnly: true, destructive: false, idempotent: true, openWorld: false };

export const teamOperations = [
  defineOperation({
    name: 'list_teams',
    title: 'List teams',
    description: 'The teams this token sees: a token is bound to one team, so only that one.',
    default: true,
    summary: 'List the teams visible to this token (its own team).',
    permission: 'read',
    toolset: 'teams',
    input: () => z.strictObject({}),
    output: () => z.array(teamSchema),
    annotations: readOnly,
    http: { method: 'GET', path: '/api/v1/teams' },
    async run({ db, caller }) {
      return [teamView(await ownTeam(db, caller.teamId, caller.teamId))];
    },
  }),
  defineOperation({
    name: 'get_current_team',
    title: 'Get current team',
    description: 'The team this token is bound to; every resource you can see or change belongs to it.',
    default: true,
    summary: 'Get the team the token is bound to.',
    permission: 'read',
    toolset: 'teams',
    input: () => z.strictObject({}),
    output: () => teamSchema,
    annotations: readOnly,
    http: { method: 'GET', path: '/api/v1/teams/current', aliases: ['/api/v1/team'] },
    async run({ db, caller }) {
      return teamView(await ownTeam(db, caller.teamId, caller.teamId));
    },
  }),
  defineOperation({
    name: 'get_current_token',
    title: 'Get this token',
    description:
      "What this token may do: its permissions as they apply now (capped by its holder's role in the team) and whether its team is the instance's root team. Read-only; learn what you may call without trying it.",
    summary: "The token's own permissions, and whether its team is the instance's root team.",
    // Any token may ask what it holds: remote mode asks at start, and a read-less token too.
    permission: 'authenticated',
    toolset: 'teams',
    input: () => z.strictObject({}),
    output: () => z.object({ permissions: z.array(z.string()), root_team: z.boolean() }),
    annotations: readOnly,
    http: { method: 'GET', path: '/api/v1/tokens/current' },
    async run({ caller }) {
      return { permissions: [...caller.permissions].sort(), root_team: caller.rootTeam };
    },
  }),
  defineOperation({
    name: 'list_current_team_members',
    title: 'List team members',
    description: "List the members of this token's team with their roles (owner, admin, member). Read-only; no secrets are included.",
    summary: "List the members of the token's team.",
    permission: 'read',
    toolset: 'teams',
    input: () => z.strictObject({}),
    output: () => z.array(memberSchema),
    annotations: readOnly,
    http: { method: 'GET', path: '/api/v1/teams/current/members', aliases: ['/api/v1/team/members'] },
    async run({ db, caller }) {
      return members(db, caller.teamId);
    },
  }),
  defineOperation({
    name: 'get_team',
    title: 'Get team by id',
    description: "Get a team by its numeric id. Only this token's own team is visible; any other id answers 'Resource not found.'",
    summary: 'Get a team by id (only the token’s own team is visible).',
    permission: 'read',
    toolset: 'teams',
    input: () => teamIdInput,
    output: () => teamSchema,
    annotations: readOnly,
    http: { method: 'GET', path: '/api/v1/teams/{id}' },
    async run({ db, caller }, { id }) {
      return teamView(await ownTeam(db, caller.teamId, id));
    },
  }),
  defineOperation({
    name: 'list_team_members',
    title: 'List members of a team',
    description: "List the members of a team by its numeric id. Only this token's own team is visible.",
    summary: 'List the members of a team by id (only the token’s own team is visible).',
    permission: 'read',
    toolset: 'teams',
    input: () => teamIdInput,
    output: () => z.array(memberSchema),
    annotations: readOnly,
    http: { method: 'GET', path: '/api/v1/teams/{id}/members' },
    async run({ db, caller }, { id }) {
      return members(db, (await ownTeam(db, caller.teamId, id)).id);
    },
  }),
];
