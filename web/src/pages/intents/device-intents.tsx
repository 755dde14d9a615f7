/**
 * A device's intents (`Query.deviceIntents`), in the device's sequence order, a page at a time (the next page
 * continues after the last sequence shown), each linking to its live timeline. The device is chosen in a select and
 * kept in the address (`/intents?device=<id>`).
 */
import type { DeviceIntentsData, DevicesNode } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { navigate } from '../../router.js';
import { PageControls } from '../../ui/paged-list.js';
import { usePages } from '../../ui/use-pages.js';
import { When } from '../../ui/when.js';
import type { AllDevices } from './use-devices.js';

type IntentRow = DeviceIntentsData['deviceIntents']['edges'][number]['node'];

const PAGE_SIZE = 20;

function IntentTable({ device }: { device: DevicesNode }) {
  const pages = usePages<IntentRow>(
    async (after) => {
      const r = await sdk.deviceIntents({
        deviceId: device.id,
        afterSeq: after ? Number(after) : 0,
        first: PAGE_SIZE,
      });
      const c = r.deviceIntents;
      const nodes = c.edges.map((e) => e.node);
      const last = nodes.at(-1);
      return {
        nodes,
        pageInfo: { hasNextPage: c.pageInfo.hasNextPage, endCursor: last ? String(last.seq) : after },
      };
    },
    [device.id],
  );
  return (
    <>
      {pages.items.length > 0 ? (
        <table>
          <caption class="muted">Intents of “{device.name}”, in the order the device receives them.</caption>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Action</th>
              <th scope="col">State</th>
              <th scope="col">Requested by</th>
              <th scope="col">Created</th>
              <th scope="col">Expires</th>
            </tr>
          </thead>
          <tbody>
            {pages.items.map((i) => (
              <tr key={i.id}>
                <td>{i.seq}</td>
                <th scope="row">
                  <a href={`/intents?intent=${encodeURIComponent(i.id)}`}>
                    {i.action}
                    <span class="muted"> (#{i.seq})</span>
                  </a>
                </th>
                <td>
                  <span class="badge">{i.state}</span>
                </td>
                <td>{i.requester.displayName}</td>
                <td>
                  <When at={i.createdAt} />
                </td>
                <td>
                  <When at={i.expiresAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <PageControls pages={pages} noun="intents" />
    </>
  );
}

export function DeviceIntents({ all, deviceId }: { all: AllDevices; deviceId: string | null }) {
  const devices = all.devices;
  const selected =
    devices.find((d) => d.id === deviceId) ?? devices.find((d) => d.status === 'ENROLLED') ?? devices[0];
  return (
    <section aria-labelledby="device-intents-heading">
      <h2 id="device-intents-heading">Intents of a device</h2>
      {devices.length === 0 ? (
        all.loading ? null : (
          <p class="muted">No devices yet, so no intents.</p>
        )
      ) : (
        <>
          <label for="device-intents-device">Show the intents of</label>
          <select
            id="device-intents-device"
            value={selected?.id}
            onChange={(e) => navigate(`/intents?device=${encodeURIComponent(e.currentTarget.value)}`, true)}
          >
            {devices.map((d) => (
              <option key={d.id} value={d.id}>
                {d.name} ({d.status.toLowerCase()})
              </option>
            ))}
          </select>
          {selected ? <IntentTable key={selected.id} device={selected} /> : null}
        </>
      )}
    </section>
  );
}
