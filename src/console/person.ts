import type { FastifyRequest } from 'fastify';

/** The person signed in to the console in this browser. */
export interface Person {
  userId: number;
}

/**
 * Who is signed in, from the console's session (cookie): the seam between the OAuth consent
 * page and the console's sign-in (login links, passkeys, sessions). null: nobody, and the
 * consent page sends the browser to /login?next=… .
 */
export type CurrentPerson = (req: FastifyRequest) => Promise<Person | null>;

/** Until a sign-in is wired in, nobody is ever signed in (consent always asks to sign in). */
export const nobodySignedIn: CurrentPerson = async () => null;

export const loginPath = (next: string): string => `/login?next=${encodeURIComponent(next)}`;
