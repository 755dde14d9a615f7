/**
 * One memory record: view and edit (content, kind, tags, metadata JSON, expiry), save with optimistic concurrency
 * (`putMemory` with expectedVersion = the version loaded; 0 for a new record under its client-made UUID), delete.
 * On VERSION_CONFLICT the draft stays; "Load their version" shows the newer one and rebases the draft on it, so
 * the next save overwrites knowingly. Refusals (the SDK privacy gate, the server's secret filter) mark the field.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { JSX } from 'preact';
import { sdk } from '../../api.js';
import { navigate } from '../../router.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import { roleCovers, useViewer } from '../../ui/viewer.js';
import { When } from '../../ui/when.js';
import { currentVersionOf, fieldProblemsOf, type FieldProblems, type RecordField } from './field-problems.js';
import {
  draftOf,
  inputOf,
  NEW_DRAFT,
  redactionsOf,
  type RecordDraft,
  type StoredRecord,
} from './record-form.js';
import { recordHref } from './records.js';
import { Busy } from '../../ui/busy.js';

interface FieldProps {
  name: RecordField;
  label: string;
  hint: string;
  problems: FieldProblems;
  children: (aria: { id: string; 'aria-describedby': string; 'aria-invalid'?: 'true' }) => JSX.Element;
}

/** A labelled field with its hint and, when refused, its problem (tied with aria-describedby, aria-invalid). */
function Field({ name, label, hint, problems, children }: FieldProps) {
  const id = `record-${name}`;
  const problem = problems[name];
  return (
    <div class="memory-field">
      <label for={id}>{label}</label>
      {children({
        id,
        'aria-describedby': problem ? `${id}-hint ${id}-problem` : `${id}-hint`,
        ...(problem ? { 'aria-invalid': 'true' as const } : {}),
      })}
      <p id={`${id}-hint`} class="hint">
        {hint}
      </p>
      {problem ? (
        <p id={`${id}-problem`} class="danger memory-field-problem">
          <strong>Refused:</strong> {problem}
        </p>
      ) : null}
    </div>
  );
}

async function fetchRecord(id: string): Promise<{ record: StoredRecord; embedding: number[] | null } | null> {
  const data = await sdk.memoryRecord({ id });
  const r = data.memoryRecord;
  return r ? { record: r, embedding: r.embedding } : null;
}

