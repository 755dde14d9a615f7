/**
 * The sequence gate: an event is new only if its sequence is above the last one handled. Everything else (the
 * overlap of a resumed stream, a poll page re-read, an event that arrives out of order) is a duplicate and dropped,
 * so what the subscription yields is strictly increasing and each sequence appears once.
 */
import { InvalidResponseError } from '../errors.js';

export class SequenceGate {
  constructor(private lastSeq?: number) {
    if (lastSeq !== undefined) SequenceGate.check(lastSeq, 'resume.after');
  }

  /** The last sequence handled (undefined before the first event when no start was given). */
  get last(): number | undefined {
    return this.lastSeq;
  }

  /** True (and the sequence becomes the last handled) when `seq` is new. */
  admit(seq: number): boolean {
    SequenceGate.check(seq, 'resume.seqOf(event)');
    if (this.lastSeq !== undefined && seq <= this.lastSeq) return false;
    this.lastSeq = seq;
    return true;
  }

  /** Sets the position without an event (the first poll of a subscription that started without one). */
  advanceTo(seq: number): void {
    SequenceGate.check(seq, 'resume.seqOf(event)');
    if (this.lastSeq === undefined || seq > this.lastSeq) this.lastSeq = seq;
  }

  private static check(seq: number, what: string): void {
    if (!Number.isSafeInteger(seq) || seq < 0) {
      throw new InvalidResponseError({
        code: 'INVALID_RESPONSE',
        retryable: false,
        message:
          `${what} gave ${String(seq)}, not a non-negative integer. Check that the subscription selects the ` +
          `sequence field and that seqOf reads it.`,
      });
    }
  }
}
