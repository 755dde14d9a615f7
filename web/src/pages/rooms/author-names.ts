/**
 * Display names of message authors. Streamed messages carry the author's id only (use-room-log.ts says why): names
 * come from the log's pages, the viewer, and — when an id is still unknown — the tenant's member list, read once.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { sdk } from '../../api.js';
import type { Viewer } from '../../ui/viewer.js';
import type { Message } from './use-room-log.js';

export function useAuthorNames(messages: readonly Message[], viewer: Viewer): (authorId: string) => string {
  const [members, setMembers] = useState<ReadonlyMap<string, string>>(new Map());
  const asked = useRef(false);
  const known = new Map<string, string>([[viewer.user.id, viewer.user.displayName]]);
  for (const m of messages) if (m.author.displayName) known.set(m.author.id, m.author.displayName);
  const unknown = messages.some((m) => !known.has(m.author.id) && !members.has(m.author.id));

  useEffect(() => {
    if (!unknown || asked.current) return;
    asked.current = true;
    sdk.members({ first: 100 }).then(
      (r) =>
        setMembers(new Map(r.tenant.members.edges.map((e) => [e.node.user.id, e.node.user.displayName]))),
      () => undefined, // the role may not list members: such authors stay "a member"
    );
  }, [unknown]);

  return (id) => known.get(id) ?? members.get(id) ?? 'A member';
}
