/** The landing page: who you are, in which tenant, and whether an emergency stop is engaged. */
import { useEffect, useState } from 'preact/hooks';
import type { EmergencyStopData } from '@agentgraph/sdk';
import { sdk } from '../api.js';
import { ProblemNotice } from '../ui/problem.js';
import { useViewer } from '../ui/viewer.js';

export function OverviewPage() {
  const viewer = useViewer();
  const [stop, setStop] = useState<EmergencyStopData['emergencyStop'] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    sdk.emergencyStop().then((r) => setStop(r.emergencyStop), setError);
  }, []);
  return (
    <>
      <h1 tabIndex={-1}>Overview</h1>
      <dl class="facts">
        <dt>Signed in as</dt>
        <dd>
          {viewer.user.displayName} ({viewer.user.email})
        </dd>
        <dt>Tenant</dt>
        <dd>{viewer.tenant.name}</dd>
        <dt>Your role</dt>
        <dd>{viewer.role}</dd>
        <dt>Emergency stop</dt>
        <dd>{stop ? stop.engaged ? <strong class="danger">ENGAGED</strong> : 'not engaged' : '…'}</dd>
      </dl>
      <ProblemNotice error={error} title="Could not read the emergency stop" />
    </>
  );
}
