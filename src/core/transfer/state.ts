import { BerthError } from '../../errors.js';
import type { TransferState } from './import.js';

/** A server's transfer record, or null when it never moved. */
export const transferOf = (s: { transfer: string | null }): TransferState | null => (s.transfer ? (JSON.parse(s.transfer) as TransferState) : null);

/**
 * Refuses to manage a server this instance does not hold: one imported without a claim, or one
 * handed to another instance (transfer/complete). Claiming it (claim_server) takes it (back).
 */
export function assertHeldHere(s: { transfer: string | null; uuid: string }): void {
  const t = transferOf(s);
  if (t?.status === 'imported')
    throw new BerthError('conflict', { message: `Server ${s.uuid} was imported but not claimed: claim it (POST /servers/${s.uuid}/claim) before this instance manages it.` });
  if (t?.status === 'transferred') {
    throw new BerthError('conflict', {
      message: `Server ${s.uuid} was transferred${t.target_instance_url ? ` to ${t.target_instance_url}` : ' to another instance'}: this instance no longer manages it (claim it here again to take it back).`,
    });
  }
}
