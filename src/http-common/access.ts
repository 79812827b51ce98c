import type { FastifyRequest } from 'fastify';
import type { RequestAccess } from '../core/caller.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request as the core sees it; the core records the rate-limit state on it. */
    berthAccess?: RequestAccess;
  }
}

/** The request's access record, created on first use. */
export function accessOf(req: FastifyRequest): RequestAccess {
  return (req.berthAccess ??= { authorization: req.headers.authorization, sourceIp: req.ip });
}
