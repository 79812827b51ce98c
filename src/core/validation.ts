import type { z } from 'zod';
import type { ValidationErrors } from '../errors.js';

/** What a known Coolify field that berth cannot apply yet is refused with (Operation.unsupported). */
export const unsupportedMessage = (hint: string) => `berth does not support this Coolify field yet: ${hint}.`;

/**
 * zod issues → the contract's `{ field: [message, ...] }`; unknown fields get one entry each,
 * saying so, or, for a top-level field in `unsupported`, that berth does not support it yet.
 */
export function issuesToErrors(issues: readonly z.core.$ZodIssue[], unsupported?: Readonly<Record<string, string>>): ValidationErrors {
  // No prototype: a field named like an Object.prototype member ("constructor") is a plain key.
  const errors: ValidationErrors = Object.create(null) as ValidationErrors;
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  for (const issue of issues) {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const hint = !base && unsupported && Object.hasOwn(unsupported, key) ? unsupported[key] : undefined;
        add(base ? `${base}.${key}` : key, hint === undefined ? 'This field is not allowed.' : unsupportedMessage(hint));
      }
    } else {
      add(base || 'body', issue.message);
    }
  }
  return errors;
}
