/** Every device of the tenant (all pages), for choosing one; stops loading when the component goes away. */
import { useEffect, useState } from 'preact/hooks';
import type { DevicesNode } from '@agentgraph/sdk';
import { sdk } from '../../api.js';

export interface AllDevices {
  devices: readonly DevicesNode[];
  loading: boolean;
  error: unknown;
}

export function useAllDevices(): AllDevices {
  const [state, setState] = useState<AllDevices>({ devices: [], loading: true, error: null });
  useEffect(() => {
    const controller = new AbortController();
    void (async () => {
      const devices: DevicesNode[] = [];
      try {
        for await (const d of sdk.paginateDevices({ first: 50 }, { signal: controller.signal }))
          devices.push(d);
        setState({ devices, loading: false, error: null });
      } catch (error) {
        if (!controller.signal.aborted) setState({ devices, loading: false, error });
      }
    })();
    return () => controller.abort();
  }, []);
  return state;
}
