/**
 * Pagination. Every Relay connection has a `paginate…` method: an AsyncIterable of nodes that asks for the next page
 * only when the loop has taken every node of the current one. `first` is the page size; aborting the signal stops
 * the loop with AbortError and cancels the request in flight. The plain method returns one page, for your own paging.
 */
import { AbortError, type AgentGraph } from '../src/index.js';

export async function listRooms(sdk: AgentGraph, pageSize: number, stopAfter?: number) {
  const names: string[] = [];
  const controller = new AbortController();
  try {
    for await (const room of sdk.paginateRooms({ first: pageSize }, { signal: controller.signal })) {
      names.push(room.name);
      if (names.length === stopAfter) controller.abort(); // the loop ends with AbortError
    }
  } catch (err) {
    if (!(err instanceof AbortError)) throw err;
  }
  // One page by hand: the connection's edges and pageInfo (pass endCursor as `after` for the next one).
  const page = await sdk.rooms({ first: pageSize });
  return {
    names,
    firstPage: page.rooms.edges.map((e) => e.node.name),
    hasNextPage: page.rooms.pageInfo.hasNextPage,
  };
}
