/**
 * The form that posts a message to a room. One idempotency key per draft: sending the same text again after an
 * error (e.g. the answer was lost) reuses it, so the server applies the post once; the text stays on error and is
 * cleared on success.
 */
import { useRef, useState } from 'preact/hooks';
import { sdk } from '../../api.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import type { Message } from './use-room-log.js';
import { Busy } from '../../ui/busy.js';

export const MAX_BODY = 16_384;

export interface PostFormProps {
  roomId: string;
  onPosted: (m: Message) => void;
  /** The body of the post in flight (null when none): the stream may deliver it before the mutation answers. */
  onSending?: (body: string | null) => void;
}

export function PostForm({ roomId, onPosted, onSending }: PostFormProps) {
  const [body, setBody] = useState('');
  const draft = useRef<{ body: string; key: string } | null>(null);
  const post = useAction(async (text: string) => {
    if (draft.current?.body !== text) draft.current = { body: text, key: crypto.randomUUID() };
    onSending?.(text);
    const data = await sdk
      .postMessage({ roomId, input: { body: text } }, { idempotencyKey: draft.current.key })
      .finally(() => onSending?.(null));
    draft.current = null;
    setBody('');
    onPosted(data.postMessage.message);
  });
  const empty = body.trim() === '';
  return (
    <form
      class="stack rooms-post"
      onSubmit={(e) => {
        e.preventDefault();
        if (!empty && !post.busy) void post.run(body);
      }}
    >
      <label for="room-message">Message</label>
      <textarea
        id="room-message"
        value={body}
        maxLength={MAX_BODY}
        aria-describedby="room-message-hint"
        onInput={(e) => setBody(e.currentTarget.value)}
      />
      <p id="room-message-hint" class="hint">
        Everyone in the tenant can read it. Messages cannot be edited or deleted later.
      </p>
      <ProblemNotice error={post.error} title="The message was not posted" />
      <div class="actions row">
        <button type="submit" class="primary" disabled={empty || post.busy}>
          Post message
        </button>
        <Busy when={post.busy}>Posting…</Busy>
      </div>
    </form>
  );
}
