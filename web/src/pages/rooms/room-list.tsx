/** The tenant's rooms, a page at a time, and the form that creates one (writers only). */
import { useState } from 'preact/hooks';
import type { RoomsNode } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { navigate } from '../../router.js';
import { PageControls } from '../../ui/paged-list.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import { usePages } from '../../ui/use-pages.js';
import { roleCovers, useViewer } from '../../ui/viewer.js';
import { When } from '../../ui/when.js';
import { Busy } from '../../ui/busy.js';

export function RoomList() {
  const viewer = useViewer();
  const canCreate = roleCovers(viewer.role, 'OPERATOR');
  const pages = usePages<RoomsNode>(async (after) => {
    const data = await sdk.rooms({ first: 25, after: after ?? null });
    return { nodes: data.rooms.edges.map((e) => e.node), pageInfo: data.rooms.pageInfo };
  }, []);
  const [name, setName] = useState('');
  const create = useAction(async (roomName: string) => {
    const data = await sdk.createRoom({ input: { name: roomName } });
    setName('');
    navigate(`/rooms?room=${encodeURIComponent(data.createRoom.room.id)}`);
  });

  return (
    <>
      <h1 tabIndex={-1}>Rooms</h1>
      <p class="muted">
        Rooms are shared message logs of your tenant: people and agents post, everyone reads.
      </p>
      {canCreate ? (
        <section aria-labelledby="rooms-create-heading" class="panel">
          <h2 id="rooms-create-heading">Create a room</h2>
          <form
            class="stack"
            onSubmit={(e) => {
              e.preventDefault();
              if (name.trim() && !create.busy) void create.run(name.trim());
            }}
          >
            <label for="room-name">Room name</label>
            <input
              id="room-name"
              value={name}
              maxLength={200}
              required
              aria-describedby="room-name-hint"
              onInput={(e) => setName(e.currentTarget.value)}
            />
            <p id="room-name-hint" class="hint">
              A short name everyone in the tenant will see, e.g. “deployments”.
            </p>
            <ProblemNotice error={create.error} title="The room was not created" />
            <div class="actions row">
              <button type="submit" class="primary" disabled={!name.trim() || create.busy}>
                Create room
              </button>
              <Busy when={create.busy}>Creating…</Busy>
            </div>
          </form>
        </section>
      ) : null}
      <section aria-labelledby="rooms-list-heading">
        <h2 id="rooms-list-heading">All rooms</h2>
        {pages.items.length > 0 ? (
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {pages.items.map((r) => (
                <tr key={r.id}>
                  <td>
                    <a href={`/rooms?room=${encodeURIComponent(r.id)}`}>{r.name}</a>
                  </td>
                  <td>
                    <When at={r.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        <PageControls pages={pages} noun="rooms" />
      </section>
    </>
  );
}
