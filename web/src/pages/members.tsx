/**
 * Members of the tenant, a page at a time (name, e-mail, role, member since): add an existing user by e-mail with
 * a role, change a member's role, remove a member (with a confirmation step). The role rules are the server's
 * (ADMIN or higher; OWNER for anything about owners; a tenant keeps one OWNER): a refusal shows its code.
 */
import { useState } from 'preact/hooks';
import { RoleValues, type MembersNode, type Role } from '@agentgraph/sdk';
import { sdk } from '../api.js';
import { PageControls } from '../ui/paged-list.js';
import { ProblemNotice } from '../ui/problem.js';
import { useAction } from '../ui/use-action.js';
import { usePages } from '../ui/use-pages.js';
import { useViewer } from '../ui/viewer.js';
import { When } from '../ui/when.js';
import { Busy } from '../ui/busy.js';

const ROLE_TEXT: Record<Role, string> = {
  OWNER: 'Owner — everything, including owners and signing keys',
  ADMIN: 'Admin — members, reviews, emergency stop',
  OPERATOR: 'Operator — devices and intents',
  PUBLISHER: 'Publisher — plugins and package uploads',
  VIEWER: 'Viewer — reads only',
};

function RoleSelect({
  id,
  value,
  onChange,
  describedBy,
}: {
  id: string;
  value: Role;
  onChange: (r: Role) => void;
  describedBy?: string;
}) {
  return (
    <select
      id={id}
      value={value}
      aria-describedby={describedBy}
      onChange={(e) => onChange(e.currentTarget.value as Role)}
    >
      {RoleValues.map((r) => (
        <option key={r} value={r}>
          {ROLE_TEXT[r]}
        </option>
      ))}
    </select>
  );
}

function AddMemberForm({ onAdded }: { onAdded: (m: MembersNode) => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('VIEWER');
  const add = useAction(async () => {
    const r = await sdk.addMember({ input: { email: email.trim(), role } });
    setEmail('');
    onAdded(r.addMember.membership);
  });
  return (
    <section aria-labelledby="add-member-heading">
      <h2 id="add-member-heading">Add a member</h2>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          if (email.trim()) void add.run();
        }}
      >
        <label for="member-email">
          E-mail address{' '}
          <span class="hint" id="member-email-hint">
            (of an existing user: users are created with the admin CLI or by signing up)
          </span>
        </label>
        <input
          id="member-email"
          type="email"
          required
          autocomplete="off"
          value={email}
          aria-describedby="member-email-hint"
          onInput={(e) => setEmail(e.currentTarget.value)}
        />
        <label for="member-role">Role</label>
        <RoleSelect id="member-role" value={role} onChange={setRole} />
        <div class="actions row">
          <button type="submit" class="primary" disabled={add.busy}>
            Add member
          </button>
          <Busy when={add.busy}>Adding…</Busy>
        </div>
        <ProblemNotice error={add.error} title="Could not add the member" />
      </form>
    </section>
  );
}

function ChangeRole({
  member,
  onDone,
  onCancel,
}: {
  member: MembersNode;
  onDone: (m: MembersNode) => void;
  onCancel: () => void;
}) {
  const [role, setRole] = useState<Role>(member.role);
  const change = useAction(async () => {
    const r = await sdk.changeMemberRole({ userId: member.user.id, role });
    onDone(r.changeMemberRole.membership);
  });
  const id = `role-${member.user.id}`;
  return (
    <form
      class="stack member-action"
      onSubmit={(e) => {
        e.preventDefault();
        void change.run();
      }}
    >
      <label for={id}>New role for {member.user.displayName}</label>
      <RoleSelect id={id} value={role} onChange={setRole} />
      <div class="actions row">
        <button type="submit" class="primary" disabled={change.busy || role === member.role}>
          Save role
        </button>
        <button type="button" onClick={onCancel} disabled={change.busy}>
          Cancel
        </button>
        <Busy when={change.busy}>Saving…</Busy>
      </div>
      <ProblemNotice error={change.error} title={`Could not change the role of ${member.user.displayName}`} />
    </form>
  );
}

