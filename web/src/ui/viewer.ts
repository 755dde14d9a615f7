/** Who is signed in (the `viewer` query), shared with every page; `can(role)` for hiding what the role cannot do. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ViewerData } from '@agentgraph/sdk';

export type Viewer = ViewerData['viewer'];
export const ViewerContext = createContext<Viewer | null>(null);

const RANK: Record<string, number> = { VIEWER: 0, OPERATOR: 1, PUBLISHER: 1, ADMIN: 2, OWNER: 3 };

export function useViewer(): Viewer {
  const v = useContext(ViewerContext);
  if (!v) throw new Error('useViewer outside the signed-in app');
  return v;
}

/** Whether the viewer's role covers `role` (OWNER > ADMIN > OPERATOR, PUBLISHER > VIEWER). */
export function roleCovers(have: string, need: string): boolean {
  if (have === need) return true;
  if (need === 'OPERATOR' || need === 'PUBLISHER') return (RANK[have] ?? -1) >= 2;
  return (RANK[have] ?? -1) >= (RANK[need] ?? 99);
}
