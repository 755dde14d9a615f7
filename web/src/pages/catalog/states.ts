/** Words for the catalog's states and channels (never colour alone: every badge carries its text). */
export const RELEASE_STATE_TEXT: Record<string, string> = {
  AWAITING_UPLOAD: 'Awaiting upload',
  QUARANTINED: 'Quarantined (analysis running)',
  ANALYSIS_FAILED: 'Analysis failed',
  IN_REVIEW: 'In review',
  APPROVED: 'Approved',
  REJECTED: 'Rejected',
  REVOKED: 'Revoked',
};

export const CHANNEL_TEXT: Record<string, string> = { ALPHA: 'alpha', BETA: 'beta', STABLE: 'stable' };

/** The channel promotion moves a release to, or null at the last one. */
export function nextChannel(channel: string | null | undefined): string | null {
  if (channel === 'ALPHA') return 'BETA';
  if (channel === 'BETA') return 'STABLE';
  return null;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(2)} MB`;
}
