import { z } from 'zod';
import { nowIso } from '../../store/db.js';
import { defineOperation, type OperationContext } from '../operation.js';

const FORWARD_TIMEOUT_MS = 3_000;

/**
 * Best effort: the feedback is already stored, so a slow or failing webhook is logged and
 * never turns into an error for the caller.
 */
async function forward(ctx: OperationContext, id: number, content: string): Promise<void> {
  const url = ctx.config.feedbackWebhookUrl;
  if (!url) return;
  try {
    // Node's built-in fetch is undici; using it keeps undici's own import off start-up.
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id, content, team_id: ctx.caller.teamId, created_at: nowIso() }),
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
      // The operator's URL, but a redirect is not followed anywhere (a 3xx is a failure).
      redirect: 'error',
    });
    await res.body?.cancel();
    if (res.status >= 300) throw new Error(`webhook answered ${res.status}`);
    await ctx.db.updateTable('feedback').set({ forwarded_at: nowIso() }).where('id', '=', id).execute();
  } catch (err) {
    ctx.logger.warn({ err: (err as Error).message, feedbackId: id }, 'feedback forward failed');
  }
}

export const feedbackOperations = [
  defineOperation({
    name: 'send_feedback',
    title: 'Send feedback',
    description: 'Send feedback about berth (10 to 2000 characters) to the people who run this instance. Any valid token may call it.',
    summary: 'Send feedback about berth to the instance operators.',
    permission: 'authenticated',
    toolset: 'feedback',
    input: () => z.strictObject({ content: z.string().trim().min(10).max(2000) }),
    output: () => z.object({ message: z.string(), id: z.number().int() }),
    annotations: { readOnly: false, destructive: false, idempotent: false, openWorld: true },
    http: { method: 'POST', path: '/api/feedback', status: 201 },
    // Outside /api/v1: not in the general bucket, but a small per-address limit of its own.
    rateLimit: { bucket: 'feedback', limit: 10 },
    async run(ctx, { content }) {
      const row = await ctx.db
        .insertInto('feedback')
        .values({
          content,
          user_id: ctx.caller.userId,
          team_id: ctx.caller.teamId,
          source_ip: ctx.caller.sourceIp,
          created_at: nowIso(),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      void forward(ctx, row.id, content);
      return { message: 'Feedback received.', id: row.id };
    },
  }),
];