function RemoveConfirm({
  member,
  onDone,
  onCancel,
}: {
  member: MembersNode;
  onDone: () => void;
  onCancel: () => void;
}) {
  const remove = useAction(async () => {
    await sdk.removeMember({ userId: member.user.id });
    onDone();
  });
  const q = `remove-${member.user.id}-q`;
  return (
    <div class="member-action" role="group" aria-labelledby={q}>
      <p id={q}>
        <strong>Remove {member.user.displayName} from the tenant?</strong> Their sign-ins end, their access is
        refused within a second, and their devices are revoked and handed to you.
      </p>
      <div class="row">
        <button type="button" class="danger" disabled={remove.busy} onClick={() => void remove.run()}>
          Remove {member.user.displayName}
        </button>
        <button type="button" onClick={onCancel} disabled={remove.busy}>
          Keep {member.user.displayName}
        </button>
        <Busy when={remove.busy}>Removing…</Busy>
      </div>
      <ProblemNotice error={remove.error} title={`Could not remove ${member.user.displayName}`} />
    </div>
  );
}

export function MembersPage() {
  const viewer = useViewer();
  const pages = usePages<MembersNode>(async (after) => {
    const r = await sdk.members({ first: 20, ...(after ? { after } : {}) });
    return {
      nodes: r.tenant.members.edges.map((e) => e.node),
      pageInfo: r.tenant.members.pageInfo,
    };
  }, []);
  const [pending, setPending] = useState<{ kind: 'role' | 'remove'; id: string } | null>(null);
  const [changed, setChanged] = useState<Record<string, MembersNode>>({});
  const [removed, setRemoved] = useState<ReadonlySet<string>>(new Set());
  const [added, setAdded] = useState<MembersNode[]>([]);
  const [notice, setNotice] = useState('');
  const rows = [...pages.items, ...added.filter((a) => !pages.items.some((p) => p.user.id === a.user.id))]
    .filter((m) => !removed.has(m.user.id))
    .map((m) => changed[m.user.id] ?? m);

  return (
    <>
      <h1 tabIndex={-1}>Members</h1>
      <p class="muted">
        Who belongs to {viewer.tenant.name} and with which role. Admins manage members; only owners add,
        change or remove owners, and a tenant always keeps one owner.
      </p>
      <div role="status" class="ok">
        {notice}
      </div>
      <section aria-labelledby="members-heading">
        <h2 id="members-heading">Members of {viewer.tenant.name}</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">E-mail</th>
              <th scope="col">Role</th>
              <th scope="col">Member since</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((m) => {
              const open = pending?.id === m.user.id ? pending.kind : null;
              const name = m.user.displayName;
              return [
                <tr key={m.user.id}>
                  <th scope="row">
                    {name}
                    {m.user.id === viewer.user.id ? <span class="muted"> (you)</span> : null}
                  </th>
                  <td>{m.user.email}</td>
                  <td>
                    <span class="badge">{m.role}</span>
                  </td>
                  <td>
                    <When at={m.createdAt} />
                  </td>
                  <td>
                    <div class="row">
                      <button
                        type="button"
                        aria-label={`Change role of ${name}`}
                        aria-expanded={open === 'role'}
                        onClick={() => setPending(open === 'role' ? null : { kind: 'role', id: m.user.id })}
                      >
                        Change role
                      </button>
                      <button
                        type="button"
                        class="danger"
                        aria-label={`Remove ${name}`}
                        aria-expanded={open === 'remove'}
                        onClick={() =>
                          setPending(open === 'remove' ? null : { kind: 'remove', id: m.user.id })
                        }
                      >
                        Remove
                      </button>
                    </div>
                  </td>
                </tr>,
                open ? (
                  <tr key={`${m.user.id}-action`}>
                    <td colSpan={5}>
                      {open === 'role' ? (
                        <ChangeRole
                          member={m}
                          onCancel={() => setPending(null)}
                          onDone={(after) => {
                            setChanged((c) => ({ ...c, [after.user.id]: after }));
                            setPending(null);
                            setNotice(`${name} is now ${after.role}.`);
                          }}
                        />
                      ) : (
                        <RemoveConfirm
                          member={m}
                          onCancel={() => setPending(null)}
                          onDone={() => {
                            setRemoved((s) => new Set([...s, m.user.id]));
                            setPending(null);
                            setNotice(`Removed ${name} from ${viewer.tenant.name}.`);
                          }}
                        />
                      )}
                    </td>
                  </tr>
                ) : null,
              ];
            })}
          </tbody>
        </table>
        <PageControls pages={{ ...pages, items: rows }} noun="members" />
      </section>
      <AddMemberForm
        onAdded={(m) => {
          setAdded((a) => [...a, m]);
          setRemoved((s) => new Set([...s].filter((id) => id !== m.user.id)));
          setNotice(`Added ${m.user.displayName} as ${m.role}.`);
        }}
      />
    </>
  );
}
