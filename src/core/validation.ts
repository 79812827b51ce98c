import type { z } from 'zod';
import { validationError, type ValidationErrors } from '../errors.js';
import type { CoolifyField, Operation } from './operation.js';

/** What a known Coolify field that berth cannot apply yet is refused with (Operation.unsupported). */
export const unsupportedMessage = (hint: string) => `berth does not support this Coolify field yet: ${hint}.`;

/**
 * zod issues → the contract's `{ field: [message, ...] }`; unknown fields get one entry each,
 * saying so, or, for a top-level field in `unsupported`, that berth does not support it yet.
 */
export function issuesToErrors(issues: readonly z.core.$ZodIssue[], unsupported?: Readonly<Record<string, string | CoolifyField>>): ValidationErrors {
  // No prototype: a field named like an Object.prototype member ("constructor") is a plain key.
  const errors: ValidationErrors = Object.create(null) as ValidationErrors;
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  for (const issue of issues) {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const known = !base && unsupported && Object.hasOwn(unsupported, key) ? unsupported[key] : undefined;
        const hint = typeof known === 'object' ? known.hint : known;
        add(base ? `${base}.${key}` : key, hint === undefined ? 'This field is not allowed.' : unsupportedMessage(hint));
      }
    } else {
      add(base || 'body', issue.message);
    }
  }
  return errors;
}

/**
 * An operation's input, parsed at the door (the gate, and remote mode before it calls the
 * upstream): a Coolify field sent with a value that asks for what berth does anyway is taken off
 * (Operation.unsupported); any other Coolify field berth does not apply is refused by name.
 * Throws the contract's 422.
 */
export function parseInput(op: Pick<Operation, 'input' | 'unsupported'>, raw: unknown): Record<string, unknown> {
  let input = raw ?? {};
  const table = op.unsupported;
  if (table && typeof input === 'object' && !Array.isArray(input)) {
    const passes = ([key, value]: [string, unknown]) => {
      const known = Object.hasOwn(table, key) ? table[key] : undefined;
      return typeof known === 'object' && known.accepts.includes(value as never);
    };
    const entries = Object.entries(input);
    if (entries.some(passes)) input = Object.fromEntries(entries.filter((e) => !passes(e)));
  }
  const parsed = op.input.safeParse(input);
  if (!parsed.success) throw validationError(issuesToErrors(parsed.error.issues, table));
  return parsed.data as Record<string, unknown>;
}
