import type { z } from 'zod';
import type { ValidationErrors } from './errors.js';

/** zod issues → the contract's `{ field: [message, ...] }`; unknown fields get one entry each. */
export function issuesToErrors(issues: readonly z.core.$ZodIssue[]): ValidationErrors {
  // No prototype: a field named like an Object.prototype member ("constructor") is a plain key.
  const errors: ValidationErrors = Object.create(null) as ValidationErrors;
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  for (const issue of issues) {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add(base ? `${base}.${key}` : key, 'This field is not allowed.');
    } else {
      add(base || 'body', issue.message);
    }
  }
  return errors;
}
