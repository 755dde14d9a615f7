/** A date-time shown as readable local time, with the machine-readable value in <time dateTime>. */
export function When({ at, empty = '—' }: { at: string | null | undefined; empty?: string }) {
  if (!at) return <span class="muted">{empty}</span>;
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return <span>{at}</span>;
  return (
    <time dateTime={date.toISOString()} title={date.toISOString()}>
      {date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' })}
    </time>
  );
}
