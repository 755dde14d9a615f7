/**
 * Intents: create one for an enrolled device, list a device's intents, and follow one intent's honest states live
 * (`/intents?intent=<id>`), cancelling it while it is QUEUED or DELIVERED. Parts live in ./intents/.
 */
import { useEffect } from 'preact/hooks';
import { useRoute } from '../router.js';
import { CreateIntentForm } from './intents/create-form.js';
import { DeviceIntents } from './intents/device-intents.js';
import { IntentDetail } from './intents/intent-detail.js';
import { useAllDevices } from './intents/use-devices.js';

function IntentsHome({ deviceId }: { deviceId: string | null }) {
  const all = useAllDevices();
  return (
    <>
      <h1 tabIndex={-1}>Intents</h1>
      <CreateIntentForm all={all} initialDeviceId={deviceId} />
      <DeviceIntents all={all} deviceId={deviceId} />
    </>
  );
}

export function IntentsPage() {
  const { query } = useRoute();
  const intentId = query.get('intent');
  // A sub-view change keeps the path, so the app does not move focus: do it here for screen readers.
  const view = intentId ? `intent:${intentId}` : 'home';
  useEffect(() => {
    document.querySelector<HTMLElement>('main h1')?.focus();
  }, [view]);
  return intentId ? (
    <IntentDetail key={intentId} id={intentId} />
  ) : (
    <IntentsHome deviceId={query.get('device')} />
  );
}
