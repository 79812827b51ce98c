import { z } from 'zod';
import { validationError } from '../errors.js';
import { labelProblem } from './run-options.js';

/**
 * Coolify's `custom_labels`: container labels, one `key=value` a line, sent base64-encoded (as
 * Coolify's API requires); plain text is taken too. berth keeps the text and shows it base64 as
 * Coolify does. berth.* keys are refused: they are how berth finds and owns its containers.
 */
export const customLabelsInput = z.string().max(65_536).nullable().meta({ 'berth.brief': true }).optional();

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The label text from either form; 422 when a line is not a usable label. */
export function decodeCustomLabels(raw: string | null): string | null {
  if (raw === null || !raw.trim()) return null;
  const compact = raw.replace(/\s/g, '');
  let text = raw;
  if (BASE64.test(compact) && compact.length % 4 === 0) {
    const decoded = Buffer.from(compact, 'base64').toString('latin1');
    if (/^[\x09\x0a\x0d\x20-\x7e]*$/.test(decoded)) text = decoded;
  }
  labelsOf(text);
  return text.replace(/\r\n?/g, '\n').trim();
}

/** The labels of stored text (checked again: a record older than a rule still cannot set berth.*). */
export function labelsOf(text: string | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const problems: string[] = [];
  for (const line of (text ?? '').split(/\r?\n/)) {
    if (!line.trim()) continue;
    const eq = line.indexOf('=');
    const key = (eq === -1 ? line : line.slice(0, eq)).trim();
    const value = eq === -1 ? '' : line.slice(eq + 1).trim();
    const problem = eq === -1 ? `"${key}" has no "=": write key=value, one a line` : labelProblem(key, value);
    if (problem) problems.push(`${problem}.`);
    else out[key] = value;
  }
  if (problems.length) throw validationError({ custom_labels: problems });
  return out;
}

/** As Coolify shows it: base64 of the text. */
export const encodeCustomLabels = (text: string | null | undefined): string | null => (text ? Buffer.from(text, 'latin1').toString('base64') : null);
