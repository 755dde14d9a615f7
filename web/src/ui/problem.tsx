/** An error shown to a person: its code, what happened, what to do, and the id to report. Announced (role=alert). */
import { problemOf } from '../api.js';

export function ProblemNotice({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const p = problemOf(error);
  return (
    <div class="problem" role="alert">
      <p class="problem-title">
        <strong>{title ?? 'That did not work'}</strong> <code class="code">{p.code}</code>
      </p>
      <p>{p.message}</p>
      <p class="advice">What to do: {p.advice}</p>
      {p.correlationId ? <p class="muted">Correlation id: {p.correlationId}</p> : null}
    </div>
  );
}