export function RecordEditor({
  workspaceId,
  recordId,
  isNew,
}: {
  workspaceId: string;
  recordId: string;
  isNew: boolean;
}) {
  const viewer = useViewer();
  const canWrite = roleCovers(viewer.role, 'OPERATOR');
  const [base, setBase] = useState<StoredRecord | null>(null);
  const [embedding, setEmbedding] = useState<number[] | null>(null);
  const [draft, setDraft] = useState<RecordDraft>(NEW_DRAFT);
  const [loading, setLoading] = useState(!isNew);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [missing, setMissing] = useState(false);
  const [localProblems, setLocalProblems] = useState<FieldProblems>({});
  const [saved, setSaved] = useState('');
  /** The newer version loaded after a conflict, shown beside the draft. */
  const [theirs, setTheirs] = useState<StoredRecord | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const conflictRef = useRef<HTMLElement>(null);

  useEffect(() => {
    if (isNew) return;
    fetchRecord(recordId).then(
      (got) => {
        if (!got) setMissing(true);
        else {
          setBase(got.record);
          setEmbedding(got.embedding);
          setDraft(draftOf(got.record));
        }
        setLoading(false);
      },
      (err) => {
        setLoadError(err);
        setLoading(false);
      },
    );
  }, [recordId]);

  const save = useAction(async () => {
    setSaved('');
    const built = inputOf(draft, workspaceId, base, embedding);
    if ('problems' in built) {
      setLocalProblems(built.problems);
      return;
    }
    setLocalProblems({});
    const data = await sdk.putMemory({
      id: recordId,
      input: built.input,
      expectedVersion: base?.version ?? 0,
    });
    const record = data.putMemory.record;
    const redacted = redactionsOf(draft, record);
    setBase(record);
    setTheirs(null);
    setDraft(draftOf(record));
    setSaved(
      `Saved: version ${record.version}.` +
        (redacted.length
          ? ` The workspace redacted what looked like secrets in ${redacted.join('; ')}: check the stored text.`
          : ''),
    );
    if (isNew) navigate(recordHref(workspaceId, recordId), true);
  });

  const conflictVersion = currentVersionOf(save.error);
  useEffect(() => {
    if (conflictVersion !== undefined) conflictRef.current?.focus();
  }, [conflictVersion]);

  const reloadTheirs = useAction(async () => {
    const got = await fetchRecord(recordId);
    if (!got)
      throw new Error('The record was deleted by someone else. Save to create it again from your draft.');
    setTheirs(got.record);
    setBase(got.record);
    setEmbedding(got.embedding);
    save.clear();
  });

  const remove = useAction(async () => {
    await sdk.deleteMemory({ id: recordId });
    navigate(`/memory?workspace=${encodeURIComponent(workspaceId)}`);
  });

  const problems: FieldProblems = { ...fieldProblemsOf(save.error), ...localProblems };
  const set = (k: keyof RecordDraft) => (e: { currentTarget: { value: string } }) => {
    setDraft({ ...draft, [k]: e.currentTarget.value });
    setSaved('');
  };
  const back = `/memory?workspace=${encodeURIComponent(workspaceId)}`;
  const exists = base !== null;

  return (
    <>
      <p>
        <a href={back}>← Back to the workspace</a>
      </p>
      <h1 tabIndex={-1}>{isNew && !exists ? 'New memory record' : 'Memory record'}</h1>
      {loading ? (
        <p role="status" class="muted">
          <span class="spinner" aria-hidden="true" /> Loading the record…
        </p>
      ) : null}
      <ProblemNotice error={loadError} title="Could not load the record" />
      {missing ? (
        <p>
          This record does not exist (it may have been deleted or have expired).{' '}
          <a href={back}>Back to the list</a>.
        </p>
      ) : null}
      {!loading && !loadError && !missing ? (
        <>
          <dl class="facts">
            <dt>Id</dt>
            <dd>
              <code>{recordId}</code>
            </dd>
            <dt>Version</dt>
            <dd>{base ? base.version : 'not saved yet'}</dd>
            {base ? (
              <>
                <dt>Last updated</dt>
                <dd>
                  <When at={base.updatedAt} />
                  {base.author.displayName ? ` by ${base.author.displayName}` : ''}
                </dd>
              </>
            ) : null}
          </dl>
          <p role="status" class="ok">
            {saved}
          </p>
          {conflictVersion !== undefined ? (
            <section
              class="problem memory-conflict"
              aria-labelledby="conflict-heading"
              tabIndex={-1}
              ref={conflictRef}
            >
              <h2 id="conflict-heading">Someone else changed this record</h2>
              <p>
                It is now at <strong>version {conflictVersion}</strong>; you edited version{' '}
                {base?.version ?? 0}. Nothing of yours was saved, and your draft below is kept. Load their
                version to compare, re-apply your changes if needed, then save again.
              </p>
              <button
                type="button"
                class="primary"
                disabled={reloadTheirs.busy}
                onClick={() => void reloadTheirs.run()}
              >
                Load their version {conflictVersion}
              </button>
            </section>
          ) : null}
          <ProblemNotice error={reloadTheirs.error} title="Could not load their version" />
          {theirs ? (
            <section class="panel memory-theirs" aria-labelledby="theirs-heading">
              <h2 id="theirs-heading">Their version {theirs.version}</h2>
              <p class="muted">
                Saved <When at={theirs.updatedAt} />
                {theirs.author.displayName ? ` by ${theirs.author.displayName}` : ''}. Saving now replaces it
                with your draft (as version {theirs.version + 1}).
              </p>
              <dl class="facts">
                <dt>Content</dt>
                <dd class="memory-pre">{theirs.content}</dd>
                <dt>Kind</dt>
                <dd>
                  <code>{theirs.kind}</code>
                </dd>
                <dt>Tags</dt>
                <dd>{theirs.tags.join(', ') || 'none'}</dd>
                <dt>Metadata</dt>
                <dd class="memory-pre">{theirs.metadata}</dd>
                <dt>Expires</dt>
                <dd>{theirs.expiresAt ? <When at={theirs.expiresAt} /> : 'never'}</dd>
              </dl>
              <button
                type="button"
                onClick={() => {
                  setDraft(draftOf(theirs));
                  setTheirs(null);
                }}
              >
                Discard my draft and use their version
              </button>
            </section>
          ) : null}
          <form
            class="stack memory-record-form"
            aria-label="Record"
            onSubmit={(e) => {
              e.preventDefault();
              if (canWrite && !save.busy) void save.run();
            }}
          >
            <fieldset disabled={!canWrite} class="memory-fieldset">
              <legend>
                {canWrite ? 'Edit the record' : 'The record (your role can read, not change it)'}
              </legend>
              <Field
                name="content"
                label="Content"
                hint="The text that is stored and searched."
                problems={problems}
              >
                {(a) => (
                  <textarea {...a} class="memory-content" value={draft.content} onInput={set('content')} />
                )}
              </Field>
              <Field
                name="kind"
                label="Kind"
                hint="1 to 64 characters of a-z, 0-9, “_”, “.” or “-”, e.g. note, fact, doc."
                problems={problems}
              >
                {(a) => <input {...a} value={draft.kind} maxLength={64} required onInput={set('kind')} />}
              </Field>
              <Field
                name="tags"
                label="Tags"
                hint="Separated by commas; at most 32, each up to 64 characters."
                problems={problems}
              >
                {(a) => <input {...a} value={draft.tags} onInput={set('tags')} />}
              </Field>
              <Field
                name="metadata"
                label="Metadata (JSON)"
                hint='A JSON object, e.g. {"source": "chat"}; at most 16 KB, 8 levels deep, 256 keys.'
                problems={problems}
              >
                {(a) => (
                  <textarea {...a} class="memory-json" value={draft.metadata} onInput={set('metadata')} />
                )}
              </Field>
              <Field
                name="expiresAt"
                label="Expires at"
                hint="Your local time; leave empty for a record that does not expire. Must be in the future."
                problems={problems}
              >
                {(a) => (
                  <input {...a} type="datetime-local" value={draft.expiresAt} onInput={set('expiresAt')} />
                )}
              </Field>
            </fieldset>
            {conflictVersion === undefined ? (
              <ProblemNotice error={save.error} title="The record was not saved" />
            ) : (
              <ProblemNotice error={save.error} title="Not saved: version conflict" />
            )}
            {canWrite ? (
              <div class="actions row">
                <button type="submit" class="primary" disabled={save.busy}>
                  {exists ? 'Save changes' : 'Create record'}
                </button>
                <Busy when={save.busy}>Saving…</Busy>
              </div>
            ) : null}
          </form>
          {canWrite && exists ? (
            <section aria-labelledby="record-delete-heading">
              <h2 id="record-delete-heading">Delete</h2>
              {confirmDelete ? (
                <div class="panel memory-confirm">
                  <p>Delete this record and everything derived from it? This cannot be undone.</p>
                  <ProblemNotice error={remove.error} title="The record was not deleted" />
                  <div class="row">
                    <button
                      type="button"
                      class="danger"
                      disabled={remove.busy}
                      onClick={() => void remove.run()}
                    >
                      Yes, delete the record
                    </button>
                    <button type="button" disabled={remove.busy} onClick={() => setConfirmDelete(false)}>
                      Cancel
                    </button>
                  </div>
                </div>
              ) : (
                <button type="button" class="danger" onClick={() => setConfirmDelete(true)}>
                  Delete record
                </button>
              )}
            </section>
          ) : null}
        </>
      ) : null}
    </>
  );
}
