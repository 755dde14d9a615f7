/** Progress while an action runs: a spinner and what is happening, announced politely (role=status). */
import type { ComponentChildren } from 'preact';

export function Busy({ when, children }: { when: boolean; children: ComponentChildren }) {
  if (!when) return null;
  return (
    <span role="status" class="muted">
      <span class="spinner" aria-hidden="true" /> {children}
    </span>
  );
}
