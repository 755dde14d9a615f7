/**
 * Devices: approve a device's enrolment by the code it shows, and the tenant's devices (rename, revoke; whether
 * remote actions are on, as the device's local user set it). Parts live in ./devices/.
 */
import type { DevicesNode } from '@agentgraph/sdk';
import { sdk } from '../api.js';
import { usePages } from '../ui/use-pages.js';
import { ApproveByCode } from './devices/approve-code.js';
import { DeviceList } from './devices/device-list.js';

const PAGE_SIZE = 20;

export function DevicesPage() {
  const pages = usePages<DevicesNode>(async (after) => {
    const r = await sdk.devices({ first: PAGE_SIZE, ...(after ? { after } : {}) });
    const c = r.tenant.devices;
    return { nodes: c.edges.map((e) => e.node), pageInfo: c.pageInfo };
  }, []);
  return (
    <>
      <h1 tabIndex={-1}>Devices</h1>
      <ApproveByCode onEnrolled={pages.reload} />
      <DeviceList pages={pages} />
    </>
  );
}
